"""Network-condition acceptance tests: the relay (`swiftrtc serve`) behind interop/netem.py, with the
publisher's flow and the player's flow impaired separately (netem per-flow links, assigned by role).

Scenarios (the issue's thresholds, asserted; every run's numbers go to
artifacts/interop/<test>/network.json with a PASS/FAIL line per check):
1. 5% loss + 25±10 ms on the publisher's leg, Swift → relay → Swift: ≥ 98% of the frames
   (patternFramesMissing / patternFramesSpan ≤ 2%), freeze time (gaps > 500 ms) ≤ 1 s, latency p95 ≤ 300 ms.
2. The same on both legs.
3. Chromium as the sender (5% + 25±10 ms on its leg; measured at swiftrtc play) and as the receiver
   (impairment on its leg; measured with Chromium's getStats and the test pattern read off its <video>).
4. 1 Mbit/s bottleneck (200 ms FIFO) on the Swift publisher's uplink: its offered rate converges to
   ≤ 1 Mbit/s within 5 s, queue delay p95 ≤ 250 ms after 5 s, no disconnect.
5. 2.5 Mbit/s → 500 kbit/s at 10 s → 2.5 Mbit/s at 25 s: followed down within 2 s, back up within 10 s,
   the resolution drops and recovers.
6. Chromium publishing through 1 Mbit/s adapts (the relay's transport-cc feedback works).
"Leg" impairments apply to both directions of that flow (media and its RTCP feedback); bottlenecks to
the uplink (client → relay) only. Rates are UDP payload bytes, as netem counts them (overhead=0).
"Offered" = what the sender put on the link (netem bytes in), "forwarded" = what left the bottleneck.
A freeze is a gap > 500 ms between frames (swiftrtc play's freezeSecondsOver500Ms; in Chromium the gaps
between presented frames via requestVideoFrameCallback); the stricter W3C freezeCount /
totalFreezesDuration are recorded in network.json, not asserted.
Times are seconds after the relay logged the publisher as connected.
Run: CI=true interop/run.sh -k network
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from interop.conftest import launch_browser, write_json
from interop.netem import impaired_relay
from interop.network_helpers import (GAP_MONITOR_JS, MBIT, NET_STATS_JS, Checks, NetSampler, RoleFlows, interpolate, percentile,
                                     status_series, with_pattern)
from interop.relay_helpers import READ_PATTERN_JS, SwiftRun, close_page, open_player_page, page_log
from interop.media_files import decode_errors, ffprobe

LOSSY = "loss=5%,delay=25ms,jitter=10ms"
FAKE_CAMERA_FLAGS = ("--use-fake-device-for-media-stream=fps=30",)  # default fake camera is 20 fps
MEDIA_SECONDS = 20
# True once the player page's connection has decoded a video frame.
FIRST_FRAME_JS = ("(typeof pc !== 'undefined' && pc) ? pc.getStats().then(r => { let n = 0; r.forEach(s => "
                  "{ if (s.type === 'inbound-rtp' && s.kind === 'video') n = s.framesDecoded || 0; }); return n > 0; })"
                  " : false")


# ---- fixtures ------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    b = launch_browser(extra_flags=FAKE_CAMERA_FLAGS)
    yield b
    b.close()


class Bed:
    """The relay behind the emulator, a 0.5 s sampler, and the processes of one scenario."""

    def __init__(self, swift_bin, artifact_dir, logs, roles: dict, seed: int = 1):
        self.swift_bin, self.dir, self.logs = swift_bin, artifact_dir, logs
        self.roles = RoleFlows(roles)
        self.relay, self.net = impaired_relay(swift_bin, artifact_dir / "relay.log", per_flow=True,
                                              flows=self.roles, seed=seed)
        logs.append(("relay output", self.relay.text))
        self.sampler = NetSampler(self.net).start()
        self.runs: list[SwiftRun] = []
        self.closed = False

    def swift(self, command: str, args: list[str], name: str, binary=None) -> SwiftRun:
        """`swiftrtc command args`, or `binary` (a program with its CLI contract: the aiortc stand-in)."""
        t = self.net.now()
        run = SwiftRun(Path(binary) if binary else self.swift_bin, command, args, self.dir, name)
        run.t_start = t
        self.runs.append(run)
        self.logs.append((f"swiftrtc {name}", run.text))
        return run

    def publish(self, stream: str, duration: float, size: str = "1280x720", fps: int = 30,
                extra: tuple[str, ...] = (), codec: str = "h264") -> tuple[SwiftRun, float, int]:
        """Starts `swiftrtc publish` (test pattern) as role "pub"; returns (run, connected time, flow)."""
        self.roles.expect("pub")
        run = self.swift("publish", [self.relay.webrtc_url("live", stream), "--source", "testsrc", "--codec", codec,
                                     "--size", size, "--fps", str(fps), "--duration", str(duration),
                                     "--audio", "tone", *extra], "publish")
        self.relay.wait_event(rf"publisher \S+ connected \(live/{stream}\)", timeout=20)
        t_conn = self.sampler.mark("publisher connected")
        return run, t_conn, self.roles.wait_flow("pub")

    def publish_chromium(self, browser, stream: str):
        """The player page's Publish (Chromium's fake camera + mic over WHIP) as role "pub"; returns
        (page, connected time, flow). The caller closes the page (`close_page`)."""
        page = open_player_page(browser, self.relay, "live", stream)
        self.logs.append(("player page #log", lambda: page_log(page)))
        try:
            self.roles.expect("pub")
            page.evaluate("document.getElementById('publish').click(); true")
            page.wait_for("document.getElementById('log').textContent.includes('publishing')", timeout=20)
            self.relay.wait_event(rf"publisher \S+ connected \(live/{stream}\)", timeout=20)
            t_conn = self.sampler.mark("publisher connected")
            return page, t_conn, self.roles.wait_flow("pub")
        except BaseException:
            close_page(browser, page)
            raise

    def play(self, stream: str, duration: float, extra: tuple[str, ...] = ()) -> tuple[SwiftRun, int]:
        self.roles.expect("play")
        run = self.swift("play", [self.relay.webrtc_url("live", stream), "--duration", str(duration), *extra], "play")
        self.relay.wait_event(rf"player \S+ connected \(live/{stream}\)", timeout=20)
        self.sampler.mark("player connected")
        return run, self.roles.wait_flow("play")

    def step_uplink(self, flow: int, t0: float, steps) -> None:
        """Changes `flow`'s uplink at each (seconds after t0, spec), marking each change."""
        for at, spec in steps:
            time.sleep(max(0.0, t0 + at - self.net.now()))
            self.net.set("up", spec, flow=flow)
            self.sampler.mark(f"uplink {spec}")

    def close(self) -> None:
        if self.closed:
            return
        self.closed = True
        for r in self.runs:
            r.close()
        try:
            self.sampler.stop()
        finally:
            self.relay.close()
            try:
                self.net.write_json(self.dir / "netem-stats.json")
            finally:
                self.net.close()


