#!/usr/bin/env python3
"""Side-by-side network benchmark: Chromium vs `swiftrtc publish` as the sender, same everything else.

For each impairment row the same relay (`swiftrtc serve` behind interop/netem.py, per-flow links by
role as in interop/test_network.py), the same receiver (`swiftrtc play --stats-json`) and the same netem
settings and seed are run twice: once with Chromium publishing its fake camera (1280x720@30, WHIP from
the relay's /players/ page, audio too), once with `swiftrtc publish --source testsrc --size 1280x720
--fps 30` (H.264, tone audio). Each run plays MEDIA_SECONDS (15) of media. Rows:

  clean        no impairment
  pub-lossy    5% random loss + 25±10 ms on the publisher's leg (both directions of its flow)
  both-lossy   the same on the publisher's and the player's legs
  pub-1mbit    1 Mbit/s bottleneck, 200 ms FIFO, on the publisher's uplink
  pub-500kbit  500 kbit/s bottleneck, 200 ms FIFO, on the publisher's uplink

Measured per run (the "media window" = play's first decoded frame → the moment its stats file appears):
  fps         play's framesDecoded / media window
  freeze      play's freezeSecondsOver500Ms (gaps > 500 ms) and W3C inbound totalFreezesDuration
  p95         play's patternLatencyMsP95 (capture → decode, read off the test pattern): Swift sender
              only; Chromium's fake camera carries no pattern, so it is null
  fwd         the publisher flow's mean forwarded (post-bottleneck) UDP payload rate from netem over the
              media window, and its ratio to the bottleneck (bottleneck rows)
  target/avail the sender's final outbound targetBitrate / candidate-pair availableOutgoingBitrate
              (Chromium: last getStats sample; Swift: publish --stats-json at exit)
Verdict per row (Swift vs Chromium): fps >= Chromium's - 1 fps, freeze (> 500 ms) <= Chromium's + 0.1 s,
and on bottleneck rows Swift's forwarded rate >= 85% of the bottleneck.

The bench measures: a worse result does not fail it. It exits 2 if a peer is missing (the swiftrtc
binary, Chromium) and 1 if a run could not be carried out (no connection, a crash): loud, not a result.
Run it in a loopback-only network namespace (as `make bench` does):
  unshare --net bash -c 'ip link set lo up && exec .venv/bin/python bench/network_bench.py \
      --swiftrtc .build/release/swiftrtc --json artifacts/bench-network.json'
Per-run artifacts (relay/publish/play logs and JSON, netem-stats.json, run.json) go to --artifacts.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
import traceback
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from interop.cdp import Browser, ChromiumNotFound, find_chromium  # noqa: E402
from interop.network_helpers import MBIT, NET_STATS_JS, interpolate, status_series  # noqa: E402
from interop.relay_helpers import close_page, open_player_page, page_log  # noqa: E402
from interop.test_network import (FAKE_CAMERA_FLAGS, LOSSY, Bed, player_summary,  # noqa: E402
                                  publisher_summary)

MEDIA_SECONDS = 15.0
LEAD_SECONDS = 1.0  # publisher connected → player started

ROWS = [  # (name, description, roles for RoleFlows, bottleneck bit/s or None, seed)
    ("clean", "no impairment", {}, None, 21),
    ("pub-lossy", "5% loss + 25±10 ms, publisher's leg", {"pub": (LOSSY, LOSSY)}, None, 22),
    ("both-lossy", "5% loss + 25±10 ms, both legs", {"pub": (LOSSY, LOSSY), "play": (LOSSY, LOSSY)}, None, 23),
    ("pub-1mbit", "1 Mbit/s, 200 ms FIFO, publisher's uplink", {"pub": ("rate=1mbit,queue=200ms", None)}, 1.0 * MBIT, 24),
    ("pub-500kbit", "500 kbit/s, 200 ms FIFO, publisher's uplink", {"pub": ("rate=500kbit,queue=200ms", None)},
     0.5 * MBIT, 25),
]
SENDERS = ("chromium", "swift")
FPS_TOLERANCE = 1.0  # fps
FREEZE_TOLERANCE = 0.1  # s
BOTTLENECK_MIN_RATIO = 0.85


class RunError(RuntimeError):
    """A run could not be carried out (not a bad measurement)."""


def log(msg: str) -> None:
    print(f"[network-bench {time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def rnd(v, n=1):
    return None if v is None else round(v, n)


# ---- one run ------------------------------------------------------------------------------------------

def play_and_wait(bed: Bed, stream: str, chromium_page=None) -> dict:
    """Starts `swiftrtc play` LEAD_SECONDS after the publisher connected, waits for it to exit; samples
    Chromium's getStats every 0.5 s meanwhile (if a page is given). Returns the window and samples."""
    player, play_flow = bed.play(stream, duration=MEDIA_SECONDS)
    samples, t_stats, next_sample = [], None, 0.0
    deadline = time.monotonic() + MEDIA_SECONDS + 25
    while True:
        if t_stats is None and player.json_path.exists():
            t_stats = bed.net.now()  # play writes its final stats just before it exits
        if player.process.proc.poll() is not None:
            if t_stats is None:
                t_stats = bed.net.now()
            break
        if time.monotonic() > deadline:
            raise RunError(f"swiftrtc play still running {MEDIA_SECONDS + 25:.0f} s after it started:\n"
                           f"{player.text()[-2000:]}")
        if chromium_page is not None and time.monotonic() >= next_sample:
            next_sample = time.monotonic() + 0.5
            s = chromium_page.evaluate(NET_STATS_JS, timeout=10)
            if s:
                s["tNet"] = bed.net.now()
                samples.append(s)
        time.sleep(0.05)
    if chromium_page is not None:
        s = chromium_page.evaluate(NET_STATS_JS, timeout=10)
        if s:
            s["tNet"] = bed.net.now()
            samples.append(s)
    code = player.process.proc.returncode
    if not player.json_path.exists():
        raise RunError(f"swiftrtc play exited {code} without its stats JSON:\n{player.text()[-2000:]}")
    return {"player": player, "play_flow": play_flow, "t_stats": t_stats, "play_code": code, "samples": samples}


