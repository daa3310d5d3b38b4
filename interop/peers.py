"""Real peers and Python stand-ins for the SwiftRTC interop tests.

- AiortcEchoServer: reference implementation of `swiftrtc echo` (contract A) on aiortc; also run
  as a process: `python -m interop.peers echo --http 127.0.0.1:PORT`.
- AiortcAnswerer: WHIP-style server answering offers with aiortc synthetic audio+video.
- ChromiumAnswerer: WHIP-style server answering offers with a Chromium page (answerOffer()).
- AiortcEchoClient: offers audio+video to an echo URL and counts what comes back.
- StaticServer: serves interop/pages/ on 127.0.0.1 (a secure context for getUserMedia).

aiortc needs two tweaks on loopback: aioice never gathers 127.0.0.1 (patched below), and
without `iceServers=[]` it contacts a public STUN server.
"""

from __future__ import annotations

import argparse
import asyncio
import fractions
import http.server
import itertools
import json
import os
import socket
import sys
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any, Callable

PAGES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pages")

VIDEO_WIDTH = 320
VIDEO_HEIGHT = 240


# ---- aiortc on loopback -----------------------------------------------------------------

def patch_loopback() -> None:
    """Make aioice gather only 127.0.0.1 (it skips loopback by default)."""
    import aioice.ice

    def loopback_only(use_ipv4: bool = True, use_ipv6: bool = False) -> list[str]:
        return ["127.0.0.1"] if use_ipv4 else []

    aioice.ice.get_host_addresses = loopback_only


def new_peer_connection(configuration=None):
    """`configuration`: an RTCConfiguration (e.g. TURN only); default: no ICE servers at all."""
    from aiortc import RTCConfiguration, RTCPeerConnection
    patch_loopback()
    return RTCPeerConnection(configuration or RTCConfiguration(iceServers=[]))


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class LoopThread:
    """An asyncio event loop running in a daemon thread; run() submits coroutines to it."""

    def __init__(self, name: str = "aiortc-loop"):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name=name, daemon=True)
        self.thread.start()

    def run(self, coro, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def stop(self) -> None:
        if self.loop.is_running():
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)


# ---- synthetic media --------------------------------------------------------------------

def _video_track_class():
    import av
    from aiortc import VideoStreamTrack

    class SyntheticVideoTrack(VideoStreamTrack):
        """320x240 frames at 30 fps whose luma and chroma change every frame."""

        def __init__(self, width: int = VIDEO_WIDTH, height: int = VIDEO_HEIGHT):
            super().__init__()
            self.width = width
            self.height = height
            self.counter = 0

        async def recv(self):
            pts, time_base = await self.next_timestamp()
            frame = av.VideoFrame(self.width, self.height, "yuv420p")
            n = self.counter
            self.counter += 1
            # A horizontal luma gradient scrolling with n, plus slowly changing chroma: gives
            # the encoder real content (and keyframe/delta variety) without numpy.
            y_plane, u_plane, v_plane = frame.planes
            row = bytes(((x + 4 * n) & 0xFF) for x in range(y_plane.line_size))
            y_plane.update(row * self.height)
            u_plane.update(bytes([(n * 3) & 0xFF]) * u_plane.buffer_size)
            v_plane.update(bytes([(255 - n * 2) & 0xFF]) * v_plane.buffer_size)
            frame.pts = pts
            frame.time_base = time_base
            return frame

    return SyntheticVideoTrack


def synthetic_tracks():
    """(audio, video) aiortc tracks: silence at 48 kHz and a moving 320x240 pattern."""
    from aiortc.mediastreams import AudioStreamTrack
    return AudioStreamTrack(), _video_track_class()()