@pytest.fixture
def make_bed(swift_bin, artifact_dir, logs):
    beds: list[Bed] = []

    def make(roles: dict, seed: int = 1) -> Bed:
        b = Bed(swift_bin, artifact_dir, logs, roles, seed)
        beds.append(b)
        return b

    yield make
    for b in beds:
        b.close()


# ---- measuring ---------------------------------------------------------------------------------------

def sliding(bed: Bed, flow: int, direction: str, t0: float, t1: float, width: float = 1.0) -> list[dict]:
    """Windows of ~`width` s (consecutive sampler samples, stepping one sample) inside [t0, t1]."""
    s = bed.sampler.samples
    steps = max(1, round(width / bed.sampler.interval))
    out = []
    for i in range(len(s) - steps):
        a, b = s[i]["t"], s[i + steps]["t"]
        if a >= t0 - 0.01 and b <= t1 + 0.01:
            out.append(bed.sampler.window(flow, direction, a, b))
    return out


def leg_report(bed: Bed, flow: int, t0: float, t1: float) -> dict:
    """What the emulator did to one flow between t0 and t1 (both directions)."""
    out = {}
    for d in ("up", "down"):
        w = bed.sampler.window(flow, d, t0, t1)
        w["loss_fraction"] = round(w["dropped_loss"] / w["packets_in"], 4) if w["packets_in"] else None
        out[d] = {k: (round(v) if isinstance(v, float) and k.endswith("bps") else v) for k, v in w.items()}
    return out


def unread_reasons(samples: list[dict]) -> str:
    """Why no read of the pattern was valid: no picture (<video> without a size) or which words it read
    (a black picture reads all 0), with what Chromium's inbound-rtp said then."""
    bad = [s for s in samples if not (s.get("pattern") and s["pattern"].get("valid"))]
    blank = sum(1 for s in bad if not s.get("pattern"))
    first = next((s for s in bad if s.get("pattern")), None)
    seen = ""
    if first:
        p, i = first["pattern"], first.get("inbound") or {}
        seen = (f"; first read {p['width']}x{p['height']} words {p['frame']:#x} {p['captureMs']:#x} {p['check']:#x}"
                f" while inbound {i.get('frameWidth')}x{i.get('frameHeight')}, framesDecoded {i.get('framesDecoded')}")
    return f"{blank} without a picture, {len(bad) - blank} invalid{seen}"


def publisher_summary(stats: dict) -> dict:
    out = stats.get("outbound") or {}
    keys = ("framesEncoded", "framesSent", "bytesSent", "targetBitrate", "qualityLimitationReason",
            "qualityLimitationResolutionChanges", "frameWidth", "frameHeight", "retransmittedBytesSent",
            "retransmittedPacketsSent", "nackCount", "pliCount", "framesDropped", "keyFramesEncoded")
    doc = {k: out.get(k) for k in keys}
    doc["availableOutgoingBitrate"] = _find_aob(stats)
    return doc


def _find_aob(stats: dict):
    report = stats.get("stats")
    items = report if isinstance(report, list) else list(report.values()) if isinstance(report, dict) else []
    for s in items:
        if isinstance(s, dict) and s.get("type") == "candidate-pair" and s.get("availableOutgoingBitrate") is not None:
            return s["availableOutgoingBitrate"]
    return None


def player_summary(stats: dict) -> dict:
    inbound = stats.get("inbound") or {}
    keys = ("framesDecoded", "patternFrames", "patternFramesSpan", "patternFramesMissing", "freezesOver500Ms",
            "freezeSecondsOver500Ms", "longestFrameGapMs", "patternLatencyMsP50", "patternLatencyMsP95",
            "frameWidth", "frameHeight", "firstFrameMs", "connectMs", "patternVerified")
    doc = {k: stats.get(k) for k in keys}
    doc["inbound"] = {k: inbound.get(k) for k in ("framesDecoded", "framesReceived", "framesDropped", "packetsLost",
                                                  "packetsReceived", "nackCount", "pliCount", "freezeCount",
                                                  "totalFreezesDuration", "jitterBufferDelay",
                                                  "jitterBufferEmittedCount", "frameWidth", "frameHeight")}
    return doc


