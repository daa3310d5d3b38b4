#!/usr/bin/env python3
"""aiortc ↔ aiortc connect time on loopback: createOffer → connectionState "connected" on both.

Both peers live in one asyncio loop, exchange complete SDP (aiortc does not trickle), and use
only 127.0.0.1 host candidates (aioice patched) with no STUN server. Includes ICE checks, DTLS
handshake and SRTP setup; one audio + one video sendrecv transceiver, as a browser call has.

    .venv/bin/python bench/aiortc_connect.py [--runs 5]
Prints {"aiortc_connect_ms_median": …, "runs": […]} on stdout.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from interop.peers import new_peer_connection, synthetic_tracks  # noqa: E402


async def wait_connected(pc, timeout: float) -> None:
    done = asyncio.Event()

    def check():
        if pc.connectionState == "connected":
            done.set()

    pc.on("connectionstatechange", check)
    check()
    await asyncio.wait_for(done.wait(), timeout)


async def one_run(timeout: float) -> float:
    from aiortc import RTCSessionDescription
    offerer, answerer = new_peer_connection(), new_peer_connection()
    try:
        audio, video = synthetic_tracks()
        offerer.addTransceiver(audio, direction="sendrecv")
        offerer.addTransceiver(video, direction="sendrecv")
        started = time.perf_counter()
        await offerer.setLocalDescription(await offerer.createOffer())
        await answerer.setRemoteDescription(
            RTCSessionDescription(sdp=offerer.localDescription.sdp, type="offer"))
        a_audio, a_video = synthetic_tracks()
        for t in answerer.getTransceivers():
            t.sender.replaceTrack(a_audio if t.kind == "audio" else a_video)
            t.direction = "sendrecv"
        await answerer.setLocalDescription(await answerer.createAnswer())
        await offerer.setRemoteDescription(
            RTCSessionDescription(sdp=answerer.localDescription.sdp, type="answer"))
        await asyncio.gather(wait_connected(offerer, timeout), wait_connected(answerer, timeout))
        return (time.perf_counter() - started) * 1000
    finally:
        await offerer.close()
        await answerer.close()


async def main_async(runs: int, timeout: float) -> dict:
    results = [round(await one_run(timeout), 2) for _ in range(runs)]
    return {"aiortc_connect_ms_median": round(statistics.median(results), 2), "runs": results}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--timeout", type=float, default=20.0, help="seconds per run")
    args = parser.parse_args()
    print(json.dumps(asyncio.run(main_async(args.runs, args.timeout))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
