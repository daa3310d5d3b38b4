#!/usr/bin/env python3
"""aiortc publishing the SwiftRTC test pattern with H.264: CPU time of this process per frame.

The same synthetic source the Swift side publishes (interop/testpattern.py draws the test pattern
in numpy), at WxH@FPS, encoded by aiortc's own H.264 encoder (libx264 through PyAV) at a fixed
bitrate, packetized, SRTP-protected and sent over UDP on 127.0.0.1 to whatever answers the offer
(swiftrtc-bench answers with a Swift PeerConnection that does not decode).

Signaling over stdio, one JSON object per line: prints {"offer": SDP}, reads {"answer": SDP}.
Then: connected → idle (no frames) for --idle s → frames start → 1 s warm-up → --seconds s
measured. CPU is getrusage(RUSAGE_SELF) (every thread: asyncio loop, encoder executor, x264's
threads), minus the idle rate. Prints {"cpu_ms_per_frame": …, …} as the last line.

    .venv/bin/python bench/aiortc_publish.py [--seconds 5] [--bitrate 1500000]
"""

from __future__ import annotations

import argparse
import asyncio
import fractions
import json
import os
import resource
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

from interop.peers import new_peer_connection  # noqa: E402
from interop.testpattern import PatternRenderer  # noqa: E402


_VIDEO_TIME_BASE = fractions.Fraction(1, 90000)


def cpu_seconds() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def make_track(width: int, height: int, fps: float):
    import av
    import numpy as np
    from aiortc.mediastreams import MediaStreamTrack

    class PatternTrack(MediaStreamTrack):
        """The test pattern at a fixed rate, from when `started` is set; frame n at t0 + n/fps."""

        kind = "video"

        def __init__(self):
            super().__init__()
            self.renderer = PatternRenderer(width, height)
            self.started = asyncio.Event()
            self.frames = 0
            self.draw_cpu = 0.0   # thread CPU spent drawing and wrapping frames
            self.t0: float | None = None
            self.buf = np.empty((height * 3 // 2, width), np.uint8)

        async def recv(self):
            await self.started.wait()
            if self.t0 is None:
                self.t0 = time.monotonic()
            n = self.frames
            delay = self.t0 + n / fps - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            self.frames += 1
            t = time.thread_time()
            y, u, v = self.renderer.render(n, time.time_ns() // 1_000_000)
            flat = self.buf.reshape(-1)
            flat[: y.size] = y.ravel()
            flat[y.size: y.size + u.size] = u.ravel()
            flat[y.size + u.size:] = v.ravel()
            frame = av.VideoFrame.from_ndarray(self.buf, format="yuv420p")
            frame.pts = round(n * 90000 / fps)
            frame.time_base = _VIDEO_TIME_BASE
            self.draw_cpu += time.thread_time() - t
            return frame

    return PatternTrack()


async def bytes_sent(pc) -> int:
    stats = await pc.getStats()
    return sum(s.bytesSent for s in stats.values() if s.type == "outbound-rtp")


async def run(args) -> dict:
    import aiortc.codecs.h264 as h264
    from aiortc import RTCRtpSender, RTCSessionDescription

    # aiortc starts H.264 at DEFAULT_BITRATE and moves it only on REMB, which a non-decoding
    # receiver does not send: the fixed bitrate of the comparison.
    h264.DEFAULT_BITRATE = args.bitrate
    pc = new_peer_connection()
    track = make_track(args.width, args.height, args.fps)
    transceiver = pc.addTransceiver(track, direction="sendonly")
    caps = RTCRtpSender.getCapabilities("video").codecs
    transceiver.setCodecPreferences([c for c in caps if c.mimeType == "video/H264"]
                                    + [c for c in caps if c.mimeType == "video/rtx"])
    await pc.setLocalDescription(await pc.createOffer())
    print(json.dumps({"offer": pc.localDescription.sdp}), flush=True)

    line = await asyncio.get_running_loop().run_in_executor(None, sys.stdin.readline)
    answer = json.loads(line)["answer"]
    connected = asyncio.Event()

    def on_state():
        if pc.connectionState == "connected":
            connected.set()

    pc.on("connectionstatechange", on_state)
    await pc.setRemoteDescription(RTCSessionDescription(sdp=answer, type="answer"))
    on_state()
    await asyncio.wait_for(connected.wait(), 20)
    try:
        await asyncio.sleep(0.3)
        c0, w0 = cpu_seconds(), time.monotonic()
        await asyncio.sleep(args.idle)
        idle_cores = (cpu_seconds() - c0) / (time.monotonic() - w0)

        track.started.set()
        await asyncio.sleep(1.0)   # encoder set-up, first keyframe
        f0, d0, b0 = track.frames, track.draw_cpu, await bytes_sent(pc)
        c0, w0 = cpu_seconds(), time.monotonic()
        await asyncio.sleep(args.seconds)
        c1, w1 = cpu_seconds(), time.monotonic()
        f1, d1, b1 = track.frames, track.draw_cpu, await bytes_sent(pc)
    finally:
        await pc.close()
    wall = w1 - w0
    frames = f1 - f0
    if frames <= 0:
        raise RuntimeError("no frames were sent")
    cpu = (c1 - c0) - idle_cores * wall
    return {
        "cpu_ms_per_frame": round(cpu * 1000 / frames, 3),
        "source_ms_per_frame": round((d1 - d0) * 1000 / frames, 3),
        "frames": frames,
        "fps": round(frames / wall, 2),
        "kbps": round((b1 - b0) * 8 / wall / 1000, 1),
        "idle_cores": round(idle_cores, 4),
        "encoder": "libx264 (PyAV)",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--idle", type=float, default=1.5)
    parser.add_argument("--bitrate", type=int, default=1_500_000)
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=720)
    parser.add_argument("--fps", type=float, default=30.0)
    args = parser.parse_args()
    print(json.dumps(asyncio.run(run(args))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