def measure(bed: Bed, row: tuple, sender: str, pub_flow: int, t_conn: float, r: dict, sender_doc: dict) -> dict:
    name, _desc, _roles, link, _seed = row
    player = r["player"]
    play = player.stats()
    p = player_summary(play)
    inbound = p["inbound"] or {}
    t_first = player.t_start + (play.get("firstFrameMs") or 0) / 1000 if play.get("firstFrameMs") is not None else None
    t_end = r["t_stats"]
    window = (t_end - t_first) if t_first is not None else None
    decoded = play.get("framesDecoded") or 0
    fps = decoded / window if window and window > 0 else 0.0
    w = bed.sampler.window(pub_flow, "up", t_first if t_first is not None else t_conn, t_end)
    settled = bed.sampler.window(pub_flow, "up", t_conn + 5, t_end)
    fwd = w["fwd_bps"]
    return {
        "row": name, "sender": sender,
        "playExit": r["play_code"],
        "mediaWindowSeconds": rnd(window, 2),
        "framesDecoded": decoded,
        "fps": round(fps, 2),
        "receivedSize": f"{p.get('frameWidth')}x{p.get('frameHeight')}",
        "freezeSecondsOver500Ms": rnd(p.get("freezeSecondsOver500Ms"), 3),
        "freezesOver500Ms": p.get("freezesOver500Ms"),
        "longestFrameGapMs": rnd(p.get("longestFrameGapMs"), 0),
        "w3cFreezeCount": inbound.get("freezeCount"),
        "w3cTotalFreezesDuration": rnd(inbound.get("totalFreezesDuration"), 3),
        "latencyMsP95": p.get("patternLatencyMsP95") if sender == "swift" else None,
        "latencyMsP50": p.get("patternLatencyMsP50") if sender == "swift" else None,
        "latencyNote": None if sender == "swift" else
        "null: Chromium's fake camera carries no SwiftRTC test pattern, so capture→decode latency is not measurable",
        "packetsLost": inbound.get("packetsLost"), "nackCount": inbound.get("nackCount"), "pliCount": inbound.get("pliCount"),
        "forwardedKbps": rnd(fwd / 1000 if fwd is not None else None),
        "offeredKbps": rnd(w["in_bps"] / 1000 if w["in_bps"] is not None else None),
        "bottleneckKbps": None if link is None else link / 1000,
        "forwardedOverBottleneck": None if link is None or fwd is None else round(fwd / link, 3),
        "settledForwardedKbps": rnd(settled["fwd_bps"] / 1000 if settled["fwd_bps"] is not None else None),
        "queueDropFraction": round(w["queue_drop_fraction"], 4),
        "queueDelayMs": w["queue_delay_ms"],
        "lossDropped": w["dropped_loss"], "packetsIn": w["packets_in"],
        **sender_doc,
    }


