"""Python stand-in for `swiftrtc publish` and `swiftrtc play` (INTEROP_STANDIN=1), on aiortc.

    python -m interop.media_standin publish URL --source testsrc --codec h264|vp8 --size WxH --fps N
        [--bitrate KBPS] [--adapt WxH[@FPS]] [--max-fps N] [--audio tone|none] [--beauty S]
        [--disable-after SEC] --duration SEC --stats-json PATH
    python -m interop.media_standin play URL [--record out.y4m] [--snapshot out.png]
        --duration SEC --stats-json PATH

Same CLI contract, same stats JSON keys as the Swift binary. publish: WHIP (POST offer with
video sendonly + audio sendonly, expect 201 + answer + Location, DELETE at the end). play: WHEP
(POST offer with video+audio recvonly). --duration counts from the moment the connection is up.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import time

from interop.media_peers import (AudioSink, VideoSink, inbound_rtp, outbound_rtp, pattern_video_track,
                                 tone_audio_track)
from interop.peers import http_delete, negotiated_codecs, new_peer_connection, post_offer

STARTED = time.monotonic()


def parse_size(text: str) -> tuple[int, int]:
    m = re.fullmatch(r"(\d+)x(\d+)", text)
    if not m:
        raise argparse.ArgumentTypeError(f"size must be WxH, got {text!r}")
    return int(m.group(1)), int(m.group(2))


def parse_adapt(text: str) -> tuple[int, int, int | None]:
    m = re.fullmatch(r"(\d+)x(\d+)(?:@(\d+))?", text)
    if not m:
        raise argparse.ArgumentTypeError(f"--adapt must be WxH[@FPS], got {text!r}")
    return int(m.group(1)), int(m.group(2)), int(m.group(3)) if m.group(3) else None


def ignored_controls() -> set[str]:
    """INTEROP_STANDIN_IGNORE=bitrate,adapt,max-fps,beauty,disable-after makes the stand-in accept
    and then ignore those controls: the way to see each control test fail (negative check)."""
    return {x.strip() for x in os.environ.get("INTEROP_STANDIN_IGNORE", "").split(",") if x.strip()}


async def wait_connected(pc, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while pc.connectionState != "connected":
        if pc.connectionState in ("failed", "closed"):
            raise RuntimeError(f"connection {pc.connectionState}")
        if time.monotonic() > deadline:
            raise RuntimeError(f"not connected after {timeout} s (state {pc.connectionState})")
        await asyncio.sleep(0.02)


async def publish(args) -> int:
    from aiortc import RTCRtpSender, RTCSessionDescription
    if args.source != "testsrc":
        raise SystemExit(f"publish: unsupported --source {args.source!r} (stand-in knows testsrc)")
    ignore = ignored_controls()
    for name in ignore:
        attr = name.replace("-", "_")
        if getattr(args, attr, None) not in (None, 0.0):
            print(f"publish: INTEROP_STANDIN_IGNORE: ignoring --{name} {getattr(args, attr)}", flush=True)
            setattr(args, attr, 0.0 if attr == "beauty" else None)
    from interop.standin_codecs import COUNTS, install
    install(args.bitrate * 1000 if args.bitrate else None)
    width, height = args.size
    pc = new_peer_connection()
    loop = asyncio.get_running_loop()
    video = pattern_video_track(width, height, args.fps, adapt=args.adapt, max_fps=args.max_fps,
                                beauty_strength=args.beauty, disable_after=args.disable_after)
    vt = pc.addTransceiver(video, direction="sendonly")
    mime = {"h264": "video/h264", "vp8": "video/vp8"}[args.codec]
    caps = RTCRtpSender.getCapabilities("video").codecs
    prefs = [c for c in caps if c.mimeType.lower() == mime]
    prefs += [c for c in caps if c.mimeType.lower() == "video/rtx"]
    vt.setCodecPreferences(prefs)
    if args.audio == "tone":
        pc.addTransceiver(tone_audio_track(), direction="sendonly")
    started = time.monotonic()
    await pc.setLocalDescription(await pc.createOffer())
    status, body, location = await loop.run_in_executor(None, post_offer, args.url, pc.localDescription.sdp)
    if status != 201:
        print(f"publish: POST {args.url}: HTTP {status}: {body[:300]}", file=sys.stderr)
        await pc.close()
        return 1
    await pc.setRemoteDescription(RTCSessionDescription(sdp=body, type="answer"))
    await wait_connected(pc, 20)
    connect_ms = (time.monotonic() - started) * 1000
    print(f"publish: connected in {connect_ms:.0f} ms, {negotiated_codecs(pc)}", flush=True)
    await asyncio.sleep(args.duration)
    outbound = await outbound_rtp(pc)
    stats = {
        "connectMs": connect_ms,
        "framesCaptured": video.frames_out,   # frames the source delivered to the encoder
        "framesEncoded": COUNTS["encoded"],
        "framesSent": COUNTS["encoded"],
        "frameWidth": video.out_w,
        "frameHeight": video.out_h,
        "bytesSent": (outbound.get("video") or {}).get("bytesSent", 0),
        "codec": "video/H264" if args.codec == "h264" else "video/VP8",
        "blackFrames": video.black_frames,
        "droppedLate": video.dropped_late,
        "outbound": outbound.get("video") or {},
        "outboundAudio": outbound.get("audio") or {},
    }
    if location:
        await loop.run_in_executor(None, http_delete, location)
    await pc.close()
    with open(args.stats_json, "w") as f:
        json.dump(stats, f, indent=2)
    print(f"publish: done, {video.frames_out} frames captured, {COUNTS['encoded']} encoded", flush=True)
    return 0


async def status_lines(pc, sinks: dict, duration: float) -> None:
    """For `duration` s, once a second, swiftrtc play's status line (network_helpers.status_series
    reads both): frames decoded and received video kbps over the last second, the last size."""
    end = time.monotonic() + duration
    last_t, last_frames, last_bytes = time.monotonic(), 0, 0
    while time.monotonic() < end:
        await asyncio.sleep(max(0.0, min(1.0, end - time.monotonic())))
        now = time.monotonic()
        video = sinks.get("video")
        frames = video.frames if video else 0
        w, h = video.last_size if video and video.last_size else (0, 0)
        received = ((await inbound_rtp(pc)).get("video") or {}).get("bytesReceived") or 0
        span = max(now - last_t, 1e-3)
        print(f"playing  {now - STARTED:.1f}s  {(frames - last_frames) / span:.1f} fps  {w}x{h}  "
              f"{int((received - last_bytes) * 8 / span / 1000)} kbps  rtt -  loss -", file=sys.stderr, flush=True)
        last_t, last_frames, last_bytes = now, frames, received


async def play(args) -> int:
    from aiortc import RTCSessionDescription
    pc = new_peer_connection()
    loop = asyncio.get_running_loop()
    sinks: dict[str, object] = {}

    @pc.on("track")
    def on_track(track):
        if track.kind == "video":
            sinks["video"] = VideoSink(track, loop, record_path=args.record)
        else:
            sinks["audio"] = AudioSink(track, loop)

    pc.addTransceiver("video", direction="recvonly")
    pc.addTransceiver("audio", direction="recvonly")
    started = time.monotonic()
    await pc.setLocalDescription(await pc.createOffer())
    status, body, location = await loop.run_in_executor(None, post_offer, args.url, pc.localDescription.sdp)
    if status != 201:
        print(f"play: POST {args.url}: HTTP {status}: {body[:300]}", file=sys.stderr)
        await pc.close()
        return 1
    await pc.setRemoteDescription(RTCSessionDescription(sdp=body, type="answer"))
    await wait_connected(pc, 20)
    connect_ms = (time.monotonic() - started) * 1000
    print(f"play: connected in {connect_ms:.0f} ms, {negotiated_codecs(pc)}", flush=True)
    await status_lines(pc, sinks, args.duration)
    inbound = await inbound_rtp(pc)
    if location:
        await loop.run_in_executor(None, http_delete, location)
    await pc.close()
    await asyncio.sleep(0.1)  # let the sinks see the end of their tracks and close the Y4M file
    video: VideoSink | None = sinks.get("video")  # type: ignore[assignment]
    audio: AudioSink | None = sinks.get("audio")  # type: ignore[assignment]
    vs = video.summary() if video else {}
    n = vs.get("frames", 0)
    read = vs.get("patternFrames", 0)
    if args.snapshot and video:
        video.write_png(args.snapshot)
    w, h = video.last_size if video and video.last_size else (0, 0)
    stats = {
        "connectMs": connect_ms,
        "firstFrameMs": (video.first_frame_at - started) * 1000 if video and video.first_frame_at else None,
        "framesDecoded": n,
        "frameWidth": w,
        "frameHeight": h,
        "patternFrames": read,
        "patternVerified": bool(n and read >= 0.9 * n and vs.get("increasing")),
        "audioFramesDecoded": audio.frames if audio else 0,
        "audioEnergyDb": audio.energy_db() if audio else None,
        "inbound": inbound.get("video") or {},
        "inboundAudio": inbound.get("audio") or {},
        "video": vs,
    }
    with open(args.stats_json, "w") as f:
        json.dump(stats, f, indent=2)
    print(f"play: done, {n} frames ({read} with the pattern)", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m interop.media_standin")
    sub = parser.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("publish")
    p.add_argument("url")
    p.add_argument("--source", default="testsrc")
    p.add_argument("--codec", choices=("h264", "vp8"), type=str.lower, default="h264")
    p.add_argument("--size", type=parse_size, default=(1280, 720))
    p.add_argument("--fps", type=int, default=30)
    p.add_argument("--bitrate", type=int, default=None, help="maxBitrate in kbps")
    p.add_argument("--adapt", type=parse_adapt, default=None)
    p.add_argument("--max-fps", type=float, default=None)
    p.add_argument("--audio", choices=("tone", "none"), default="tone")
    p.add_argument("--beauty", type=float, default=0.0)
    p.add_argument("--disable-after", type=float, default=None)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--stats-json", required=True)
    q = sub.add_parser("play")
    q.add_argument("url")
    q.add_argument("--record", default=None)
    q.add_argument("--snapshot", default=None)
    q.add_argument("--duration", type=float, required=True)
    q.add_argument("--stats-json", required=True)
    args = parser.parse_args(argv)
    run = publish if args.cmd == "publish" else play
    try:
        return asyncio.run(run(args))
    except Exception as exc:
        print(f"{args.cmd}: {exc!r}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
