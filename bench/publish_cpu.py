#!/usr/bin/env python3
"""CPU per published frame: `swiftrtc publish` vs Chromium, measured in one run (issue 20 part 3).

Both publish 1280x720@30 video and audio over WHIP to the same relay (`swiftrtc serve` on loopback,
nobody playing): Swift its test pattern (`--source testsrc`) and a tone, Chromium its fake camera
and microphone from the relay's /players/ page, with the codec pinned by `setCodecPreferences` and
the page's local preview detached (swiftrtc publish draws none).
Per codec (H.264, VP8) and sender, CPU = user + system time of the sender's whole process tree
(/proc, every Chromium process: browser, renderer, GPU, utilities) over a window of WINDOW seconds
that starts WARMUP seconds after the publisher connected (start-up excluded for both), divided by
the frames it sent in that window (Swift: framesEncoded from its status line's counter file;
Chromium: getStats framesSent at the window's ends). Ratio row: Swift / Chromium per codec.

The bench measures; a worse result does not fail it. Exit 2 if a peer is missing, 1 if a run
could not be made. Run it in a loopback-only namespace (make bench does):
  unshare --net bash -c 'ip link set lo up && exec .venv/bin/python bench/publish_cpu.py \\
      --swiftrtc .build/release/swiftrtc --json artifacts/bench-publish-cpu.json'
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
import traceback
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from interop.cdp import Browser, ChromiumNotFound  # noqa: E402
from interop.network_helpers import NET_STATS_JS  # noqa: E402
from interop.relay_helpers import Relay, SwiftRun, close_page, open_player_page  # noqa: E402
from interop.test_network import FAKE_CAMERA_FLAGS  # noqa: E402

WARMUP = 4.0
WINDOW = 20.0
TICKS = os.sysconf("SC_CLK_TCK")
CODECS = {"h264": "video/H264", "vp8": "video/VP8"}


def tree_cpu_seconds(root: int) -> float:
    """utime + stime of `root` and every live descendant (/proc/<pid>/stat)."""
    parents: dict[int, int] = {}
    times: dict[int, float] = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        fields = stat[stat.rfind(")") + 2:].split()
        pid = int(entry)
        parents[pid] = int(fields[1])
        times[pid] = (int(fields[11]) + int(fields[12])) / TICKS
    total, wanted = 0.0, {root}
    changed = True
    while changed:
        changed = False
        for pid, ppid in parents.items():
            if ppid in wanted and pid not in wanted:
                wanted.add(pid)
                changed = True
    for pid in wanted:
        total += times.get(pid, 0.0)
    return total


def swift_frames(run: SwiftRun) -> int:
    """Frames encoded so far: the sum of the status lines' fps (one line a second)."""
    import re
    total = 0.0
    for m in re.finditer(r"(\d+\.\d) fps", run.text()):
        total += float(m.group(1))
    return int(total)


def measure_swift(swift_bin: Path, relay: Relay, codec: str, art: Path) -> dict:
    stream = f"swift-{codec}"
    run = SwiftRun(swift_bin, "publish", [relay.whip_url("live", stream), "--source", "testsrc", "--codec", codec,
                                          "--size", "1280x720", "--fps", "30", "--audio", "tone",
                                          "--duration", str(WARMUP + WINDOW + 3)], art, f"publish-{codec}")
    try:
        relay.wait_event(rf"publisher \S+ connected \(live/{stream}\)", timeout=20)
        time.sleep(WARMUP)
        cpu0, frames0, t0 = tree_cpu_seconds(run.pid), swift_frames(run), time.monotonic()
        time.sleep(WINDOW)
        cpu1, frames1, t1 = tree_cpu_seconds(run.pid), swift_frames(run), time.monotonic()
        code = run.wait(timeout=30)
        stats = run.stats()
    finally:
        run.process.close()
    frames = frames1 - frames0
    out = stats.get("outbound") or {}
    return {"cpuSeconds": round(cpu1 - cpu0, 3), "frames": frames, "seconds": round(t1 - t0, 2),
            "cpuMsPerFrame": round(1000 * (cpu1 - cpu0) / frames, 3) if frames else None, "exit": code,
            "size": f"{out.get('frameWidth')}x{out.get('frameHeight')}", "targetBitrate": out.get("targetBitrate")}


