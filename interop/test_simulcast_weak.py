"""Issue 22's weak viewer: Chromium (VP8 `sendEncodings` l/m/h) or `swiftrtc publish --simulcast`
(H.264 l/m/h) publishes three simulcast layers to the relay behind the impairment emulator;
`swiftrtc play` A on a clean path and B behind 400 kbit/s with a 25-packet FIFO (its downlink
only). The relay estimates each viewer's link (a send-side estimate from its transport-cc
feedback; aiortc's REMB) and picks the layer that fits: A keeps the 1280x720 layer, B is moved
to a smaller one and gets all of its frames; when B's limit lifts the relay's probes (padding
on B's RTX stream) find the room and B is back at 1280x720 within 10 s (aiortc, on its REMB:
48 s). B is `swiftrtc play`, Chromium over WHEP (the relay's /players/ page, its W3C
inbound-rtp read every second) or aiortc over WHEP (REMB from the abs-send-time the relay
stamps; the stand-in `play` of media_standin.py, its status line every second). Numbers in
network.json."""
from __future__ import annotations

import json
import re
import statistics
import sys
import time

import pytest

from interop.network_helpers import NET_STATS_JS, Checks, status_series
from interop.relay_helpers import close_page, open_player_page, page_log, poll
from interop.test_network import FAKE_CAMERA_FLAGS, FIRST_FRAME_JS, browser, finish, make_bed, player_summary  # noqa: F401
from interop.test_simulcast import LAYERS_SENT_JS, PUBLISH_SIMULCAST_JS

# Seconds B is behind 400 kbit/s once both viewers play: a different time in each row, so
# that the lift falls at a different point of the relay's probe schedule for B (every 2 s while
# B is below the layer it asked for) — B must be back on high within 10 s whenever it lifts.
LIMITED = {("swift", "chromium"): 20.0, ("chromium", "chromium"): 21.3, ("swift", "swift"): 22.6, ("aiortc", "swift"): 20.0}
LIFTED = 50.0    # seconds after that, B's path clean
NAME = "weak"


def rows_between(run, t0: float, t1: float) -> list[dict]:
    return [r for r in status_series(run.text(), run.t_start) if t0 <= r.get("t", 0) < t1]



class ChromiumB:
    """Chromium playing over WHEP (the /players/ page, the newest page so the one presenting):
    each second its inbound-rtp, as rows like play's status lines (t, fps, width)."""

    def __init__(self, browser, bed, logs):
        self.browser, self.bed = browser, bed
        self.page = open_player_page(browser, bed.relay, "live", NAME)
        logs.append(("viewer B page #log", lambda: page_log(self.page)))
        self.page.evaluate("document.getElementById('play').click(); true")
        self.page.wait_for(FIRST_FRAME_JS, timeout=20)
        self.samples: list[dict] = []

    def sample(self) -> None:
        s = self.page.evaluate(NET_STATS_JS, timeout=10) or {}
        if s.get("inbound"):
            self.samples.append(dict(s["inbound"], t=self.bed.net.now()))

    def rows(self, t0: float, t1: float) -> list[dict]:
        out = []
        for a, b in zip(self.samples, self.samples[1:]):
            if t0 <= b["t"] < t1 and b["t"] > a["t"]:
                out.append({"t": b["t"], "width": b.get("frameWidth") or 0, "freezes": b.get("freezeCount") or 0,
                            "fps": round(((b.get("framesDecoded") or 0) - (a.get("framesDecoded") or 0)) / (b["t"] - a["t"]), 1)})
        return out

    def close(self) -> None:
        close_page(self.browser, self.page)


