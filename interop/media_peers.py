"""Media peers for the issue-3 interop tests (test_media.py) and the `publish`/`play` stand-ins.

- PatternVideoTrack: aiortc track rendering the SwiftRTC test pattern (testpattern.py) with a
  real wall-clock capture time, plus the sender-side controls the stand-in honours: source
  adaptation (crop/scale/frame drop), max frame rate, beauty processor, track disable.
- ToneAudioTrack: a sine tone (48 kHz, 20 ms frames).
- VideoSink / AudioSink: consume remote tracks; read the pattern, count, measure, record Y4M.
- AiortcWhipReceiver / AiortcWhepSender: WHIP (receive) and WHEP (send) endpoints on aiortc.
- ChromiumWhipReceiver / ChromiumWhepSender: the same endpoints answered by a Chromium page
  (pages/media.html: whipAnswer(), whepAnswer(), mediaStats()).
"""

from __future__ import annotations

import asyncio
import fractions
import itertools
import math
import threading
import time
from typing import Any

import numpy as np

from interop.peers import (BadOffer, LoopThread, SdpHttpServer, check_offer, close_aiortc_endpoint,
                           negotiated_codecs, new_peer_connection)
from interop.testpattern import (PatternRenderer, RateLimiter, adapt_size, band_height, beauty,
                                 black_i420, hf_energy, read_pattern, write_y4m_header)

VIDEO_CLOCK = 90000
DISABLED_FPS = 1.0        # black frames per second while a video track is disabled (libwebrtc-like)


def wall_ms() -> int:
    return time.time_ns() // 1_000_000


def i420_frame(y: np.ndarray, u: np.ndarray, v: np.ndarray):
    import av
    h, w = y.shape
    buf = np.concatenate([y.ravel(), u.ravel(), v.ravel()]).reshape(-1, w)
    return av.VideoFrame.from_ndarray(buf, format="yuv420p")


# ---- sending tracks --------------------------------------------------------------------------