class TrackCounter:
    """Consumes a remote track, counting frames (and video frame sizes)."""

    def __init__(self, track, loop: asyncio.AbstractEventLoop):
        self.kind = track.kind
        self.frames = 0
        self.sizes: dict[str, int] = {}
        self.first_frame_at: float | None = None
        self.error: str | None = None
        self.task = loop.create_task(self._consume(track))

    async def _consume(self, track) -> None:
        from aiortc.mediastreams import MediaStreamError
        while True:
            try:
                frame = await track.recv()
            except MediaStreamError:
                return
            except Exception as exc:  # decoder trouble must not kill the loop
                self.error = repr(exc)
                return
            if self.first_frame_at is None:
                self.first_frame_at = time.monotonic()
            self.frames += 1
            if self.kind == "video":
                key = f"{frame.width}x{frame.height}"
                self.sizes[key] = self.sizes.get(key, 0) + 1

    def summary(self) -> dict:
        return {"frames": self.frames, "sizes": dict(self.sizes), "error": self.error}


async def inbound_packets(pc) -> dict[str, int]:
    """packetsReceived per kind, from aiortc's receiver stats."""
    out: dict[str, int] = {}
    for t in pc.getTransceivers():
        report = await t.receiver.getStats()
        for s in report.values():
            if getattr(s, "type", None) == "inbound-rtp":
                out[t.kind] = out.get(t.kind, 0) + s.packetsReceived
    return out


def negotiated_codecs(pc) -> dict[str, list[str]]:
    out = {}
    for t in pc.getTransceivers():
        out[t.mid or t.kind] = [f"{c.mimeType}/{c.payloadType}" for c in (t._codecs or [])]
    return out


# ---- WHIP-style HTTP --------------------------------------------------------------------

class BadOffer(Exception):
    pass