class SwiftPublisher:
    """`swiftrtc publish --simulcast` (test pattern, H.264 or `codec`, 1280x720@30; layers h, m, l
    at 1, 1/2, 1/4 the size) as role "pub". Each layer's size and rate as the relay sees them (its
    API), in the shape of Chromium's outbound-rtp per rid; each layer's frame rate is the capture's."""

    FPS = 30

    def __init__(self, bed, duration: float, codec: str = "h264", extra: tuple[str, ...] = ()):
        self.bed = bed
        self.run, _, _ = bed.publish(NAME, duration=duration, fps=self.FPS, extra=("--simulcast", *extra), codec=codec)

    def sent(self) -> dict:
        layers = ((self.bed.relay.stream("live", NAME) or {}).get("video") or {}).get("layers") or []
        return {x["rid"]: {"width": x.get("width") or 0, "kbps": x.get("kbps") or 0, "fps": self.FPS} for x in layers}

    @staticmethod
    def all_on(o: dict) -> bool:
        return bool(o) and all(o.get(r, {}).get("kbps", 0) > 0 and o.get(r, {}).get("width", 0) > 0 for r in "lmh")


def start_publisher(publisher: str, bed, browser, logs, duration: float, swift: dict | None = None):
    """Chromium's page (VP8 `sendEncodings` l/m/h) or `swiftrtc publish --simulcast` (`swift`:
    SwiftPublisher's options) publishing NAME, once all three layers are on. Returns (page or
    None, the layers sent now: a function)."""
    page = None
    if publisher == "chromium":
        bed.roles.expect("pub")
        page = open_player_page(browser, bed.relay, "live", NAME)
        logs.append(("publisher page #log", lambda: page_log(page)))
        page.evaluate(PUBLISH_SIMULCAST_JS % json.dumps("VP8"), timeout=20)
        bed.relay.wait_event(rf"publisher \S+ connected \(live/{NAME}\)", timeout=20)
        bed.sampler.mark("publisher connected")
        all_on = lambda o: bool(o) and all(o.get(r, {}).get("framesSent", 0) > 10 for r in "lmh")  # noqa: E731
        sent_now = lambda: page.evaluate(LAYERS_SENT_JS, timeout=10)  # noqa: E731
    else:
        swift_pub = SwiftPublisher(bed, duration, **(swift or {}))
        all_on, sent_now = SwiftPublisher.all_on, swift_pub.sent
    layers, _ = poll(sent_now, all_on, timeout=30)
    assert all_on(layers), f"the {publisher} publisher did not send all three layers: {layers}"
    return page, sent_now


def sample_until(bed, flow_b: int, t0: float, t_lift: float, t_end: float, sent_now, api: list, sent_samples: list,
                 also=None) -> None:
    """Each second until `t_end`: the relay's players and layers (API, `t` from `t0`) and what the
    publisher sends; at `t_lift` B's limit lifts. `also()` each second too."""
    while bed.net.now() < t_end:
        if t_lift <= bed.net.now() and not any(e["what"] == "B's limit lifted" for e in bed.sampler.events):
            bed.net.set("down", "rate=off", flow=flow_b)
            bed.sampler.mark("B's limit lifted")
        stream = bed.relay.stream("live", NAME) or {}
        api.append({"t": round(bed.net.now() - t0, 1), "players": stream.get("players"),
                    "layers": stream.get("video", {}).get("layers")})
        sent_samples.append(sent_now())
        if also:
            also()
        time.sleep(1.0)


def sent_fps_between(sent_samples: list, api: list, t0: float, start: float, end: float, rid: str) -> float | None:
    """The publisher's median frame rate of `rid` in [start, end) on the emulator's clock (the
    samples are `sample_until`'s, paired with its API entries, whose `t` is from `t0`). A viewer
    is held to what was sent in the same seconds: the publisher's encoder drops frames of h after
    an overshoot (42 in one run, 13-26 fps for 18 s), and A, sent every one, had its median
    compared with the whole run's 30."""
    fps = [s[rid]["fps"] for s, a in zip(sent_samples, api) if s and rid in s and start <= a["t"] + t0 < end]
    return statistics.median(fps) if fps else None