class ChromiumViewer:
    """Chromium playing a stream (WHEP, the relay's /players/ page) as role "chromium": W3C
    inbound-rtp freeze numbers between two `mark()`s."""

    def __init__(self, browser, bed: Bed, stream: str):
        self.browser = browser
        bed.roles.expect("chromium")
        self.page = open_player_page(browser, bed.relay, "live", stream)
        bed.logs.append(("chromium viewer #log", lambda: page_log(self.page)))
        self.marks: list[dict] = []
        try:
            self.page.evaluate("document.getElementById('play').click(); true")
            self.page.wait_for(FIRST_FRAME_JS, timeout=20)
        except BaseException:
            self.close()
            raise

    def mark(self) -> None:
        self.marks.append(self.page.evaluate(NET_STATS_JS, timeout=10) or {})

    def window(self) -> dict | None:
        """Deltas between the first and last mark (None without two marks with inbound stats)."""
        ins = [m.get("inbound") for m in self.marks if m.get("inbound")]
        if len(ins) < 2:
            return None
        a, b = ins[0], ins[-1]
        delta = lambda k: round((b.get(k) or 0) - (a.get(k) or 0), 3)  # noqa: E731
        return {"freezeCount": delta("freezeCount"), "totalFreezesDuration": delta("totalFreezesDuration"),
                "framesDecoded": delta("framesDecoded"), "packetsLost": delta("packetsLost"),
                "nackCount": delta("nackCount"), "seconds": round((self.marks[-1].get("t", 0) - self.marks[0].get("t", 0)) / 1000, 2)}

    def close(self) -> None:
        if self.page is not None:
            close_page(self.browser, self.page)
            self.page = None


def emulator_timing(artifact_dir) -> str:
    """How late the emulator's engine ran (a starved one sends overdue packets back to back,
    faster than its link): to tell a result of ours from one of the test bed's."""
    try:
        st = json.loads((artifact_dir / "netem-stats.json").read_text())
    except (OSError, ValueError):
        return "emulator timing: no netem-stats.json"
    errs = {d: st[d]["timer_error_ms"] for d in ("up", "down") if d in st}
    return ("emulator timer error " + ", ".join(f"{d} p99 {e['p99']} / max {e['max']} ms" for d, e in errs.items())
            + f" (realtime {st.get('engine', {}).get('realtime')}, nice {st.get('engine', {}).get('nice')})")


def finish(artifact_dir, checks: Checks, doc: dict, headline: str) -> None:
    doc["checks"] = checks.items
    write_json(artifact_dir / "network.json", doc)
    timing = emulator_timing(artifact_dir)
    print(f"{headline}\n{checks.summary()}\n{timing}")
    assert not checks.failed, (f"{len(checks.failed)} check(s) failed (numbers in "
                               f"{artifact_dir / 'network.json'}):\n{checks.summary()}\n{timing}")


def kbps(bps):
    return None if bps is None else round(bps / 1000)


# ---- 1 + 2. Swift → relay → Swift with loss and jitter -------------------------------------------

@pytest.mark.timeout(100)
@pytest.mark.parametrize("legs", ["publisher-leg", "both-legs"])
def test_network_lossy_swift(legs, make_bed, artifact_dir, request):
    roles = {"pub": (LOSSY, LOSSY)}
    if legs == "both-legs":
        roles["play"] = (LOSSY, LOSSY)
        roles["chromium"] = (LOSSY, LOSSY)
    bed = make_bed(roles, seed=11 if legs == "publisher-leg" else 12)
    # Long enough to feed the player all its MEDIA_SECONDS after Chromium's page has started
    # (both legs; 4.6 s on a loaded machine, when +3 s left the player 2 s without frames).
    pub, t_conn, pub_flow = bed.publish("lossy", duration=MEDIA_SECONDS + 10)
    # Both legs: Chromium watches the same stream through a leg of its own (same impairment) in
    # the same run, the anchor for the viewer's W3C freeze numbers.
    anchor = ChromiumViewer(request.getfixturevalue("browser"), bed, "lossy") if legs == "both-legs" else None
    time.sleep(0.5)
    # The viewer also records what it receives: 5% loss must not reach the file as decode errors.
    recording = artifact_dir / "lossy.mp4"
    try:
        player, play_flow = bed.play("lossy", duration=MEDIA_SECONDS, extra=("--record", str(recording)))
        if anchor:
            anchor.mark()
        play_code = player.wait(timeout=MEDIA_SECONDS + 25)
        if anchor:
            anchor.mark()
    finally:
        if anchor:
            anchor.close()
    pub_code = pub.wait(timeout=20)
    t_end = bed.net.now()
    bed.close()
    play, pubs = player.stats(), pub.stats()
    p, ps = player_summary(play), publisher_summary(pubs)
    errors = decode_errors(recording) if recording.is_file() else "no file"
    recorded = ffprobe(recording).get("video", {}).get("packets", 0) if recording.is_file() else 0
    legs_doc = {"publisher": leg_report(bed, pub_flow, t_conn, t_end), "player": leg_report(bed, play_flow, t_conn, t_end)}

    c = Checks()
    span, missing = p["patternFramesSpan"] or 0, p["patternFramesMissing"]
    c.check("publish exits 0", pub_code == 0, pub_code, "0")
    c.check("play exits 0", play_code == 0, play_code, "0")
    c.check("the player saw ~20 s of pattern frames", span >= 0.9 * MEDIA_SECONDS * 30, span, f">= {0.9 * MEDIA_SECONDS * 30:.0f}")
    frac = (missing / span) if span and missing is not None else None
    c.check("frames missing (patternFramesMissing / patternFramesSpan)", frac is not None and frac <= 0.02,
            None if frac is None else f"{missing}/{span} = {100 * frac:.2f}%", "<= 2%")
    c.check("freeze time, gaps > 500 ms (freezeSecondsOver500Ms)",
            (p["freezeSecondsOver500Ms"] or 0) <= 1.0 and p["freezeSecondsOver500Ms"] is not None,
            f"{p['freezeSecondsOver500Ms']} s in {p['freezesOver500Ms']} freezes, longest gap {p['longestFrameGapMs']} ms",
            "<= 1 s")
    # W3C freezes (gaps > max(3 × mean, mean + 150 ms)): a frame waiting for a retransmission is
    # shown on time (the playout delay), not a round trip late.
    w3c = p["inbound"].get("totalFreezesDuration")
    c.check("W3C totalFreezesDuration (inbound-rtp)", w3c is not None and w3c <= 1.0,
            f"{w3c} s in {p['inbound'].get('freezeCount')} freezes", "<= 1 s")
    anchor_doc = anchor.window() if anchor else None
    if anchor_doc is not None:
        cw = anchor_doc["totalFreezesDuration"]
        c.check("W3C totalFreezesDuration ≤ Chromium's as a viewer of the same stream in the same run (its own lossy leg)",
                w3c is not None and cw is not None and w3c <= cw,
                f"Swift {w3c} s in {p['inbound'].get('freezeCount')}, Chromium {cw} s in {anchor_doc['freezeCount']}",
                "Swift ≤ Chromium")
    c.check("latency p95 (pattern capture → decode)", p["patternLatencyMsP95"] is not None and p["patternLatencyMsP95"] <= 300,
            f"p95 {p['patternLatencyMsP95']} ms, p50 {p['patternLatencyMsP50']} ms", "<= 300 ms")
    c.check("the recording decodes without an error (ffmpeg -v error)", errors == "", errors[:300] or "clean", "nothing printed")
    c.check("the recording has the frames played", recorded >= 0.98 * (p["framesDecoded"] or 0),
            f"{recorded} recorded, {p['framesDecoded']} decoded", ">= 98%")
    # The method: the impairment really hit the leg(s) it was meant for.
    for role, flow_doc in legs_doc.items():
        impaired = role == "publisher" or legs == "both-legs"
        lf = flow_doc["up" if role == "publisher" else "down"]["loss_fraction"] or 0.0
        c.check(f"emulator: {role} media leg loss", (0.03 <= lf <= 0.07) if impaired else lf == 0.0,
                f"{100 * lf:.2f}%", "3-7%" if impaired else "0%")

    finish(artifact_dir, c, {
        "scenario": f"5% loss + 25±10 ms on the {legs.replace('-', ' ')}, Swift publish 1280x720@30 → relay → Swift play",
        "impairment": roles, "flows": {"publisher": pub_flow, "player": play_flow}, "events": bed.sampler.events,
        "player": p, "publisher": ps, "legs": legs_doc, "chromiumViewer": anchor_doc,
        "series": {"publisherUp": bed.sampler.series(pub_flow, "up"), "playerDown": bed.sampler.series(play_flow, "down")},
        "publisherStatus": status_series(pub.text(), pub.t_start), "playerStatus": status_series(player.text(), player.t_start),
    }, f"{legs}: {p['patternFramesMissing']}/{p['patternFramesSpan']} frames missing, freezes "
       f"{p['freezeSecondsOver500Ms']} s, latency p50/p95 {p['patternLatencyMsP50']}/{p['patternLatencyMsP95']} ms, "
       f"NACKs {p['inbound']['nackCount']}, publisher target {ps['targetBitrate']} "
       f"{ps['frameWidth']}x{ps['frameHeight']}; W3C freezes {p['inbound'].get('freezeCount')} "
       f"({p['inbound'].get('totalFreezesDuration')} s)"
       + (f", Chromium viewer {anchor_doc['freezeCount']} ({anchor_doc['totalFreezesDuration']} s)" if anchor_doc else ""))