def run_swift(bed: Bed, row: tuple) -> dict:
    stream = f"sw-{row[0]}"
    pub, t_conn, pub_flow = bed.publish(stream, duration=MEDIA_SECONDS + LEAD_SECONDS + 5)
    time.sleep(max(0.0, t_conn + LEAD_SECONDS - bed.net.now()))
    r = play_and_wait(bed, stream)
    # Stop the publisher now (SIGINT: it stops cleanly and writes its stats), so its "final" numbers are
    # taken when play ended, as Chromium's last getStats sample is.
    if pub.process.proc.poll() is None:
        os.kill(pub.pid, signal.SIGINT)
    pub_code = pub.wait(timeout=20)
    ps = publisher_summary(pub.stats())
    t_first_end = (r["player"].t_start, r["t_stats"])
    rows = [x for x in status_series(pub.text(), pub.t_start) if t_first_end[0] <= x.get("t", 0) <= t_first_end[1]]
    sender_doc = {"senderExit": pub_code,
                  "senderFps": rnd(sum(x["fps"] for x in rows) / len(rows)) if rows else None,
                  "senderSize": f"{ps.get('frameWidth')}x{ps.get('frameHeight')}",
                  "targetKbps": rnd(ps["targetBitrate"] / 1000 if ps.get("targetBitrate") is not None else None),
                  "availableKbps": rnd(ps["availableOutgoingBitrate"] / 1000
                                       if ps.get("availableOutgoingBitrate") is not None else None),
                  "qualityLimitationResolutionChanges": ps.get("qualityLimitationResolutionChanges"),
                  "retransmittedPacketsSent": ps.get("retransmittedPacketsSent")}
    return measure(bed, row, "swift", pub_flow, t_conn, r, sender_doc)


def run_chromium(bed: Bed, row: tuple, browser: Browser) -> dict:
    stream = f"cr-{row[0]}"
    page = open_player_page(browser, bed.relay, "live", stream)
    try:
        bed.roles.expect("pub")
        page.evaluate("document.getElementById('publish').click(); true")
        try:
            page.wait_for("document.getElementById('log').textContent.includes('publishing')", timeout=20)
            bed.relay.wait_event(rf"publisher \S+ connected \(live/{stream}\)", timeout=20)
        except Exception as exc:
            raise RunError(f"Chromium did not publish: {exc}; page log: {page_log(page)!r}; "
                           f"console: {page.console[-10:]}") from exc
        t_conn = bed.sampler.mark("publisher connected")
        pub_flow = bed.roles.wait_flow("pub")
        time.sleep(max(0.0, t_conn + LEAD_SECONDS - bed.net.now()))
        r = play_and_wait(bed, stream, chromium_page=page)
    finally:
        try:
            (bed.dir / "page-log.txt").write_text(page_log(page))
        except Exception:
            pass
        close_page(browser, page)
    samples = r["samples"]
    last_out = next((s["outbound"] for s in reversed(samples) if s.get("outbound")), {}) or {}
    last_pair = next((s["pair"] for s in reversed(samples) if s.get("pair")), {}) or {}
    t_first = r["player"].t_start + ((r["player"].stats().get("firstFrameMs") or 0) / 1000)
    sent = [(s["tNet"], (s.get("outbound") or {}).get("framesSent")) for s in samples]
    a, b = interpolate(sent, t_first), interpolate(sent, r["t_stats"])
    span = r["t_stats"] - t_first
    tgt, aob = last_out.get("targetBitrate"), last_pair.get("availableOutgoingBitrate")
    sender_doc = {"senderExit": None,
                  "senderFps": rnd((b - a) / span) if a is not None and b is not None and span > 0 else None,
                  "senderSize": f"{last_out.get('frameWidth')}x{last_out.get('frameHeight')}",
                  "targetKbps": rnd(tgt / 1000 if tgt is not None else None),
                  "availableKbps": rnd(aob / 1000 if aob is not None else None),
                  "qualityLimitationReason": last_out.get("qualityLimitationReason"),
                  "qualityLimitationResolutionChanges": last_out.get("qualityLimitationResolutionChanges"),
                  "retransmittedPacketsSent": last_out.get("retransmittedPacketsSent")}
    doc = measure(bed, row, "chromium", pub_flow, t_conn, r, sender_doc)
    (bed.dir / "chromium-samples.json").write_text(json.dumps(samples, indent=1, default=str))
    return doc