def aiortc_checks(c: Checks, bed, api: list[dict], b_detail: dict, widths: dict, limited: dict, lift: float) -> None:
    """aiortc as B: its layer as the relay chose it (API, each second; `lift`: when the limit lifted,
    on the API's clock). Its REMB comes only from the abs-send-time the relay answers and stamps.
    Its playback is not judged second by second: at its join on the largest layer the 400 kbit/s
    FIFO drops part of a keyframe; aiortc NACKs a missing packet only when a new gap appears and
    its jitter buffer waits for it in order, so it shows nothing for ~15 s (until 512 packets
    overflow the buffer), then catches up faster than real time."""
    a_id = re.search(r"player (\S+) connected", bed.relay.text()).group(1)
    b = [(x["t"], p) for x in api for p in x["players"] or [] if p["id"] != a_id]
    rembs = [p.get("remb_kbps") for _, p in b if p.get("remb_kbps")]
    c.check("aiortc's REMB reaches the relay (abs-send-time answered and stamped)", len(rembs) >= 10,
            f"{len(rembs)} seconds with one, {min(rembs, default=None)}-{max(rembs, default=None)} kbps", ">= 10")
    while_limited = sorted({p.get("layer") for t, p in b if 5 <= t < lift})
    c.check("B on a lower layer from 5 s after the limit (relay API)", bool(while_limited) and "h" not in while_limited,
            while_limited, "l or m")
    back = next((t - lift for t, p in b if t >= lift and p.get("layer") == "h"), None)
    c.check("B back on the high layer after the limit lifts (relay API)", back is not None and back <= 48, back, "<= 48 s")
    c.check("B's bottleneck drops while limited (5 s on)", limited["queue_drop_fraction"] <= 0.05,
            f"{limited['dropped_queue']} of {limited['packets_in']}", "<= 5%")
    sizes = (b_detail.get("video") or {}).get("sizes") or {}
    low = {f"{widths[r]}x{widths[r] * 9 // 16}" for r in "lm"}
    c.check("aiortc decoded a lower layer", any(sizes.get(k, 0) >= 100 for k in low), sizes, ">= 100 frames of l or m")
    tail = [x for x in b_detail.get("status") or [] if x["t"] >= (b_detail["status"][-1]["t"] - 10)] if b_detail.get("status") else []
    c.check("aiortc plays 1280x720 at >= 25 fps over its last 10 s", bool(tail) and all(x["width"] == widths["h"] and x["fps"] >= 25 for x in tail),
            [(x["width"], x["fps"]) for x in tail], "every line")


@pytest.mark.timeout(200)
@pytest.mark.parametrize("viewer_b,publisher", [("swift", "chromium"), ("chromium", "chromium"), ("swift", "swift"),
                                                ("aiortc", "swift")])