# ---- 3. Chromium as the sender, and as the receiver, on a lossy leg ---------------------------------

@pytest.mark.timeout(90)
def test_network_lossy_chromium_sender(make_bed, browser, artifact_dir, logs):
    bed = make_bed({"pub": (LOSSY, LOSSY)}, seed=13)
    page, t_conn, pub_flow = bed.publish_chromium(browser, "cam")
    logs.append(("chromium console", lambda: "\n".join(page.console)))
    samples = []
    try:
        time.sleep(1.0)
        player, play_flow = bed.play("cam", duration=MEDIA_SECONDS - 2)
        next_sample, t_stats = 0.0, None
        deadline = time.monotonic() + MEDIA_SECONDS + 20
        while time.monotonic() < deadline:
            if t_stats is None and player.json_path.exists():
                t_stats = bed.net.now()  # play writes its final stats just before it exits
            if player.process.proc.poll() is not None and t_stats is not None:
                break
            if time.monotonic() >= next_sample:
                next_sample = time.monotonic() + 0.5
                s = page.evaluate(NET_STATS_JS, timeout=10)
                if s:
                    s["tNet"] = bed.net.now()
                    samples.append(s)
            time.sleep(0.05)
        play_code = player.wait(timeout=10)
        samples.append(dict(page.evaluate(NET_STATS_JS, timeout=10) or {}, tNet=bed.net.now()))
    finally:
        (artifact_dir / "page-log.txt").write_text(page_log(page))
        close_page(browser, page)
    t_end = bed.net.now()
    bed.close()
    play = player.stats()
    p = player_summary(play)
    # Frames Chromium sent while the player was decoding: from its first decoded frame to its final stats.
    t_first = player.t_start + (play.get("firstFrameMs") or 0) / 1000
    sent = [(s["tNet"], (s.get("outbound") or {}).get("framesSent")) for s in samples]
    expected = None
    if t_stats is not None and sent:
        a, b = interpolate(sent, t_first), interpolate(sent, t_stats)
        expected = (b - a) if a is not None and b is not None else None
    decoded = play.get("framesDecoded") or 0
    inbound = p["inbound"]
    last_out = next((s["outbound"] for s in reversed(samples) if s.get("outbound")), {}) or {}

    c = Checks()
    c.check("play exits 0", play_code == 0, play_code, "0")
    c.check("Chromium kept publishing", bool(last_out.get("framesSent")), last_out.get("framesSent"), "> 0")
    c.check("window ~18 s", expected is not None and expected >= 0.8 * (MEDIA_SECONDS - 2) * 25,
            expected, f">= {0.8 * (MEDIA_SECONDS - 2) * 25:.0f} frames sent in the window")
    ratio = decoded / expected if expected else None
    c.check("frames decoded by swiftrtc play / frames Chromium sent in the window",
            ratio is not None and ratio >= 0.98, None if ratio is None else f"{decoded}/{expected:.0f} = {100 * ratio:.1f}%",
            ">= 98%")
    c.check("freeze time, gaps > 500 ms (play)", p["freezeSecondsOver500Ms"] is not None and p["freezeSecondsOver500Ms"] <= 1.0,
            f"{p['freezeSecondsOver500Ms']} s in {p['freezesOver500Ms']}, longest gap {p['longestFrameGapMs']} ms", "<= 1 s")
    lf = leg_report(bed, pub_flow, t_conn, t_end)
    c.check("emulator: Chromium media leg loss", 0.03 <= (lf["up"]["loss_fraction"] or 0) <= 0.07,
            lf["up"]["loss_fraction"], "3-7%")

    finish(artifact_dir, c, {
        "scenario": "Chromium fake camera (WHIP, player page) with 5% loss + 25±10 ms on its leg → relay → swiftrtc play",
        "method": "expected = Chromium framesSent (getStats every 0.5 s, interpolated) between play's first decoded "
                  "frame (process start + firstFrameMs) and the moment play's stats file appeared",
        "window": {"tFirstFrame": round(t_first, 3), "tStats": t_stats, "expectedFrames": expected, "decoded": decoded},
        "note": "freezes are asserted as the issue defines them (gaps > 500 ms, play's freezeSecondsOver500Ms); the "
                "W3C inbound freezeCount/totalFreezesDuration (stricter: gaps > max(3 × mean, mean + 150 ms)) is "
                "in player.inbound",
        "player": p, "legs": {"publisher": lf, "player": leg_report(bed, play_flow, t_conn, t_end)},
        "chromiumLast": samples[-1] if samples else None, "chromiumSamples": samples, "events": bed.sampler.events,
        "series": {"publisherUp": bed.sampler.series(pub_flow, "up"), "playerDown": bed.sampler.series(play_flow, "down")},
        "playerStatus": status_series(player.text(), player.t_start),
    }, f"Chromium sender: play decoded {decoded} of ~{expected} frames sent, freezes {p['freezeSecondsOver500Ms']} s "
       f"(W3C {inbound.get('totalFreezesDuration')} s), NACKs {inbound.get('nackCount')}, Chromium sent "
       f"{last_out.get('frameWidth')}x{last_out.get('frameHeight')} target {last_out.get('targetBitrate')}")