def run_one(swift_bin: Path, art: Path, row: tuple, sender: str, browser: Browser | None) -> dict:
    name, desc, roles, link, seed = row
    d = art / f"{name}-{sender}"
    d.mkdir(parents=True, exist_ok=True)
    for f in d.iterdir():
        if f.is_file():
            f.unlink()
    logs: list = []
    t0 = time.monotonic()
    bed = Bed(swift_bin, d, logs, roles, seed=seed)
    try:
        doc = run_chromium(bed, row, browser) if sender == "chromium" else run_swift(bed, row)
    finally:
        bed.close()
    doc["runSeconds"] = round(time.monotonic() - t0, 1)
    doc["impairment"] = desc
    doc["series"] = {"publisherUp": bed.sampler.series(bed.roles.flows_of("pub")[0], "up")
                     if bed.roles.flows_of("pub") else []}
    (d / "run.json").write_text(json.dumps(doc, indent=1, default=str))
    doc.pop("series")
    return doc


# ---- table ----------------------------------------------------------------------------------------------

def verdict(row: tuple, c: dict | None, s: dict | None) -> dict:
    link = row[3]
    if not c or not s or c.get("error") or s.get("error"):
        return {"ok": None, "text": "n/a (run failed)", "worse": []}
    worse = []
    if s["fps"] < c["fps"] - FPS_TOLERANCE:
        worse.append(f"fps {s['fps']:.1f} < {c['fps']:.1f}")
    sf, cf = s["freezeSecondsOver500Ms"] or 0.0, c["freezeSecondsOver500Ms"] or 0.0
    if sf > cf + FREEZE_TOLERANCE:
        worse.append(f"freeze {sf:.2f}s > {cf:.2f}s")
    if link is not None:
        ratio = s["forwardedOverBottleneck"] or 0.0
        if ratio < BOTTLENECK_MIN_RATIO:
            worse.append(f"bitrate {100 * ratio:.0f}% of link < {100 * BOTTLENECK_MIN_RATIO:.0f}%")
    return {"ok": not worse, "text": "OK" if not worse else "WORSE: " + "; ".join(worse), "worse": worse}


def fmt(v, spec="{:.1f}", none="-"):
    return none if v is None else spec.format(v)


def cell(d: dict | None) -> str:
    if not d:
        return f"{'(not run)':<44}"
    if d.get("error"):
        return f"{'ERROR':<44}"
    ratio = d["forwardedOverBottleneck"]
    fwd = fmt(d["forwardedKbps"], "{:.0f}") + (f"({100 * ratio:.0f}%)" if ratio is not None else "")
    tgt = f"{fmt(d['targetKbps'], '{:.0f}')}/{fmt(d['availableKbps'], '{:.0f}')}"
    return (f"{d['fps']:5.1f} {fmt(d['freezeSecondsOver500Ms'], '{:.2f}'):>5}/{fmt(d['w3cTotalFreezesDuration'], '{:.2f}'):<5}"
            f" {fmt(d['latencyMsP95'], '{:.0f}'):>4} {fwd:>10} {tgt:>9}")


def table(results: dict) -> str:
    head = "fps   frz>500/W3C  p95    fwd kbps  tgt/avail"
    lines = [f"{'row':<12} | {'Chromium sender':<44} | {'Swift sender':<44} | Swift vs Chromium",
             f"{'':<12} | {head:<44} | {head:<44} |", "-" * 140]
    for row in ROWS:
        if row[0] not in results:
            continue
        r = results[row[0]]
        v = r.get("verdict", {}).get("text", "")
        lines.append(f"{row[0]:<12} | {cell(r.get('chromium'))} | {cell(r.get('swift'))} | {v}")
    lines.append("fps = play framesDecoded / media window; frz = freeze s (gaps > 500 ms) / W3C totalFreezesDuration; "
                 "p95 = capture→decode latency ms")
    lines.append("(test pattern: Swift sender only, Chromium's fake camera has none → '-'); fwd = netem forwarded rate "
                 "of the publisher flow (% of bottleneck); tgt/avail = sender's final target/available kbps")
    return "\n".join(lines)


# ---- main -------------------------------------------------------------------------------------------------