def test_a_viewer_behind_400kbit_gets_a_lower_layer_and_comes_back(viewer_b, publisher, make_bed, browser, artifact_dir, logs):  # noqa: F811
    bed = make_bed({"b": (None, "rate=400kbit,queue=25p")}, seed=22)
    limited_for = LIMITED[(viewer_b, publisher)]
    duration = limited_for + LIFTED + 4
    page = None
    api: list[dict] = []
    chromium_b = None
    try:
        page, sent_now = start_publisher(publisher, bed, browser, logs, duration + 25)

        runs, flows = {}, {}
        for role in ("a", "b"):
            bed.roles.expect(role)
            if role == "b" and viewer_b == "chromium":
                chromium_b = ChromiumB(browser, bed, logs)
            elif role == "b" and viewer_b == "aiortc":
                # In its own process (the stand-in `play`, WHEP): in this one aiortc's decoding
                # would share the GIL with the emulator's engine.
                runs[role] = bed.swift("-u", ["-m", "interop.media_standin", "play", bed.relay.whep_url("live", NAME),
                                              "--duration", str(duration)], "play-b", binary=sys.executable)
                bed.relay.wait_event(rf"player \S+ connected \(live/{NAME}\)", timeout=20)
            else:
                runs[role] = bed.swift("play", [bed.relay.webrtc_url("live", NAME), "--duration", str(duration)], f"play-{role}")
                bed.relay.wait_event(rf"player \S+ connected \(live/{NAME}\)", timeout=20)
            flows[role] = bed.roles.wait_flow(role)
        t_both = bed.sampler.mark("both viewers connected")
        t_lift = t_both + limited_for
        t_end = t_lift + LIFTED
        sent_samples: list = []
        sample_until(bed, flows["b"], t_both, t_lift, t_end, sent_now, api, sent_samples, chromium_b.sample if chromium_b else None)
        codes = {role: run.wait(timeout=30) for role, run in runs.items()}
    finally:
        if page is not None:
            (artifact_dir / "page-log.txt").write_text(page_log(page))
            close_page(browser, page)
        if chromium_b:
            chromium_b.close()
    bed.close()

    # Each layer's size is the one it was sent at most of the run: a Chromium publisher can scale
    # its layers down for a moment (CPU adaptation; once at the run's end: 960 wide for h, while
    # A had decoded 1280 throughout), and the last sample alone then misread every layer.
    sent = sent_samples[-1]
    widths = {r: statistics.mode(s[r]["width"] for s in sent_samples if s and s.get(r, {}).get("width")) for r in "lmh"}
    high_w = widths["h"]
    fps_of = {r: statistics.median(s[r]["fps"] for s in sent_samples if s and r in s) for r in "lmh"}
    a_run = runs["a"]
    b_rows_of = (lambda t0, t1: chromium_b.rows(t0, t1)) if chromium_b else (lambda t0, t1: rows_between(runs["b"], t0, t1))
    a_rows = rows_between(a_run, t_both + 3, t_lift)
    b_rows = b_rows_of(t_both + 5, t_lift)
    after = b_rows_of(t_lift, t_end)
    b_layer = next((r for r in "lm" if b_rows and statistics.median(x["width"] for x in b_rows) == widths[r]), None)
    back = next((x["t"] - t_lift for x in after if x["width"] == high_w and x["fps"] > 0), None)
    limited = bed.sampler.window(flows["b"], "down", t_both + 5, t_lift)
    if chromium_b:
        last = chromium_b.samples[-1] if chromium_b.samples else {}
        b_freezes = {"freezeCount": last.get("freezeCount"), "totalFreezesDuration": last.get("totalFreezesDuration")}
        b_detail = {"samples": chromium_b.samples}
    else:
        b_detail = player_summary(runs["b"].stats())
        b_freezes = {k: b_detail["inbound"].get(k) for k in ("freezeCount", "totalFreezesDuration")}
        b_detail["status"] = status_series(runs["b"].text(), runs["b"].t_start)

    median = lambda rows: statistics.median(x["fps"] for x in rows) if rows else 0  # noqa: E731
    c = Checks()
    c.check("the plays exit 0", all(v == 0 for v in codes.values()), codes, "0")
    c.check("A keeps the high layer while B is limited (width every second)", bool(a_rows) and all(x["width"] == high_w for x in a_rows),
            sorted({x["width"] for x in a_rows}), f"{high_w}")
    a_sent = sent_fps_between(sent_samples, api, t_both, t_both + 3, t_lift, "h") or fps_of["h"]
    c.check("A's frame rate is what the publisher sent of h in those seconds (median of 1 s lines)", median(a_rows) >= a_sent - 2,
            median(a_rows), f">= {a_sent} - 2")
    if viewer_b == "aiortc":
        b_detail["video"] = runs["b"].stats().get("video") or {}   # the stand-in's sink: sizes decoded
        aiortc_checks(c, bed, api, b_detail, widths, limited, t_lift - t_both)
        return finish(artifact_dir, c, {
            "scenario": f"{publisher} simulcast l/m/h through the relay; play A clean, aiortc B behind 400 kbit/s "
                        f"(25-packet FIFO) for {limited_for} s, then clean for {LIFTED} s",
            "publisherLayers": sent, "publisherLayerFps": fps_of, "viewerB": viewer_b, "publisher": publisher,
            "bLimitedDown": limited, "b": b_detail, "aPlayer": player_summary(a_run.stats()), "api": api,
            "events": bed.sampler.events, "aStatus": status_series(a_run.text(), a_run.t_start),
        }, f"weak viewer (aiortc as B, {publisher} publishing): A {median(a_rows)} fps at {sorted({x['width'] for x in a_rows})}; "
           f"B decoded {b_detail['video'].get('sizes')}")
    c.check("B is on a lower layer from 5 s after the limit (width every second)",
            bool(b_rows) and all(x["width"] < high_w for x in b_rows), sorted({x["width"] for x in b_rows}), f"< {high_w}")
    c.check("B plays that layer at the publisher's rate for it (median of 1 s lines)",
            b_layer is not None and median(b_rows) >= fps_of[b_layer] - 2, f"{median(b_rows)} fps on {b_layer}",
            f">= the publisher's {fps_of.get(b_layer or 'l')} - 2")
    c.check("B's bottleneck drops while limited (5 s on)", limited["queue_drop_fraction"] <= 0.05,
            f"{limited['dropped_queue']} of {limited['packets_in']}", "<= 5%")
    # B joins on the largest layer (no estimate yet); its estimator tells the relay its link is
    # full before it settles, and it is moved to the smallest layer at once. That join cost it
    # 1.2-1.4 s of frozen video with Chromium as B while the relay waited for the settled
    # estimate (h -> m -> l as a Chromium publisher's layers ramped); since, 0-0.21 s in
    # every row. The bound, over the whole run (W3C totalFreezesDuration):
    frozen = b_freezes.get("totalFreezesDuration")
    c.check("B's frozen time over the run, its join included (W3C totalFreezesDuration)",
            frozen is not None and frozen <= 1.0, b_freezes, "<= 1 s")
    # Once on its layer it plays smoothly: no W3C freeze from 5 s on until the limit lifts, and
    # all of the layer's frames (their rate over that window). Not every 1 s line: a probe that
    # fills B's queue by ~200 ms moves frames from one line to the next (23 then 37 fps, none
    # lost, no freeze; 1 run in 10 locally, one CI run at 21).
    before = b_rows_of(t_both, t_both + 5)
    frozen_on_layer = (b_rows[-1]["freezes"] - (before[-1]["freezes"] if before else 0)) if b_rows else None
    c.check("B once on its layer: no freeze (W3C freezeCount from 5 s on until the limit lifts)",
            frozen_on_layer == 0, frozen_on_layer, "0")
    mean = sum(x["fps"] for x in b_rows) / len(b_rows) if b_rows else 0
    c.check("B once on its layer: all its frames (mean of the 1 s lines)",
            b_layer is not None and mean >= fps_of[b_layer] - 1, round(mean, 2), f">= {fps_of.get(b_layer or 'l')} - 1")
    # B gives transport-cc (swiftrtc play, Chromium): its layer follows the relay's send-side
    # estimate of its link. While B is below the layer it asked for its estimator probes every
    # 2 s, and once an estimate passes where the link was last full the relay pads B towards the
    # high layer at once; then each layer's 2 s hold, its keyframe, the 1 s status lines. Before
    # (probes every 5 s, padding after a backoff of up to 10 s): 4.3, 7.2 and 9.2 s in one run
    # per row (2026-12-05), 3–14 s over lift times in simulation; since, 3.7–5.0 s (3 runs a row).
    # (Each player's REMB, `serve --player-remb`, grows only as fast as its AIMD: 26-38 s.)
    first_up = next((x["t"] - t_lift for x in after if x["width"] > widths[b_layer or "l"] and x["fps"] > 0), None)
    c.check("B back on the high layer after the limit lifts", back is not None and back <= 10, back, "<= 10 s")
    finish(artifact_dir, c, {
        "scenario": f"{publisher} simulcast l/m/h through the relay; play A clean, play B behind 400 kbit/s (25-packet FIFO) "
                    f"for {limited_for} s, then clean for {LIFTED} s",
        "publisherLayers": sent, "publisherLayerFps": fps_of, "bLayer": b_layer, "bBackSeconds": back, "bFirstUpSeconds": first_up,
        "viewerB": viewer_b, "publisher": publisher, "bFreezes": b_freezes,
        "bLimitedDown": limited, "bDown": bed.sampler.series(flows["b"], "down"), "b": b_detail,
        "aPlayer": player_summary(a_run.stats()), "api": api, "events": bed.sampler.events,
        "aStatus": status_series(a_run.text(), a_run.t_start),
    }, f"weak viewer ({viewer_b} as B, {publisher} publishing): A {median(a_rows)} fps at {sorted({x['width'] for x in a_rows})}; B {median(b_rows)} fps on {b_layer} "
       f"({limited['dropped_queue']} drops of {limited['packets_in']} at its bottleneck), freezes {b_freezes['freezeCount']} / "
       f"{b_freezes['totalFreezesDuration']} s; back on high {back} s after the limit lifted")