@pytest.mark.timeout(90)
def test_network_lossy_chromium_receiver(make_bed, browser, artifact_dir, logs):
    bed = make_bed({"play": (LOSSY, LOSSY)}, seed=14)
    pub, t_conn, pub_flow = bed.publish("to-chromium", duration=MEDIA_SECONDS + 12)
    bed.roles.expect("play")
    page = open_player_page(browser, bed.relay, "live", "to-chromium")
    logs.append(("player page #log", lambda: page_log(page)))
    logs.append(("chromium console", lambda: "\n".join(page.console)))
    js = with_pattern(READ_PATTERN_JS)
    samples = []
    try:
        page.evaluate("document.getElementById('play').click(); true")
        page.wait_for(FIRST_FRAME_JS, timeout=20)
        bed.sampler.mark("chromium first frame")
        play_flow = bed.roles.wait_flow("play")
        time.sleep(1.0)
        gap_monitor = page.evaluate(GAP_MONITOR_JS)
        end = time.monotonic() + MEDIA_SECONDS
        while time.monotonic() < end:
            s = page.evaluate(js, timeout=10)
            if s:
                s["tNet"] = bed.net.now()
                samples.append(s)
            time.sleep(0.5)
        page.screenshot(str(artifact_dir / "player-page.png"))
    finally:
        (artifact_dir / "page-log.txt").write_text(page_log(page))
        close_page(browser, page)
    t_end = bed.net.now()
    pub.close()
    bed.close()

    valid = [s for s in samples if s.get("inbound") and s.get("pattern") and s["pattern"].get("valid")]
    c = Checks()
    c.check("the pattern was readable off Chromium's <video>", len(valid) >= 0.8 * len(samples) and len(valid) >= 20,
            f"{len(valid)}/{len(samples)} reads" + ("" if valid else f"; {unread_reasons(samples)}"), ">= 80% and >= 20")
    doc_window = None
    if len(valid) >= 2:
        a, b = valid[0], valid[-1]
        frames = b["pattern"]["frame"] - a["pattern"]["frame"]
        dec = b["inbound"]["framesDecoded"] - a["inbound"]["framesDecoded"]
        fz = (b["inbound"].get("totalFreezesDuration") or 0) - (a["inbound"].get("totalFreezesDuration") or 0)
        fc = (b["inbound"].get("freezeCount") or 0) - (a["inbound"].get("freezeCount") or 0)
        seconds = b["tNet"] - a["tNet"]
        lat = [s["pattern"]["latencyMs"] for s in valid]
        doc_window = {"seconds": round(seconds, 2), "patternFrames": frames, "framesDecoded": dec,
                      "freezeCount": fc, "totalFreezesDuration": round(fz, 3),
                      "latencyMsP50": percentile(lat, 0.5), "latencyMsP95": percentile(lat, 0.95),
                      "packetsLost": b["inbound"].get("packetsLost"), "nackCount": b["inbound"].get("nackCount"),
                      "framesDropped": b["inbound"].get("framesDropped"),
                      "jitterBufferDelayMsAvg": round(1000 * b["inbound"]["jitterBufferDelay"] / b["inbound"]["jitterBufferEmittedCount"], 1)
                      if b["inbound"].get("jitterBufferEmittedCount") else None}
        c.check("window ~20 s", seconds >= MEDIA_SECONDS - 3, round(seconds, 1), f">= {MEDIA_SECONDS - 3} s")
        ratio = dec / frames if frames > 0 else None
        c.check("Chromium framesDecoded / frames the publisher numbered in the window", ratio is not None and ratio >= 0.98,
                None if ratio is None else f"{dec}/{frames} = {100 * ratio:.1f}%", ">= 98%")
        ga, gb = a.get("gaps") or {}, b.get("gaps") or {}
        gap_s = ((gb.get("over500Ms") or 0) - (ga.get("over500Ms") or 0)) / 1000 if gap_monitor and gb else None
        doc_window.update(presentedFrames=(gb.get("frames") or 0) - (ga.get("frames") or 0) if gb else None,
                          freezesOver500Ms=(gb.get("over500") or 0) - (ga.get("over500") or 0) if gb else None,
                          freezeSecondsOver500Ms=gap_s, longestPresentedGapMs=gb.get("longestMs"))
        c.check("Chromium freeze time, presented-frame gaps > 500 ms (requestVideoFrameCallback)",
                gap_s is not None and gap_s <= 1.0,
                None if gap_s is None else f"{gap_s:.3f} s, longest gap {gb.get('longestMs', 0):.0f} ms", "<= 1 s")
    lf = leg_report(bed, play_flow, t_conn, t_end) if bed.roles.flows_of("play") else None
    c.check("emulator: Chromium media leg loss", lf is not None and 0.03 <= (lf["down"]["loss_fraction"] or 0) <= 0.07,
            lf and lf["down"]["loss_fraction"], "3-7%")
    finish(artifact_dir, c, {
        "scenario": "swiftrtc publish 1280x720@30 → relay → Chromium (WHEP, player page) with 5% loss + 25±10 ms on its leg",
        "method": "frames = difference of the test-pattern frame numbers read off <video> at the first and last "
                  "sample; decoded = getStats delta taken in the same JS turn; freezes asserted as the issue defines "
                  "them (presented-frame gaps > 500 ms, requestVideoFrameCallback); getStats freezeCount / "
                  "totalFreezesDuration (W3C: gaps > max(3 × mean, mean + 150 ms), ~180 ms at 30 fps) are reported "
                  "in window",
        "window": doc_window, "legs": {"publisher": leg_report(bed, pub_flow, t_conn, t_end), "player": lf},
        "chromiumSamples": samples, "events": bed.sampler.events,
        "series": {"playerDown": bed.sampler.series(play_flow, "down")},
        "publisherStatus": status_series(pub.text(), pub.t_start),
    }, f"Chromium receiver: {doc_window}")