class SdpHttpServer:
    """POST <path> (application/sdp offer) → 201 + answer + Location; DELETE <path>/<id> → 200.

    CORS on every response, OPTIONS → 204. Handlers run on the server's threads:
    on_offer(offer_sdp) -> (session_id, answer_sdp) and on_delete(session_id) -> bool.
    """

    def __init__(self, host: str, port: int, path: str,
                 on_offer: Callable[[str], tuple[str, str]],
                 on_delete: Callable[[str], bool] | None = None,
                 log: Callable[[str], None] | None = None):
        self.path = path.rstrip("/") or "/"
        self.on_offer = on_offer
        self.on_delete = on_delete or (lambda _sid: True)
        self.log = log or (lambda _line: None)
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, fmt, *args):  # keep stderr quiet; tests print our own log
                pass

            def _reply(self, status: int, body: bytes = b"", ctype: str | None = None,
                       headers: dict | None = None) -> None:
                self.send_response(status)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Access-Control-Allow-Methods", "POST, DELETE, OPTIONS")
                self.send_header("Access-Control-Allow-Headers", "content-type")
                self.send_header("Access-Control-Expose-Headers", "Location")
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                if ctype:
                    self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if body:
                    self.wfile.write(body)

            def do_OPTIONS(self):
                self._reply(204)

            def do_POST(self):
                if urllib.parse.urlsplit(self.path).path.rstrip("/") != outer.path:
                    return self._reply(404, b"not found\n", "text/plain")
                length = int(self.headers.get("Content-Length") or 0)
                offer = self.rfile.read(length).decode("utf-8", "replace")
                ctype = (self.headers.get("Content-Type") or "").split(";")[0].strip().lower()
                if ctype != "application/sdp":
                    return self._reply(400, b"Content-Type must be application/sdp\n", "text/plain")
                try:
                    sid, answer = outer.on_offer(offer)
                except BadOffer as exc:
                    outer.log(f"bad offer: {exc}")
                    return self._reply(400, f"{exc}\n".encode(), "text/plain")
                except Exception as exc:
                    outer.log(f"offer failed: {exc!r}")
                    return self._reply(500, f"{exc!r}\n".encode(), "text/plain")
                self._reply(201, answer.encode(), "application/sdp",
                            {"Location": f"{outer.path}/{sid}"})

            def do_DELETE(self):
                path = urllib.parse.urlsplit(self.path).path
                prefix = outer.path + "/"
                if not path.startswith(prefix):
                    return self._reply(404, b"not found\n", "text/plain")
                ok = outer.on_delete(path[len(prefix):])
                self._reply(200 if ok else 404, b"" if ok else b"no such session\n",
                            None if ok else "text/plain")

        self.httpd = http.server.ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.url = f"http://{host}:{self.port}{self.path}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="sdp-http", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def post_offer(url: str, sdp: str, timeout: float = 20) -> tuple[int, str, str | None]:
    """POST an SDP offer; returns (status, body, absolute Location or None)."""
    req = urllib.request.Request(url, data=sdp.encode(), method="POST",
                                 headers={"Content-Type": "application/sdp"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            loc = res.headers.get("Location")
            return res.status, res.read().decode(), urllib.parse.urljoin(url, loc) if loc else None
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace"), None


def http_delete(url: str, timeout: float = 10) -> int:
    req = urllib.request.Request(url, method="DELETE")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return res.status
    except urllib.error.HTTPError as exc:
        return exc.code


def check_offer(sdp: str) -> None:
    """The one-line reasons a stand-in gives for a 400 (same spirit as swiftrtc echo)."""
    if not sdp.startswith("v=0"):
        raise BadOffer("offer does not start with v=0")
    if "\nm=" not in sdp:
        raise BadOffer("offer has no m= line")
    if "a=fingerprint:" not in sdp:
        raise BadOffer("offer has no a=fingerprint")
    if "a=ice-ufrag:" not in sdp:
        raise BadOffer("offer has no a=ice-ufrag")


# ---- aiortc reference echo (contract A) --------------------------------------------------

def close_aiortc_endpoint(http: "SdpHttpServer", pcs, lt: LoopThread) -> None:
    """Stops an aiortc endpoint: its HTTP server, then every peer connection (errors ignored:
    a peer may already be gone), then its event loop thread."""
    http.close()
    for pc in list(pcs):
        try:
            lt.run(pc.close(), timeout=5)
        except Exception:
            pass
    lt.stop()


class AiortcEchoServer:
    """Sends each received track back on its own transceiver (aiortc decodes and re-encodes),
    and each data-channel message back on the channel it came in on."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0,
                 out: Callable[[str], None] | None = None):
        self.lt = LoopThread("echo-loop")
        self.sessions: dict[str, Any] = {}
        self._ids = itertools.count(1)
        self.out = out or (lambda line: None)
        self.http = SdpHttpServer(host, port, "/echo", self._on_offer, self._on_delete, self.out)
        self.url = self.http.url

    def _on_offer(self, offer: str) -> tuple[str, str]:
        check_offer(offer)
        sid = f"s{next(self._ids)}"
        try:
            answer = self.lt.run(self._answer(sid, offer), timeout=20)
        except (ValueError, Exception) as exc:
            if isinstance(exc, BadOffer):
                raise
            raise BadOffer(f"cannot apply offer: {exc}") from exc
        return sid, answer

    async def _answer(self, sid: str, offer: str) -> str:
        from aiortc import RTCSessionDescription
        pc = new_peer_connection()
        self.sessions[sid] = pc
        started = time.monotonic()

        @pc.on("track")
        def on_track(track):
            for t in pc.getTransceivers():
                if t.receiver.track is track:
                    t.sender.replaceTrack(track)
                    t.direction = "sendrecv"

        @pc.on("datachannel")
        def on_datachannel(channel):
            channel.on("message", channel.send)

        @pc.on("connectionstatechange")
        async def on_state():
            ms = (time.monotonic() - started) * 1000
            self.out(f"echo: session {sid} {pc.connectionState} after {ms:.0f} ms")
            if pc.connectionState == "failed":
                await pc.close()

        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer, type="offer"))
        await pc.setLocalDescription(await pc.createAnswer())
        self.out(f"echo: session {sid} answered {negotiated_codecs(pc)}")
        return pc.localDescription.sdp

    def _on_delete(self, sid: str) -> bool:
        pc = self.sessions.pop(sid, None)
        if pc is None:
            return False
        self.lt.run(pc.close(), timeout=10)
        self.out(f"echo: session {sid} deleted")
        return True

    def close(self) -> None:
        close_aiortc_endpoint(self.http, self.sessions.values(), self.lt)


# ---- answerers (the far end of `swiftrtc probe`) ------------------------------------------

class AiortcAnswerer:
    """Answers WHIP-style offers with aiortc synthetic audio+video; records what it receives."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, configuration=None):
        self.lt = LoopThread("answerer-loop")
        self.configuration = configuration
        self.pc = None
        self.counters: list[TrackCounter] = []
        self.log: list[str] = []
        self.http = SdpHttpServer(host, port, "/whip", self._on_offer, self._on_delete, self.log.append)
        self.url = self.http.url

    def _on_offer(self, offer: str) -> tuple[str, str]:
        check_offer(offer)
        self.log.append(f"offer:\n{offer}")
        answer = self.lt.run(self._answer(offer), timeout=20)
        self.log.append(f"answer:\n{answer}")
        return "1", answer

    async def _answer(self, offer: str) -> str:
        from aiortc import RTCSessionDescription
        pc = new_peer_connection(self.configuration)
        self.pc = pc
        loop = asyncio.get_running_loop()

        @pc.on("track")
        def on_track(track):
            self.counters.append(TrackCounter(track, loop))

        @pc.on("connectionstatechange")
        def on_state():
            self.log.append(f"connectionState {pc.connectionState}")

        @pc.on("datachannel")
        def on_datachannel(channel):   # swiftrtc probe --datachannel: every message goes back
            channel.on("message", channel.send)

        await pc.setRemoteDescription(RTCSessionDescription(sdp=offer, type="offer"))
        audio, video = synthetic_tracks()
        for t in pc.getTransceivers():
            src = audio if t.kind == "audio" else video
            if src is not None:
                t.sender.replaceTrack(src)
                t.direction = "sendrecv"
                if t.kind == "audio":
                    audio = None
                else:
                    video = None
        await pc.setLocalDescription(await pc.createAnswer())
        return pc.localDescription.sdp

    def _on_delete(self, _sid: str) -> bool:
        return True

    def stats(self) -> dict:
        async def collect():
            if self.pc is None:
                return {"connectionState": None, "packetsReceived": {}, "tracks": []}
            return {
                "connectionState": self.pc.connectionState,
                "packetsReceived": await inbound_packets(self.pc),
                "negotiated": negotiated_codecs(self.pc),
                "tracks": [{"kind": c.kind, **c.summary()} for c in self.counters],
            }
        return self.lt.run(collect(), timeout=10)

    def close(self) -> None:
        close_aiortc_endpoint(self.http, [self.pc] if self.pc is not None else [], self.lt)


class ChromiumAnswerer:
    """Answers WHIP-style offers with answerOffer() in a Chromium page."""

    def __init__(self, page, host: str = "127.0.0.1", port: int = 0, configuration: dict | None = None):
        self.page = page
        self.configuration = configuration   # an RTCConfiguration as JSON; None: no ICE servers
        self.log: list[str] = []
        self._lock = threading.Lock()   # one call at a time into the page
        self.http = SdpHttpServer(host, port, "/whip", self._on_offer, lambda _sid: True, self.log.append)
        self.url = self.http.url
        self.offers = 0

    def _on_offer(self, offer: str) -> tuple[str, str]:
        check_offer(offer)
        self.log.append(f"offer:\n{offer}")
        from .cdp import JSError
        with self._lock:
            # Offers after the first renegotiate the same connection (ICE restart, new tracks).
            self.offers += 1
            try:
                args = (offer,) if self.configuration is None else (offer, self.configuration)
                answer = self.page.call("answerOffer" if self.offers == 1 else "answerReoffer", *args, timeout=20)
            except JSError as exc:
                raise BadOffer(f"Chromium rejected the offer: {str(exc).splitlines()[0]}") from exc
        self.log.append(f"answer:\n{answer}")
        return "1", answer

    def stats(self) -> dict:
        with self._lock:
            return self.page.call("stats", timeout=10)

    def close(self) -> None:
        self.http.close()


# ---- aiortc echo client --------------------------------------------------------------------

class AiortcEchoClient:
    """Offers synthetic audio+video (optionally one video codec only) to an echo URL."""

    def __init__(self, url: str, video_codec: str | None = None):
        self.url = url
        self.video_codec = video_codec
        self.lt = LoopThread("echo-client-loop")
        self.pc = None
        self.counters: list[TrackCounter] = []
        self.location: str | None = None
        self.offer: str | None = None
        self.answer: str | None = None
        self.connected_ms: float | None = None
        self.log: list[str] = []

    def connect(self, timeout: float = 20) -> None:
        self.lt.run(self._connect(), timeout=timeout)

    async def _connect(self) -> None:
        from aiortc import RTCRtpSender, RTCSessionDescription
        pc = new_peer_connection()
        self.pc = pc
        loop = asyncio.get_running_loop()
        started = time.monotonic()

        @pc.on("track")
        def on_track(track):
            self.counters.append(TrackCounter(track, loop))

        @pc.on("connectionstatechange")
        def on_state():
            self.log.append(f"connectionState {pc.connectionState}")
            if pc.connectionState == "connected" and self.connected_ms is None:
                self.connected_ms = (time.monotonic() - started) * 1000

        audio, video = synthetic_tracks()
        pc.addTransceiver(audio, direction="sendrecv")
        vt = pc.addTransceiver(video, direction="sendrecv")
        if self.video_codec:
            want = f"video/{self.video_codec}".lower()
            caps = RTCRtpSender.getCapabilities("video").codecs
            prefs = [c for c in caps if c.mimeType.lower() == want]
            if not prefs:
                raise RuntimeError(f"aiortc has no {self.video_codec}")
            prefs += [c for c in caps if c.mimeType.lower() == "video/rtx"]
            vt.setCodecPreferences(prefs)
        await pc.setLocalDescription(await pc.createOffer())
        self.offer = pc.localDescription.sdp
        status, body, location = await loop.run_in_executor(None, post_offer, self.url, self.offer)
        if status != 201:
            raise RuntimeError(f"POST {self.url}: HTTP {status}: {body[:300]}")
        self.answer, self.location = body, location
        await pc.setRemoteDescription(RTCSessionDescription(sdp=body, type="answer"))

    def result(self) -> dict:
        async def collect():
            pc = self.pc
            return {
                "connectionState": pc.connectionState if pc else None,
                "connectMs": self.connected_ms,
                "packetsReceived": await inbound_packets(pc) if pc else {},
                "negotiated": negotiated_codecs(pc) if pc else {},
                "tracks": [{"kind": c.kind, **c.summary()} for c in self.counters],
            }
        return self.lt.run(collect(), timeout=10)

    def frames(self, kind: str) -> int:
        return sum(c.frames for c in self.counters if c.kind == kind)

    def wait_frames(self, video: int, audio: int, timeout: float = 20) -> dict:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.frames("video") >= video and self.frames("audio") >= audio:
                break
            time.sleep(0.1)
        return self.result()

    def close(self) -> None:
        if self.location:
            try:
                http_delete(self.location)
            except Exception:
                pass
        if self.pc is not None:
            try:
                self.lt.run(self.pc.close(), timeout=5)
            except Exception:
                pass
        self.lt.stop()


# ---- static pages ----------------------------------------------------------------------------

class StaticServer:
    """Serves interop/pages/ so the page has a secure (127.0.0.1) origin for getUserMedia."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0, directory: str = PAGES_DIR):
        class Handler(http.server.SimpleHTTPRequestHandler):
            def __init__(self, *a, **kw):
                super().__init__(*a, directory=directory, **kw)

            def log_message(self, fmt, *args):
                pass

            def end_headers(self):
                self.send_header("Cache-Control", "no-store")
                super().end_headers()

        self.httpd = http.server.ThreadingHTTPServer((host, port), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://{host}:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, name="static-http", daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


# ---- command line: the stand-in for `swiftrtc echo` -----------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m interop.peers")
    sub = parser.add_subparsers(dest="cmd", required=True)
    echo = sub.add_parser("echo", help="aiortc reference echo server (contract A)")
    echo.add_argument("--http", required=True, help="HOST:PORT to listen on")
    echo.add_argument("--udp-port", type=int, default=None, help="accepted for CLI parity; ignored")
    args = parser.parse_args(argv)

    host, _, port = args.http.rpartition(":")

    def out(line: str) -> None:
        print(line, flush=True)

    server = AiortcEchoServer(host or "127.0.0.1", int(port), out)
    out(f"echo: listening on {server.url}")
    stop = threading.Event()
    import signal
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    server.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