def _pattern_track_class():
    from aiortc import MediaStreamTrack

    class PatternVideoTrack(MediaStreamTrack):
        """Capturer → processors → source (adapt) → sender (max fps) in one aiortc track.

        Frame numbers are the capturer's: frames dropped by adaptation leave gaps, so a receiver
        sees strictly increasing, not consecutive, numbers.
        """

        kind = "video"

        def __init__(self, width: int, height: int, fps: int, adapt: tuple[int, int, int | None] | None = None,
                     max_fps: float | None = None, beauty_strength: float = 0.0,
                     disable_after: float | None = None):
            super().__init__()
            self.width, self.height, self.fps = width, height, fps
            self.renderer = PatternRenderer(width, height)
            self.beauty = beauty_strength
            self.disable_after = disable_after
            if adapt:
                aw, ah, afps = adapt
                self.crop, self.out_w, self.out_h = adapt_size(width, height, aw, ah)
                self.adapt_limiter = RateLimiter(afps, fps)
            else:
                self.crop, self.out_w, self.out_h = (0, 0, width, height), width, height
                self.adapt_limiter = RateLimiter(None, fps)
            self.sender_limiter = RateLimiter(max_fps, fps)
            self.t0: float | None = None
            self.k = 0                     # next capturer frame number
            self.frames_out = 0
            self.black_frames = 0
            self.dropped_late = 0
            self.next_black: float | None = None
            self.enabled = True

        async def _sleep_until(self, t: float) -> None:
            delay = t - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)

        def _pts(self, t: float) -> int:
            return int(round((t - self.t0) * VIDEO_CLOCK))

        async def recv(self):
            if self.readyState != "live":
                from aiortc.mediastreams import MediaStreamError
                raise MediaStreamError
            if self.t0 is None:
                self.t0 = time.monotonic()
            while True:
                now = time.monotonic()
                if self.disable_after is not None and now - self.t0 >= self.disable_after:
                    self.enabled = False
                if not self.enabled:
                    if self.next_black is None:
                        self.next_black = now
                    await self._sleep_until(self.next_black)
                    t = self.next_black
                    self.next_black += 1.0 / DISABLED_FPS
                    frame = i420_frame(*black_i420(self.out_w, self.out_h))
                    frame.pts = self._pts(t)
                    frame.time_base = fractions.Fraction(1, VIDEO_CLOCK)
                    self.black_frames += 1
                    self.frames_out += 1
                    return frame
                t = self.t0 + self.k / self.fps
                if t > now:
                    await self._sleep_until(t)
                elif now - t > 1.0 / self.fps:
                    # The encoder fell behind: a camera would have overwritten these frames.
                    late = int((now - t) * self.fps)
                    self.dropped_late += late
                    self.k += late
                    t = self.t0 + self.k / self.fps
                n = self.k
                self.k += 1
                if not self.adapt_limiter.keep(t) or not self.sender_limiter.keep(t):
                    continue
                y, u, v = self.renderer.render(n, wall_ms())
                if self.beauty > 0:
                    y = y.copy()
                    beauty(y, self.beauty, top=band_height(self.height))
                cx, cy, cw, ch = self.crop
                if (cx, cy, cw, ch) != (0, 0, self.width, self.height):
                    y = y[cy:cy + ch, cx:cx + cw]
                    u = u[cy // 2:(cy + ch) // 2, cx // 2:(cx + cw) // 2]
                    v = v[cy // 2:(cy + ch) // 2, cx // 2:(cx + cw) // 2]
                frame = i420_frame(y, u, v)
                if (cw, ch) != (self.out_w, self.out_h):
                    frame = frame.reformat(width=self.out_w, height=self.out_h)
                frame.pts = self._pts(t)
                frame.time_base = fractions.Fraction(1, VIDEO_CLOCK)
                self.frames_out += 1
                return frame

    return PatternVideoTrack


def pattern_video_track(*args, **kwargs):
    return _pattern_track_class()(*args, **kwargs)


def _tone_track_class():
    import av
    from aiortc import MediaStreamTrack

    class ToneAudioTrack(MediaStreamTrack):
        """A 440 Hz sine at -12 dBFS peak, mono s16, 48 kHz, 20 ms frames, paced in real time."""

        kind = "audio"

        def __init__(self, freq: float = 440.0, amplitude: float = 0.25, rate: int = 48000):
            super().__init__()
            self.freq, self.amp, self.rate = freq, amplitude, rate
            self.samples = rate // 50
            self.pos = 0
            self.t0: float | None = None

        async def recv(self):
            if self.readyState != "live":
                from aiortc.mediastreams import MediaStreamError
                raise MediaStreamError
            if self.t0 is None:
                self.t0 = time.monotonic()
            due = self.t0 + self.pos / self.rate
            delay = due - time.monotonic()
            if delay > 0:
                await asyncio.sleep(delay)
            idx = np.arange(self.pos, self.pos + self.samples)
            pcm = (self.amp * 32767 * np.sin(2 * np.pi * self.freq * idx / self.rate)).astype(np.int16)
            frame = av.AudioFrame.from_ndarray(pcm.reshape(1, -1), format="s16", layout="mono")
            frame.sample_rate = self.rate
            frame.pts = self.pos
            frame.time_base = fractions.Fraction(1, self.rate)
            self.pos += self.samples
            return frame

    return ToneAudioTrack


def tone_audio_track(**kwargs):
    return _tone_track_class()(**kwargs)


# ---- receiving sinks -----------------------------------------------------------------------------

class VideoSink:
    """Consumes a remote video track: counts frames and sizes, reads the pattern of each frame,
    keeps latency, mean luma and (optionally) high-frequency energy; records Y4M on request."""

    def __init__(self, track, loop: asyncio.AbstractEventLoop, record_path=None, measure_hf: bool = False):
        self.frames = 0
        self.sizes: dict[str, int] = {}
        self.numbers: list[int] = []          # pattern frame numbers read, in arrival order
        self.latencies: list[int] = []
        self.unread = 0
        self.hf: list[float] = []
        self.mean_luma: float | None = None
        self.first_frame_at: float | None = None
        self.last_i420: np.ndarray | None = None
        self.last_size: tuple[int, int] | None = None
        self.error: str | None = None
        self.measure_hf = measure_hf
        self.record_path = record_path
        self._y4m = None
        self._y4m_size = None
        self.task = loop.create_task(self._consume(track))

    async def _consume(self, track) -> None:
        from aiortc.mediastreams import MediaStreamError
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                break
            except Exception as exc:
                self.error = repr(exc)
                break
            try:
                self.on_frame(frame)
            except Exception as exc:  # a measurement bug must be visible, not kill the loop
                self.error = repr(exc)
        if self._y4m:
            self._y4m.close()

    def on_frame(self, frame) -> None:
        if self.first_frame_at is None:
            self.first_frame_at = time.monotonic()
        self.frames += 1
        w, h = frame.width, frame.height
        key = f"{w}x{h}"
        self.sizes[key] = self.sizes.get(key, 0) + 1
        if frame.format.name != "yuv420p":
            frame = frame.reformat(format="yuv420p")
        i420 = frame.to_ndarray()
        y = i420[:h]
        self.last_i420, self.last_size = i420, (w, h)
        self.mean_luma = float(y[::4, ::4].mean())
        got = read_pattern(y) if w >= 64 and h >= 48 else None
        if got is None:
            self.unread += 1
        else:
            self.numbers.append(got[0])
            self.latencies.append((wall_ms() - got[1]) & 0xFFFFFFFF)
        if self.measure_hf:
            self.hf.append(hf_energy(y))
        if self.record_path:
            if self._y4m is None:
                self._y4m = open(self.record_path, "wb")
                self._y4m_size = (w, h)
                write_y4m_header(self._y4m, w, h, 30)
            if (w, h) == self._y4m_size:  # Y4M has one size; later resolution changes are skipped
                self._y4m.write(b"FRAME\n")
                self._y4m.write(i420.tobytes())

    def write_png(self, path) -> bool:
        if self.last_i420 is None:
            return False
        import av
        w, h = self.last_size
        frame = av.VideoFrame.from_ndarray(self.last_i420, format="yuv420p").reformat(format="rgb24")
        codec = av.CodecContext.create("png", "w")
        codec.width, codec.height, codec.pix_fmt = w, h, "rgb24"
        data = b"".join(bytes(p) for p in codec.encode(frame))
        with open(path, "wb") as f:
            f.write(data)
        return True

    def summary(self) -> dict:
        nums = self.numbers
        increasing = all(b > a for a, b in zip(nums, nums[1:]))
        lat = sorted(self.latencies)
        return {
            "frames": self.frames, "sizes": dict(self.sizes), "patternFrames": len(nums),
            "unreadFrames": self.unread, "increasing": increasing,
            "firstNumber": nums[0] if nums else None, "lastNumber": nums[-1] if nums else None,
            "latencyMsP50": lat[len(lat) // 2] if lat else None,
            "latencyMsMax": lat[-1] if lat else None,
            "meanLumaLast": self.mean_luma,
            "hfEnergyMean": float(np.mean(self.hf)) if self.hf else None,
            "error": self.error,
        }


class AudioSink:
    """Consumes a remote audio track: frames, samples and RMS energy in dBFS."""

    def __init__(self, track, loop: asyncio.AbstractEventLoop, keep: bool = False):
        self.frames = 0
        self.samples = 0
        self.sum_sq = 0.0
        self.error: str | None = None
        # keep=True: the decoded audio itself, downmixed to mono (for spectra).
        self.kept: list[np.ndarray] | None = [] if keep else None
        self.task = loop.create_task(self._consume(track))

    async def _consume(self, track) -> None:
        from aiortc.mediastreams import MediaStreamError
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            except Exception as exc:
                self.error = repr(exc)
                return
            self.frames += 1
            pcm = frame.to_ndarray().astype(np.float64)
            if frame.format.name.startswith("s16"):
                pcm /= 32768.0
            self.samples += pcm.size
            self.sum_sq += float(np.square(pcm).sum())
            if self.kept is not None:
                self.kept.append(pcm.reshape(-1, len(frame.layout.channels)).mean(axis=1))

    def energy_db(self) -> float | None:
        if not self.samples:
            return None
        rms = math.sqrt(self.sum_sq / self.samples)
        return 20 * math.log10(rms) if rms > 0 else -200.0

    def summary(self) -> dict:
        return {"frames": self.frames, "samples": self.samples, "energyDb": self.energy_db(),
                "error": self.error}


async def inbound_rtp(pc) -> dict[str, dict]:
    """aiortc inbound-rtp stats per kind (as plain dicts)."""
    out: dict[str, dict] = {}
    for t in pc.getTransceivers():
        report = await t.receiver.getStats()
        for s in report.values():
            if getattr(s, "type", None) == "inbound-rtp":
                out[t.kind] = {k: (v.isoformat() if hasattr(v, "isoformat") else v)
                               for k, v in vars(s).items()}
    return out


async def outbound_rtp(pc) -> dict[str, dict]:
    out: dict[str, dict] = {}
    for t in pc.getTransceivers():
        report = await t.sender.getStats()
        for s in report.values():
            if getattr(s, "type", None) == "outbound-rtp":
                out[t.kind] = {k: (v.isoformat() if hasattr(v, "isoformat") else v)
                               for k, v in vars(s).items()}
    return out


# ---- aiortc endpoints ------------------------------------------------------------------------------

class AiortcWhipReceiver:
    """WHIP endpoint on aiortc: answers a sendonly offer recvonly; measures what arrives."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, measure_hf: bool = False, keep_audio: bool = False):
        self.lt = LoopThread("whip-recv-loop")
        self.measure_hf = measure_hf
        self.keep_audio = keep_audio
        self.sessions: dict[str, Any] = {}
        self.video: list[VideoSink] = []
        self.audio: list[AudioSink] = []
        self.log: list[str] = []
        self.deleted: list[str] = []
        self._ids = itertools.count(1)
        self.http = SdpHttpServer(host, port, "/whip", self._on_offer, self._on_delete, self.log.append)
        self.url = self.http.url

    def _on_offer(self, offer: str) -> tuple[str, str]:
        check_offer(offer)
        sid = f"p{next(self._ids)}"
        self.log.append(f"offer {sid}:\n{offer}")
        try:
            answer = self.lt.run(self._answer(sid, offer), timeout=20)
        except BadOffer:
            raise
        except Exception as exc:
            raise BadOffer(f"cannot apply offer: {exc}") from exc
        self.log.append(f"answer {sid}:\n{answer}")
        return sid, answer

    async def _answer(self, sid: str, offer: str) -> str:
        from aiortc import RTCSessionDescription
        pc = new_peer_connection()
        self.sessions[sid] = pc
        loop = asyncio.get_running_loop()

        @pc.on("track")
        def on_track(track):
            if track.kind == "video":
                self.video.append(VideoSink(track, loop, measure_hf=self.measure_hf))
            else:
                self.audio.append(AudioSink(track, loop, keep=self.keep_audio))

        @pc.on("connectionstatechange")
        def on_state():
            self.log.append(f"{sid} connectionState {pc.connectionState}")

        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer, type="offer"))
        for t in pc.getTransceivers():
            t.direction = "recvonly"
        await pc.setLocalDescription(await pc.createAnswer())
        self.log.append(f"{sid} negotiated {negotiated_codecs(pc)}")
        return pc.localDescription.sdp

    def _on_delete(self, sid: str) -> bool:
        if sid not in self.sessions:
            return False
        self.deleted.append(sid)
        return True

    def stats(self) -> dict:
        async def collect():
            pcs = list(self.sessions.values())
            pc = pcs[-1] if pcs else None
            return {
                "t": time.monotonic(),
                "connectionState": pc.connectionState if pc else None,
                "negotiated": negotiated_codecs(pc) if pc else {},
                "inbound": await inbound_rtp(pc) if pc else {},
                "video": self.video[-1].summary() if self.video else None,
                "audio": self.audio[-1].summary() if self.audio else None,
                "deleted": list(self.deleted),
            }
        return self.lt.run(collect(), timeout=10)

    def close(self) -> None:
        close_aiortc_endpoint(self.http, self.sessions.values(), self.lt)


class AiortcWhepSender:
    """WHEP endpoint on aiortc: answers a recvonly offer with the test pattern (640x480@30 by
    default) and a tone, sendonly."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, width: int = 640, height: int = 480,
                 fps: int = 30):
        self.lt = LoopThread("whep-send-loop")
        self.size = (width, height, fps)
        self.sessions: dict[str, Any] = {}
        self.tracks: list[Any] = []
        self.log: list[str] = []
        self._ids = itertools.count(1)
        self.http = SdpHttpServer(host, port, "/whep", self._on_offer, self._on_delete, self.log.append)
        self.url = self.http.url

    def _on_offer(self, offer: str) -> tuple[str, str]:
        check_offer(offer)
        sid = f"v{next(self._ids)}"
        self.log.append(f"offer {sid}:\n{offer}")
        try:
            answer = self.lt.run(self._answer(sid, offer), timeout=20)
        except Exception as exc:
            raise BadOffer(f"cannot apply offer: {exc}") from exc
        self.log.append(f"answer {sid}:\n{answer}")
        return sid, answer

    async def _answer(self, sid: str, offer: str) -> str:
        from aiortc import RTCSessionDescription
        pc = new_peer_connection()
        self.sessions[sid] = pc

        @pc.on("connectionstatechange")
        def on_state():
            self.log.append(f"{sid} connectionState {pc.connectionState}")

        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer, type="offer"))
        w, h, fps = self.size
        for t in pc.getTransceivers():
            track = pattern_video_track(w, h, fps) if t.kind == "video" else tone_audio_track()
            self.tracks.append(track)
            t.sender.replaceTrack(track)
            t.direction = "sendonly"
        await pc.setLocalDescription(await pc.createAnswer())
        self.log.append(f"{sid} negotiated {negotiated_codecs(pc)}")
        for t in pc.getTransceivers():
            if t.kind == "video":
                asyncio.get_running_loop().create_task(self._raise_bitrate(t.sender))
        return pc.localDescription.sdp

    async def _raise_bitrate(self, sender, bps: int = 1_500_000) -> None:
        """aiortc starts VP8 at 500 kbps, where the band's fast-changing low bits (the ms clock)
        are sometimes unreadable at 640x480; start the encoder at 1.5 Mbps instead (a later
        REMB from the receiver still applies). aiortc creates its encoder lazily: wait for it."""
        for _ in range(200):
            encoder = getattr(sender, "_RTCRtpSender__encoder", None)
            if encoder is not None:
                if hasattr(encoder, "target_bitrate"):
                    encoder.target_bitrate = bps
                return
            await asyncio.sleep(0.05)

    def _on_delete(self, sid: str) -> bool:
        pc = self.sessions.get(sid)
        if pc is None:
            return False
        self.lt.run(pc.close(), timeout=10)
        return True

    def stats(self) -> dict:
        async def collect():
            pcs = list(self.sessions.values())
            pc = pcs[-1] if pcs else None
            video = [t for t in self.tracks if t.kind == "video"]
            return {"connectionState": pc.connectionState if pc else None,
                    "negotiated": negotiated_codecs(pc) if pc else {},
                    "outbound": await outbound_rtp(pc) if pc else {},
                    "framesOut": video[-1].frames_out if video else 0}
        return self.lt.run(collect(), timeout=10)

    def close(self) -> None:
        close_aiortc_endpoint(self.http, self.sessions.values(), self.lt)