# ---- 4. 1 Mbit/s bottleneck on the Swift publisher's uplink ----------------------------------------

@pytest.mark.timeout(75)
def test_network_bottleneck_1mbit_swift(make_bed, artifact_dir):
    link = 1.0 * MBIT
    bed = make_bed({"pub": ("rate=1mbit,queue=200ms", None)}, seed=15)
    pub, t_conn, pub_flow = bed.publish("bneck", duration=MEDIA_SECONDS)
    player, play_flow = bed.play("bneck", duration=MEDIA_SECONDS - 3)
    play_code = player.wait(timeout=MEDIA_SECONDS + 20)
    pub_code = pub.wait(timeout=20)
    t_media_end = t_conn + MEDIA_SECONDS
    bed.close()
    ps, p = publisher_summary(pub.stats()), player_summary(player.stats())
    after = bed.sampler.window(pub_flow, "up", t_conn + 5, t_media_end)
    windows = sliding(bed, pub_flow, "up", t_conn + 5, t_media_end)
    worst = max(windows, key=lambda w: w["in_bps"] or 0) if windows else None
    play_rows = status_series(player.text(), player.t_start)
    stalls = [r for r in play_rows if r.get("t", 0) >= t_conn + 5 and r["fps"] == 0]

    c = Checks()
    c.check("publish exits 0 (no disconnect)", pub_code == 0, pub_code, "0")
    c.check("play exits 0", play_code == 0, play_code, "0")
    c.check("player keeps decoding after 5 s (no status second with 0 fps)", not stalls and len(play_rows) >= 8,
            f"{len(stalls)} stalled seconds of {len(play_rows)}", "0")
    c.check("publisher's offered rate, mean over [5 s, end]", after["in_bps"] is not None and after["in_bps"] <= link,
            f"{kbps(after['in_bps'])} kbps", "<= 1000 kbps")
    c.check("publisher's offered rate, every 1 s window after 5 s", worst is not None and worst["in_bps"] <= 1.2 * link,
            f"max {kbps(worst and worst['in_bps'])} kbps (window ending {worst and worst['t1']})",
            "<= 1200 kbps (1.2 × link: what the 200 ms FIFO absorbs in 1 s)")
    # GCC finds the link by crossing it: its target is a sawtooth whose peaks pass the link by a few
    # percent, so one sample (the last) says where the tooth was. Judge the series, as for Chromium below.
    pub_rows = [r for r in status_series(pub.text(), pub.t_start) if r.get("t", 0) >= t_conn + 5]
    targets = [r["target_kbps"] * 1000 for r in pub_rows if r["target_kbps"] is not None]
    c.check("publisher target after 5 s (median of the status lines)", len(targets) >= 8
            and percentile(targets, 0.5) <= link, f"{percentile(targets, 0.5)} of {len(targets)} lines",
            "<= 1000000 (Chromium's test allows 1.1 M)")
    c.check("publisher target after 5 s (highest status line)", bool(targets) and max(targets) <= 1.2 * link,
            max(targets, default=None), "<= 1200000 (what the 200 ms FIFO absorbs, as the offered rate)")
    qd = after["queue_delay_ms"]
    c.check("queue delay p95 after 5 s", qd["p95"] is not None and qd["p95"] <= 250,
            f"p50 {qd['p50']} / p95 {qd['p95']} ms ({qd['count']} packets)", "<= 250 ms")

    finish(artifact_dir, c, {
        "scenario": "1 Mbit/s bottleneck, 200 ms FIFO, on the uplink of swiftrtc publish 1280x720@30",
        "note": "with a 200 ms FIFO the queue delay is bounded by ~200 ms by construction; the offered rate "
                "and the tail drops are what tell whether the sender adapted",
        "afterFiveSeconds": {**after, "in_kbps": kbps(after["in_bps"]), "fwd_kbps": kbps(after["fwd_bps"])},
        "publisher": ps, "player": p, "events": bed.sampler.events,
        "series": {"publisherUp": bed.sampler.series(pub_flow, "up")},
        "publisherStatus": status_series(pub.text(), pub.t_start), "playerStatus": play_rows,
    }, f"1 Mbit/s: offered {kbps(after['in_bps'])} kbps after 5 s (worst 1 s window {kbps(worst and worst['in_bps'])}), "
       f"forwarded {kbps(after['fwd_bps'])}, queue drops {after['dropped_queue']}/{after['packets_in']}, "
       f"qdelay p95 {qd['p95']} ms, target {ps['targetBitrate']}, sent {ps['frameWidth']}x{ps['frameHeight']}")


