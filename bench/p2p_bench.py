#!/usr/bin/env python3
"""P2P call benchmark (issue 11), Swift and Chromium measured the same way, one run:

  signal.rtt          a message through `swiftrtc signal` and back: client A sends an "offer",
                      B answers the moment it arrives, A times send → answer received
                      (WebSocket clients in the room protocol, 200 round trips, p50/p95)
  offer→first frame   the offerer's time from starting its offer (the other peer joined) to its
                      first frame of the peer's video: two `swiftrtc p2p` (--stats-json
                      offerToFirstFrameMs: to the first decoded frame) vs two Chromium pages on
                      the server's /call/ page (window.timing: to the first frame presented),
                      median of --runs

Prints a table and writes --json. Exits 2 if swiftrtc or Chromium is missing, 1 if a run could
not be made. Run it in a loopback-only network namespace (make bench does).
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from interop.conftest import ManagedProcess  # noqa: E402
from interop.relay_helpers import close_page  # noqa: E402
from interop.ws_client import RawPeer  # noqa: E402


def signaling_rtt(ws: str, count: int) -> list[float]:
    a, b = RawPeer(ws + "?room=bench-rtt"), RawPeer(ws + "?room=bench-rtt")
    try:
        assert json.loads(a.text())["type"] == "joined" and json.loads(b.text())["type"] == "joined"
        assert json.loads(a.text())["type"] == "peer-joined"
        times = []
        for i in range(count):
            started = time.perf_counter()
            a.send_frame(1, json.dumps({"type": "offer", "sdp": f"v=0 {i}"}).encode())
            assert json.loads(b.text())["type"] == "offer"
            b.send_frame(1, json.dumps({"type": "answer", "sdp": f"v=0 {i}"}).encode())
            assert json.loads(a.text())["type"] == "answer"
            times.append((time.perf_counter() - started) * 1000)
        return times
    finally:
        a.close()
        b.close()


def swift_offer_to_first_frame(swiftrtc: str, ws: str, room: str, work: Path) -> float:
    common = ["--source", "testsrc", "--size", "640x360", "--fps", "30", "--duration", "6", "--speaker", "none"]
    a = ManagedProcess([swiftrtc, "p2p", f"{ws}?room={room}", *common, "--stats-json", str(work / f"{room}-a.json")],
                       work / f"{room}-a.log")
    try:
        a.wait_for_line(r"p2p: waiting for the other peer", timeout=20)
        b = ManagedProcess([swiftrtc, "p2p", f"{ws}?room={room}", *common], work / f"{room}-b.log")
        try:
            if a.proc.wait(timeout=40) != 0:
                raise RuntimeError(f"p2p A failed: {a.text()[-1500:]}")
        finally:
            b.close()
    finally:
        a.close()
    value = json.loads((work / f"{room}-a.json").read_text()).get("offerToFirstFrameMs")
    if value is None:
        raise RuntimeError(f"p2p A reported no offerToFirstFrameMs: {a.text()[-1500:]}")
    return float(value)


def chromium_offer_to_first_frame(browser, http: str, room: str) -> float:
    # The answerer's page opens first, so the offerer's is in front (a background page presents
    # no frames, and the offerer's first presented frame is what is timed).
    second = browser.new_page(f"{http}/call/?room={room}")
    first = browser.new_page(f"{http}/call/?room={room}")
    try:
        first.evaluate("document.getElementById('connect').click(); true")
        first.wait_for("window.log.includes('state waiting for the peer')", timeout=15)
        second.evaluate("document.getElementById('connect').click(); true")
        first.wait_for("window.timing.firstFrameAt !== undefined", timeout=20)
        t = first.evaluate("window.timing", timeout=5)
        return float(t["firstFrameAt"] - t["offerAt"])
    finally:
        for p in (first, second):
            close_page(browser, p)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--swiftrtc", required=True)
    ap.add_argument("--json", default="artifacts/bench-p2p.json")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--round-trips", type=int, default=200)
    args = ap.parse_args()
    if not Path(args.swiftrtc).exists():
        print(f"p2p_bench: {args.swiftrtc} not found", file=sys.stderr)
        return 2
    from interop.cdp import Browser, ChromiumNotFound
    work = Path(tempfile.mkdtemp(prefix="swiftrtc-p2p-bench-"))
    signal = ManagedProcess([args.swiftrtc, "signal", "--http", "127.0.0.1:0"], work / "signal.log")
    result: dict = {}
    try:
        m = signal.wait_for_line(r"listening on (ws://(\S+?)/rtc/v1/signal/)\?room=NAME", timeout=20)
        ws, http = m.group(1), "http://" + m.group(2)
        rtt = signaling_rtt(ws, args.round_trips)
        result["signalRttMs"] = {"p50": statistics.median(rtt), "p95": sorted(rtt)[int(len(rtt) * 0.95)]}
        swift = [swift_offer_to_first_frame(args.swiftrtc, ws, f"bench-swift-{i}", work) for i in range(args.runs)]
        result["swiftOfferToFirstFrameMs"] = {"runs": swift, "median": statistics.median(swift)}
        try:
            # Two pages, one in the background: keep its timers and network running at full speed.
            browser = Browser.launch(extra_flags=("--disable-background-timer-throttling", "--disable-renderer-backgrounding",
                                                  "--disable-backgrounding-occluded-windows"))
        except ChromiumNotFound as e:
            print(f"p2p_bench: {e}", file=sys.stderr)
            return 2
        try:
            chromium = [chromium_offer_to_first_frame(browser, http, f"bench-chromium-{i}") for i in range(args.runs)]
        finally:
            browser.close()
        result["chromiumOfferToFirstFrameMs"] = {"runs": chromium, "median": statistics.median(chromium)}
        result["swiftVsChromium"] = result["swiftOfferToFirstFrameMs"]["median"] / result["chromiumOfferToFirstFrameMs"]["median"]
    except Exception as e:  # a run that could not be made is loud, not a result
        print(f"p2p_bench: the run failed: {e!r}", file=sys.stderr)
        return 1
    finally:
        signal.close()
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2))
    verdict = "pass" if result["swiftVsChromium"] <= 1 else "FAIL"
    print(f"signal.rtt_p50_ms                     {result['signalRttMs']['p50']:.3f}  (p95 {result['signalRttMs']['p95']:.3f})\n"
          f"p2p.offer_to_first_frame_swift_ms     {result['swiftOfferToFirstFrameMs']['median']:.1f}  {swift}\n"
          f"p2p.offer_to_first_frame_chromium_ms  {result['chromiumOfferToFirstFrameMs']['median']:.1f}  {chromium}\n"
          f"p2p.swift_vs_chromium                 {result['swiftVsChromium']:.2f}  (target <= 1: {verdict})\nwrote {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