# ---- Chromium endpoints ----------------------------------------------------------------------------

class _ChromiumEndpoint:
    def __init__(self, page, path: str, js_function: str, host: str = "127.0.0.1", port: int = 0):
        self.page = page
        self.js_function = js_function
        self.log: list[str] = []
        self.deleted: list[str] = []
        self._lock = threading.Lock()   # one call at a time into the page
        self._ids = itertools.count(1)
        self.http = SdpHttpServer(host, port, path, self._on_offer, self._on_delete, self.log.append)
        self.url = self.http.url

    def _on_offer(self, offer: str) -> tuple[str, str]:
        check_offer(offer)
        self.log.append(f"offer:\n{offer}")
        from interop.cdp import JSError
        with self._lock:
            try:
                answer = self.page.call(self.js_function, offer, timeout=20)
            except JSError as exc:
                raise BadOffer(f"Chromium rejected the offer: {str(exc).splitlines()[0]}") from exc
        self.log.append(f"answer:\n{answer}")
        return f"c{next(self._ids)}", answer

    def _on_delete(self, sid: str) -> bool:
        self.deleted.append(sid)
        return True

    def stats(self) -> dict:
        with self._lock:
            s = self.page.call("mediaStats", timeout=10)
        if s is not None:
            s["t"] = time.monotonic()
            s["deleted"] = list(self.deleted)
        return s

    def close(self) -> None:
        self.http.close()


class ChromiumWhipReceiver(_ChromiumEndpoint):
    """WHIP endpoint answered by Chromium (recvonly); the page reads the pattern from a canvas."""

    def __init__(self, page, host: str = "127.0.0.1", port: int = 0):
        super().__init__(page, "/whip", "whipAnswer", host, port)


class ChromiumWhepSender(_ChromiumEndpoint):
    """WHEP endpoint answered by Chromium (sendonly) with the fake camera and fake microphone."""

    def __init__(self, page, host: str = "127.0.0.1", port: int = 0):
        super().__init__(page, "/whep", "whepAnswer", host, port)