# ---- 5. step 2.5 → 0.5 → 2.5 Mbit/s ---------------------------------------------------------------------

@pytest.mark.timeout(100)
def test_network_bottleneck_step_swift(make_bed, artifact_dir):
    hi, lo = 2.5 * MBIT, 0.5 * MBIT
    t_down, t_up, total = 10.0, 25.0, 36.0
    bed = make_bed({"pub": ("rate=2.5mbit,queue=200ms", None)}, seed=16)
    pub, t_conn, pub_flow = bed.publish("step", duration=total, extra=("--degradation", "maintain-framerate"))
    player, play_flow = bed.play("step", duration=total - 0.5)
    bed.step_uplink(pub_flow, t_conn, ((t_down, "rate=500kbit"), (t_up, "rate=2.5mbit")))
    play_code = player.wait(timeout=total + 20)
    pub_code = pub.wait(timeout=20)
    bed.close()
    T1, T2, T_end = t_conn + t_down, t_conn + t_up, t_conn + total
    ps, p = publisher_summary(pub.stats()), player_summary(player.stats())
    win = lambda a, b: bed.sampler.window(pub_flow, "up", a, b)  # noqa: E731
    pre = win(t_conn + 6, T1)
    pre_rate = pre["in_bps"] or 0.0

    # Followed down: the earliest sample time after the step from which the next 2 s of 1 s windows
    # each offer <= 1.2 × link (what the 200 ms FIFO absorbs in 1 s) and lose <= 1% of their packets
    # to tail drops, and the whole span to the step back up offers <= the link on average and loses
    # <= 2% of its packets. (Until 2026-12-01 every window to the step back up had to stay under 1%:
    # one CI run failed on a single encoder overshoot 6 s after a 0.4 s follow-down, 15 drops of 1,737
    # — rate control, not following the step; `lateWindowDropMax` reports such bursts.)
    follow_at = None
    candidates = [s["t"] for s in bed.sampler.samples if T1 - 0.01 <= s["t"] <= T2 - 2]
    for t in candidates:
        ws = [w for w in sliding(bed, pub_flow, "up", t, T2) if w["t0"] < t + 2]
        span = win(t, T2)
        if ws and all((w["in_bps"] or 0) <= 1.2 * lo and w["queue_drop_fraction"] <= 0.01 for w in ws) \
                and (span["in_bps"] or 0) <= lo and span["queue_drop_fraction"] <= 0.02:
            follow_at = t
            break
    late_drop_max = max((w["queue_drop_fraction"] for w in sliding(bed, pub_flow, "up", follow_at, T2)), default=0.0) \
        if follow_at is not None else None
    down_s = None if follow_at is None else follow_at - T1
    # Back up: the end of the first 1 s window after T2 whose forwarded rate is >= 75% of the pre-step rate.
    up_s = None
    for w in sliding(bed, pub_flow, "up", T2, T_end):
        if (w["fwd_bps"] or 0) >= 0.75 * pre_rate:
            up_s = w["t1"] - T2
            break
    play_rows = status_series(player.text(), player.t_start)
    pre_w = [r["width"] for r in play_rows if T1 - 3 <= r.get("t", 0) < T1]
    step_w = [r["width"] for r in play_rows if T1 + 1 <= r.get("t", 0) < T2]
    post_w = [r["width"] for r in play_rows if T2 <= r.get("t", 0)]
    pre_width = max(pre_w) if pre_w else None

    c = Checks()
    c.check("publish exits 0", pub_code == 0, pub_code, "0")
    c.check("play exits 0", play_code == 0, play_code, "0")
    c.check("pre-step rate is above the step's link rate (else the step tests nothing)", pre_rate > 1.2 * lo,
            f"{kbps(pre_rate)} kbps", f"> {kbps(1.2 * lo)} kbps")
    c.check("followed down (offered <= link, drops stop) within 2 s of the step",
            down_s is not None and down_s <= 2.0, None if down_s is None else f"{down_s:.1f} s", "<= 2 s")
    c.check("back up: forwarded >= 75% of the pre-step rate within 10 s",
            up_s is not None and up_s <= 10.0 and pre_rate > 0,
            f"{'never' if up_s is None else f'{up_s:.1f} s'} (pre-step {kbps(pre_rate)} kbps)", "<= 10 s")
    dropped = bool(pre_width and step_w and min(step_w) < pre_width)
    recovered = bool(pre_width and post_w and max(post_w) >= pre_width)
    c.check("resolution drops during the step and recovers after (player frameWidth, 1 s status lines)",
            dropped and recovered,
            f"before {pre_width}, during min {min(step_w) if step_w else None}, after max {max(post_w) if post_w else None}; "
            f"publisher qualityLimitationResolutionChanges {ps['qualityLimitationResolutionChanges']}",
            "drop and recover")
    c.check("publisher qualityLimitationResolutionChanges", (ps["qualityLimitationResolutionChanges"] or 0) >= 2,
            ps["qualityLimitationResolutionChanges"], ">= 2")

    phases = {"pre [6,10)": pre, "step [10,25)": win(T1, T2), "step settled [12,25)": win(T1 + 2, T2),
              "after [25,36)": win(T2, T_end)}
    finish(artifact_dir, c, {
        "scenario": "uplink of swiftrtc publish 1280x720@30: 2.5 Mbit/s → 500 kbit/s at 10 s → 2.5 Mbit/s at 25 s "
                    "(200 ms FIFO); degradationPreference maintain-framerate (the resolution gives way)",
        "followDownSeconds": down_s, "backUpSeconds": up_s, "preStepKbps": kbps(pre_rate), "lateWindowDropMax": late_drop_max,
        "phases": {k: {**v, "in_kbps": kbps(v["in_bps"]), "fwd_kbps": kbps(v["fwd_bps"])} for k, v in phases.items()},
        "publisher": ps, "player": p, "events": bed.sampler.events,
        "series": {"publisherUp": bed.sampler.series(pub_flow, "up")},
        "publisherStatus": status_series(pub.text(), pub.t_start), "playerStatus": play_rows,
    }, f"step: pre {kbps(pre_rate)} kbps, followed down after {down_s} s, back up after {up_s} s; "
       f"widths {pre_width} → {min(step_w) if step_w else None} → {max(post_w) if post_w else None}; "
       + "; ".join(f"{k}: in {kbps(v['in_bps'])} fwd {kbps(v['fwd_bps'])} qdrop {v['dropped_queue']}"
                   for k, v in phases.items()))