# Below the smallest layer: B's link carries this share of the publisher's l (measured once both
# play). l's base temporal layer is 0.4-0.5 of it (Chromium's VP8 simulcast sends three temporal
# layers on every layer, ours with --scalability L1T3), up to TL1 ~0.6-0.75: so B fits l/T0.
THIN_SHARE = 0.6
# ...plus its audio: `publish --audio tone` is ~36 kbit/s of Opus at 50 packets a second, ~60 on
# the wire (Chromium's page publishes video alone here).
AUDIO_KBPS = {"swift": 60, "chromium": 0}
THIN_LIMITED, THIN_LIFTED = 25.0, 20.0


@pytest.mark.timeout(200)
@pytest.mark.parametrize("publisher", ["chromium", "swift"])
def test_a_viewer_below_the_smallest_layer_gets_its_base_frames(publisher, make_bed, browser, artifact_dir, logs):  # noqa: F811
    """A viewer whose link does not carry even the smallest layer: the relay sends it that layer's
    lower temporal layers (a quarter or half of its frames, every one of those) rather than all of
    it into a queue that drops a third; A keeps 1280x720. When B's limit lifts it is back on h."""
    bed = make_bed({}, seed=23)
    duration = THIN_LIMITED + THIN_LIFTED + 15
    page = None
    api: list[dict] = []
    try:
        page, sent_now = start_publisher(publisher, bed, browser, logs, duration + 25,
                                         swift={"codec": "vp8", "extra": ("--scalability", "L1T3")})
        runs, flows = {}, {}
        for role in ("a", "b"):
            bed.roles.expect(role)
            runs[role] = bed.swift("play", [bed.relay.webrtc_url("live", NAME), "--duration", str(duration)], f"play-{role}")
            bed.relay.wait_event(rf"player \S+ connected \(live/{NAME}\)", timeout=20)
            flows[role] = bed.roles.wait_flow(role)
        t_both = bed.sampler.mark("both viewers connected")
        time.sleep(5)   # l's rate, once both play
        low_kbps = next(x["kbps"] for x in (bed.relay.stream("live", NAME) or {}).get("video", {}).get("layers", []) if x["rid"] == "l")
        limit = round(low_kbps * THIN_SHARE) + AUDIO_KBPS[publisher]
        bed.net.set("down", f"rate={limit}kbit,queue=25p", flow=flows["b"])
        t_limit = bed.sampler.mark(f"B limited to {limit} kbit/s (l is {low_kbps} kbit/s)")
        t_lift = t_limit + THIN_LIMITED
        t_end = t_lift + THIN_LIFTED
        sent_samples: list = []
        sample_until(bed, flows["b"], t_limit, t_lift, t_end, sent_now, api, sent_samples)
        codes = {role: run.wait(timeout=30) for role, run in runs.items()}
    finally:
        if page is not None:
            (artifact_dir / "page-log.txt").write_text(page_log(page))
            close_page(browser, page)
    bed.close()

    widths = {r: statistics.mode(s[r]["width"] for s in sent_samples if s and s.get(r, {}).get("width")) for r in "lmh"}
    fps_of = {r: statistics.median(s[r]["fps"] for s in sent_samples if s and r in s) for r in "lmh"}
    settle = 10.0   # B's step down (h at its limit: its queue drains at the limit), then l's
    a_rows = rows_between(runs["a"], t_both + 3, t_lift)
    b_rows = rows_between(runs["b"], t_limit + settle, t_lift)
    after = rows_between(runs["b"], t_lift, t_end)
    back = next((x["t"] - t_lift for x in after if x["width"] == widths["h"] and x["fps"] > 0), None)
    a_id = re.search(r"player (\S+) connected", bed.relay.text()).group(1)
    b_api = [(x["t"], p) for x in api for p in x["players"] or [] if p["id"] != a_id]
    b_choice = [(p.get("layer"), p.get("temporal_layer")) for t, p in b_api if settle <= t < THIN_LIMITED]
    limited = bed.sampler.window(flows["b"], "down", t_limit + settle, t_lift)
    median = lambda rows: statistics.median(x["fps"] for x in rows) if rows else 0  # noqa: E731
    c = Checks()
    c.check("the plays exit 0", all(v == 0 for v in codes.values()), codes, "0")
    c.check("A keeps the high layer while B is limited (width every second)",
            bool(a_rows) and all(x["width"] == widths["h"] for x in a_rows), sorted({x["width"] for x in a_rows}), f"{widths['h']}")
    a_sent = sent_fps_between(sent_samples, api, t_limit, t_both + 3, t_lift, "h") or fps_of["h"]
    c.check("A's frame rate is what the publisher sent of h in those seconds (median of 1 s lines)", median(a_rows) >= a_sent - 2,
            median(a_rows), f">= {a_sent} - 2")
    c.check(f"B on l below its every frame from {settle:.0f} s after the limit (relay API: layer, temporal_layer)",
            bool(b_choice) and all(layer == "l" and tl in (0, 1) for layer, tl in b_choice), sorted(set(map(str, b_choice))), "l, 0 or 1")
    c.check("B plays l's size (width every second)", bool(b_rows) and all(x["width"] == widths["l"] for x in b_rows),
            sorted({x["width"] for x in b_rows}), f"{widths['l']}")
    # A quarter (T0) or half (T1) of l's frames: every one of them (mean of the 1 s lines).
    mean = sum(x["fps"] for x in b_rows) / len(b_rows) if b_rows else 0
    c.check("B gets a quarter to half of l's frames (mean of 1 s lines)", fps_of["l"] * 0.22 <= mean <= fps_of["l"] * 0.55,
            round(mean, 2), f"{fps_of['l'] * 0.22:.1f}-{fps_of['l'] * 0.55:.1f}")
    frozen = (b_rows[-1]["freezes"] - b_rows[0]["freezes"]) if b_rows else None
    c.check("B on its layer: no freeze (W3C freezeCount)", frozen == 0, frozen, "0")
    c.check("B's bottleneck drops while on its layer", limited["queue_drop_fraction"] <= 0.05,
            f"{limited['dropped_queue']} of {limited['packets_in']}", "<= 5%")
    c.check("B back on the high layer after the limit lifts", back is not None and back <= 10, back, "<= 10 s")
    finish(artifact_dir, c, {
        "scenario": f"{publisher} VP8 simulcast l/m/h with temporal layers through the relay; play A clean, play B behind "
                    f"{limit} kbit/s (25-packet FIFO; l is {low_kbps} kbit/s) for {THIN_LIMITED} s, then clean for {THIN_LIFTED} s",
        "publisherLayerFps": fps_of, "widths": widths, "bChoice": b_choice, "bBackSeconds": back, "bLimitedDown": limited,
        "api": api, "events": bed.sampler.events, "bStatus": status_series(runs["b"].text(), runs["b"].t_start),
        "aStatus": status_series(runs["a"].text(), runs["a"].t_start),
    }, f"below the smallest layer ({publisher} publishing): A {median(a_rows)} fps; B {round(mean, 1)} fps on {sorted(set(map(str, b_choice)))} "
       f"at {limit} kbit/s (l {low_kbps}), {limited['dropped_queue']} drops; back on high {back} s after the lift")