def measure_chromium(relay: Relay, codec: str) -> dict:
    browser = Browser.launch(extra_flags=FAKE_CAMERA_FLAGS)
    try:
        page = open_player_page(browser, relay, "live", f"chromium-{codec}")
        try:
            mime = CODECS[codec]
            page.evaluate("""(() => {
              const add = RTCPeerConnection.prototype.addTransceiver;
              RTCPeerConnection.prototype.addTransceiver = function (t, init) {
                const tr = add.call(this, t, init);
                if (tr.sender.track && tr.sender.track.kind === 'video') {
                  const cs = RTCRtpSender.getCapabilities('video').codecs;
                  tr.setCodecPreferences(cs.filter(c => c.mimeType === %s).concat(cs.filter(c => c.mimeType !== %s)));
                }
                return tr;
              };
              return true; })()""" % (json.dumps(mime), json.dumps(mime)))
            page.evaluate("document.getElementById('publish').click(); true")
            relay.wait_event(rf"publisher \S+ connected \(live/chromium-{codec}\)", timeout=20)
            # No local preview: swiftrtc publish draws none, and rendering it is the GPU process's work.
            page.evaluate("document.querySelectorAll('video').forEach(v => { v.srcObject = null; }); true")
            time.sleep(WARMUP)

            def sent():
                s = page.evaluate(NET_STATS_JS, timeout=10) or {}
                return (s.get("outbound") or {})

            o0 = sent()
            cpu0, t0 = tree_cpu_seconds(browser.proc.pid), time.monotonic()
            time.sleep(WINDOW)
            cpu1, t1 = tree_cpu_seconds(browser.proc.pid), time.monotonic()
            o1 = sent()
        finally:
            close_page(browser, page)
    finally:
        browser.close()
    frames = (o1.get("framesSent") or 0) - (o0.get("framesSent") or 0)
    return {"cpuSeconds": round(cpu1 - cpu0, 3), "frames": frames, "seconds": round(t1 - t0, 2),
            "cpuMsPerFrame": round(1000 * (cpu1 - cpu0) / frames, 3) if frames else None,
            "size": f"{o1.get('frameWidth')}x{o1.get('frameHeight')}", "targetBitrate": o1.get("targetBitrate")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--swiftrtc", required=True)
    ap.add_argument("--json", default="artifacts/bench-publish-cpu.json")
    ap.add_argument("--codecs", default="h264,vp8")
    ap.add_argument("--senders", default="swift,chromium")
    args = ap.parse_args()
    swift_bin = Path(args.swiftrtc).resolve()
    if not swift_bin.is_file():
        print(f"publish_cpu: FATAL: no swiftrtc binary at {swift_bin}", file=sys.stderr)
        return 2
    json_path = Path(args.json)
    art = json_path.with_suffix("")
    art.mkdir(parents=True, exist_ok=True)
    results: dict = {"windowSeconds": WINDOW, "warmupSeconds": WARMUP, "cores": os.cpu_count(), "runs": {}}
    failed = False
    relay = Relay(swift_bin, art / "relay.log")
    try:
        for codec in args.codecs.split(","):
            for sender in args.senders.split(","):
                try:
                    r = measure_swift(swift_bin, relay, codec, art) if sender == "swift" else measure_chromium(relay, codec)
                except ChromiumNotFound as exc:
                    print(f"publish_cpu: FATAL: {exc}", file=sys.stderr)
                    return 2
                except Exception:
                    traceback.print_exc()
                    failed = True
                    continue
                results["runs"][f"{sender}.{codec}"] = r
                print(f"publish {codec} {sender:8s}: {r['cpuMsPerFrame']} ms CPU/frame ({r['cpuSeconds']} s, "
                      f"{r['frames']} frames in {r['seconds']} s, {r['size']}, target {r['targetBitrate']})", flush=True)
            s, c = results["runs"].get(f"swift.{codec}"), results["runs"].get(f"chromium.{codec}")
            if s and c and s["cpuMsPerFrame"] and c["cpuMsPerFrame"]:
                ratio = round(s["cpuMsPerFrame"] / c["cpuMsPerFrame"], 3)
                results[f"ratio.{codec}"] = ratio
                print(f"publish {codec}: Swift / Chromium CPU per frame = {ratio} (target <= 0.5)", flush=True)
    finally:
        relay.close()
    json_path.write_text(json.dumps(results, indent=2))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