# ---- 6. Chromium publishing through 1 Mbit/s ---------------------------------------------------------

@pytest.mark.timeout(75)
def test_network_bottleneck_1mbit_chromium(make_bed, browser, artifact_dir, logs):
    link = 1.0 * MBIT
    bed = make_bed({"pub": ("rate=1mbit,queue=200ms", None)}, seed=17)
    page, t_conn, pub_flow = bed.publish_chromium(browser, "cam-bneck")
    samples = []
    try:
        end = time.monotonic() + MEDIA_SECONDS
        while time.monotonic() < end:
            s = page.evaluate(NET_STATS_JS, timeout=10)
            if s:
                s["tNet"] = bed.net.now()
                samples.append(s)
            time.sleep(0.5)
    finally:
        close_page(browser, page)
    t_end = t_conn + MEDIA_SECONDS
    bed.close()
    after = bed.sampler.window(pub_flow, "up", t_conn + 5, t_end)
    windows = sliding(bed, pub_flow, "up", t_conn + 5, t_end)
    worst = max(windows, key=lambda w: w["in_bps"] or 0) if windows else None
    late = [s for s in samples if s["tNet"] >= t_conn + 5]
    targets = [(s.get("outbound") or {}).get("targetBitrate") for s in late]
    aobs = [(s.get("pair") or {}).get("availableOutgoingBitrate") for s in late]
    peak_aob = max([(s.get("pair") or {}).get("availableOutgoingBitrate") or 0 for s in samples], default=0)
    qd = after["queue_delay_ms"]

    c = Checks()
    c.check("Chromium stayed connected", bool(samples) and samples[-1].get("connectionState") == "connected",
            samples[-1].get("connectionState") if samples else None, "connected")
    c.check("Chromium learned a bandwidth estimate from the relay (availableOutgoingBitrate rose above 300 kbps)",
            peak_aob > 300_000, peak_aob, "> 300000")
    c.check("Chromium outbound targetBitrate after 5 s (median)", percentile(targets, 0.5) is not None
            and percentile(targets, 0.5) <= 1.1 * link, percentile(targets, 0.5), "<= ~1 Mbit/s (1.1 M)")
    c.check("Chromium availableOutgoingBitrate after 5 s (median)", percentile(aobs, 0.5) is not None
            and percentile(aobs, 0.5) <= 1.1 * link, percentile(aobs, 0.5), "<= ~1 Mbit/s (1.1 M)")
    c.check("Chromium's offered rate, mean over [5 s, end]", after["in_bps"] is not None and after["in_bps"] <= link,
            f"{kbps(after['in_bps'])} kbps", "<= 1000 kbps")
    c.check("Chromium's offered rate, every 1 s window after 5 s", worst is not None and worst["in_bps"] <= 1.2 * link,
            f"max {kbps(worst and worst['in_bps'])} kbps", "<= 1200 kbps")
    c.check("queue delay after 5 s (low: a delay-based estimate keeps the FIFO short of full)",
            qd["p95"] is not None and qd["p95"] <= 150, f"p50 {qd['p50']} / p95 {qd['p95']} ms", "p95 <= 150 ms")
    finish(artifact_dir, c, {
        "scenario": "Chromium fake camera 1280x720@30 publishing (WHIP) through a 1 Mbit/s, 200 ms FIFO uplink",
        "afterFiveSeconds": {**after, "in_kbps": kbps(after["in_bps"]), "fwd_kbps": kbps(after["fwd_bps"])},
        "chromiumSamples": samples, "events": bed.sampler.events,
        "series": {"publisherUp": bed.sampler.series(pub_flow, "up")},
    }, f"Chromium 1 Mbit/s: offered {kbps(after['in_bps'])} kbps after 5 s (worst 1 s {kbps(worst and worst['in_bps'])}), "
       f"queue drops {after['dropped_queue']}/{after['packets_in']}, qdelay p50/p95 {qd['p50']}/{qd['p95']} ms, "
       f"target median {percentile(targets, 0.5)}, available median {percentile(aobs, 0.5)}")