def main() -> int:
    global MEDIA_SECONDS
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--swiftrtc", required=True, help="swiftrtc CLI (serve, publish, play)")
    ap.add_argument("--json", default="artifacts/bench-network.json")
    ap.add_argument("--artifacts", default=None, help="per-run artifacts (default: <json without .json>/)")
    ap.add_argument("--rows", default=",".join(r[0] for r in ROWS), help="comma-separated subset of rows")
    ap.add_argument("--senders", default=",".join(SENDERS), help="chromium,swift (a subset for trials)")
    ap.add_argument("--media-seconds", type=float, default=MEDIA_SECONDS)
    args = ap.parse_args()
    MEDIA_SECONDS = args.media_seconds

    swift_bin = Path(args.swiftrtc).resolve()
    if not (swift_bin.is_file() and os.access(swift_bin, os.X_OK)):
        print(f"network_bench: FATAL: swiftrtc binary not found or not executable at {swift_bin} "
              "(make bench builds .build/release/swiftrtc)", file=sys.stderr)
        return 2
    senders = [s for s in args.senders.split(",") if s]
    if any(s not in SENDERS for s in senders):
        ap.error(f"--senders: choose from {SENDERS}")
    wanted = [r for r in ROWS if r[0] in args.rows.split(",")]
    browser = None
    if "chromium" in senders:
        try:
            chromium = find_chromium()
        except ChromiumNotFound as exc:
            print(f"network_bench: FATAL: {exc}", file=sys.stderr)
            return 2
        try:
            browser = Browser.launch(extra_flags=FAKE_CAMERA_FLAGS)
        except Exception as exc:
            print(f"network_bench: FATAL: Chromium ({chromium}) did not start: {exc}", file=sys.stderr)
            return 2
    json_path = Path(args.json)
    art = Path(args.artifacts) if args.artifacts else json_path.with_suffix("")
    art.mkdir(parents=True, exist_ok=True)
    json_path.parent.mkdir(parents=True, exist_ok=True)

    t_start = time.monotonic()
    results: dict = {}
    errors = []
    try:
        for row in wanted:  # sequential: 2 cores
            results[row[0]] = {"impairment": row[1], "bottleneckKbps": None if row[3] is None else row[3] / 1000}
            for sender in senders:
                log(f"{row[0]} ({row[1]}), sender {sender} ...")
                try:
                    doc = run_one(swift_bin, art, row, sender, browser)
                    log(f"  fps {doc['fps']} freeze {doc['freezeSecondsOver500Ms']} s (W3C {doc['w3cTotalFreezesDuration']}) "
                        f"p95 {doc['latencyMsP95']} fwd {doc['forwardedKbps']} kbps target {doc['targetKbps']} "
                        f"avail {doc['availableKbps']} ({doc['runSeconds']} s)")
                except Exception as exc:  # a run that could not be carried out: reported, exit 1
                    tb = traceback.format_exc()
                    log(f"  ERROR: {exc!r}\n{tb}")
                    doc = {"row": row[0], "sender": sender, "error": f"{exc!r}", "traceback": tb[-4000:]}
                    errors.append(f"{row[0]}/{sender}: {exc!r}")
                results[row[0]][sender] = doc
            results[row[0]]["verdict"] = verdict(row, results[row[0]].get("chromium"), results[row[0]].get("swift"))
    finally:
        if browser is not None:
            browser.close()
    total = time.monotonic() - t_start
    out = {
        "benchmark": "network side-by-side: Chromium vs swiftrtc publish as the sender",
        "swiftrtc": str(swift_bin), "chromium": find_chromium() if browser else None,
        "mediaSeconds": MEDIA_SECONDS, "totalSeconds": round(total, 1),
        "method": {
            "relay": "swiftrtc serve behind interop/netem.py (per-flow links by role, seeded; same seed for both senders)",
            "receiver": "swiftrtc play --stats-json, started 1 s after the publisher connected",
            "chromiumSender": "Chromium fake camera 1280x720@30 (--use-fake-device-for-media-stream=fps=30) + audio, WHIP "
                              "from the relay's /players/ page",
            "swiftSender": "swiftrtc publish --source testsrc --codec h264 --size 1280x720 --fps 30 --audio tone",
            "fps": "play framesDecoded / (stats-file time − first decoded frame)",
            "freeze": "play freezeSecondsOver500Ms (gaps > 500 ms); W3C inbound totalFreezesDuration alongside",
            "latency": "play patternLatencyMsP95 (test pattern capture → decode); null for Chromium (no pattern)",
            "bitrate": "netem forwarded UDP payload rate of the publisher's uplink over the media window; "
                       "ratio to the bottleneck",
            "verdict": f"Swift fps >= Chromium's - {FPS_TOLERANCE} fps, freeze <= Chromium's + {FREEZE_TOLERANCE} s, "
                       f"bottleneck rows: Swift forwarded >= {BOTTLENECK_MIN_RATIO:.0%} of the link",
        },
        "rows": results, "errors": errors,
    }
    json_path.write_text(json.dumps(out, indent=2, default=str))
    print(table(results))
    print(f"network bench: {len(wanted)} rows x {len(senders)} senders in {total:.0f} s; JSON {json_path}; "
          f"artifacts {art}/")
    if errors:
        print("network bench: FAILED runs (not results — the bench could not measure them):\n  "
              + "\n  ".join(errors), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
