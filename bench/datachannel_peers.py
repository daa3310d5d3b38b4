#!/usr/bin/env python3
"""Data channel throughput of the peers SwiftRTC is compared with, measured like the Swift side
(swiftrtc-bench's datachannel phase): two peers on loopback, a data-only connection, one
reliable ordered channel, 64 KiB messages, at most 4 MiB queued by the sender; MB/s (10^6
bytes) from the first send to the last byte received.

- aiortc <-> aiortc: both peers in one asyncio loop (aioice patched to 127.0.0.1).
- Chromium <-> Chromium: two RTCPeerConnections in one headless page (interop/cdp.py).

    .venv/bin/python bench/datachannel_peers.py [--megabytes 200] [--only aiortc|chromium]
Prints {"aiortc_mbps": …, "chromium_mbps": …, "errors": {…}} on stdout (a failed peer: null).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from interop.peers import new_peer_connection  # noqa: E402

MESSAGE = 64 * 1024
HIGH, LOW = 4 << 20, 1 << 20


async def aiortc_throughput(total: int, timeout: float = 300) -> float:
    from aiortc import RTCSessionDescription
    a, b = new_peer_connection(), new_peer_connection()
    count = total // MESSAGE
    received = {"bytes": 0}
    done, opened, low = asyncio.Event(), asyncio.Event(), asyncio.Event()

    @b.on("datachannel")
    def on_channel(channel):
        @channel.on("message")
        def on_message(message):
            received["bytes"] += len(message)
            if received["bytes"] >= count * MESSAGE:
                done.set()

    dc = a.createDataChannel("bench")
    dc.on("open", opened.set)
    dc.bufferedAmountLowThreshold = LOW
    dc.on("bufferedamountlow", low.set)
    await a.setLocalDescription(await a.createOffer())
    await b.setRemoteDescription(RTCSessionDescription(sdp=a.localDescription.sdp, type="offer"))
    await b.setLocalDescription(await b.createAnswer())
    await a.setRemoteDescription(RTCSessionDescription(sdp=b.localDescription.sdp, type="answer"))
    await asyncio.wait_for(opened.wait(), 20)
    payload = bytes(MESSAGE)
    started = time.monotonic()
    for _ in range(count):
        while dc.bufferedAmount > HIGH:
            low.clear()
            await asyncio.wait_for(low.wait(), timeout)
        dc.send(payload)
    await asyncio.wait_for(done.wait(), timeout)
    seconds = time.monotonic() - started
    await a.close()
    await b.close()
    return count * MESSAGE / 1e6 / seconds


PAGE_SCRIPT = """
(async (total, size, high, low) => {
  const a = new RTCPeerConnection(), b = new RTCPeerConnection();
  a.onicecandidate = (e) => e.candidate && b.addIceCandidate(e.candidate);
  b.onicecandidate = (e) => e.candidate && a.addIceCandidate(e.candidate);
  const count = Math.floor(total / size);
  let got = 0;
  const done = new Promise((resolve) => {
    b.ondatachannel = (e) => { e.channel.onmessage = (m) => { got += m.data.byteLength || m.data.size || 0;
                                                              if (got >= count * size) resolve(); }; };
  });
  const dc = a.createDataChannel('bench');
  dc.binaryType = 'arraybuffer';
  dc.bufferedAmountLowThreshold = low;
  await a.setLocalDescription(await a.createOffer());
  await b.setRemoteDescription(a.localDescription);
  await b.setLocalDescription(await b.createAnswer());
  await a.setRemoteDescription(b.localDescription);
  await new Promise((resolve) => { dc.onopen = resolve; });
  const payload = new ArrayBuffer(size);
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    if (dc.bufferedAmount > high) await new Promise((r) => dc.addEventListener('bufferedamountlow', r, { once: true }));
    dc.send(payload);
  }
  await done;
  const seconds = (performance.now() - started) / 1000;
  a.close(); b.close();
  return count * size / 1e6 / seconds;
})(%d, %d, %d, %d)
"""


def chromium_throughput(total: int) -> float:
    from interop.cdp import Browser
    browser = Browser.launch()
    try:
        page = browser.new_page("about:blank")
        return page.evaluate(PAGE_SCRIPT % (total, MESSAGE, HIGH, LOW), timeout=300)
    finally:
        browser.close()


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--megabytes", type=int, default=200)
    parser.add_argument("--only", choices=["aiortc", "chromium"])
    args = parser.parse_args()
    total = args.megabytes * 1_000_000
    result: dict = {"aiortc_mbps": None, "chromium_mbps": None, "errors": {}}
    if args.only in (None, "aiortc"):
        try:
            result["aiortc_mbps"] = asyncio.run(aiortc_throughput(total))
        except Exception as exc:  # report, do not gate
            result["errors"]["aiortc"] = repr(exc)
    if args.only in (None, "chromium"):
        try:
            result["chromium_mbps"] = chromium_throughput(total)
        except Exception as exc:
            result["errors"]["chromium"] = repr(exc)
    print(json.dumps(result))


if __name__ == "__main__":
    main()
