"""An aiortc peer for the P2P room protocol (`/rtc/v1/signal/`), written for the tests: joins a
room over the stdlib WebSocket client, offers when the other peer arrives (or answers its offer),
sends the test pattern and a tone, opens (or accepts) the data channel "chat" and measures what
comes back with the same sinks as the other aiortc tests."""

from __future__ import annotations

import asyncio
import json
import threading

from interop.media_peers import AudioSink, VideoSink, pattern_video_track, tone_audio_track
from interop.peers import LoopThread, new_peer_connection
from interop.ws_client import RawPeer


class AiortcP2PPeer:
    def __init__(self, url: str):
        self.lt = LoopThread("p2p-aiortc")
        self.ws = RawPeer(url)
        self.ws.sock.settimeout(120)   # idle between signaling messages is normal; close() ends the reader
        self.log: list[str] = []
        self.chat_received: list[str] = []
        self.chat = None
        self.video: VideoSink | None = None
        self.audio: AudioSink | None = None
        self.hung_up: str | None = None
        self.pc = self.lt.run(self._make_pc())
        self.reader = threading.Thread(target=self._read, name="p2p-ws-reader", daemon=True)
        self.reader.start()

    async def _make_pc(self):
        pc = new_peer_connection()
        loop = asyncio.get_running_loop()
        pc.addTrack(pattern_video_track(640, 360, 30))
        pc.addTrack(tone_audio_track())

        @pc.on("track")
        def on_track(track):
            if track.kind == "video":
                self.video = VideoSink(track, loop)
            else:
                self.audio = AudioSink(track, loop)

        @pc.on("datachannel")
        def on_channel(channel):
            if channel.label == "chat":
                self._use(channel)

        @pc.on("connectionstatechange")
        def on_state():
            self.log.append(f"connectionState {pc.connectionState}")
        return pc

    def _use(self, channel) -> None:
        self.chat = channel

        @channel.on("message")
        def on_message(message):
            self.chat_received.append(message if isinstance(message, str) else f"<{len(message)} bytes>")

    def _send(self, obj: dict) -> None:
        self.ws.send_frame(1, json.dumps(obj).encode())

    def _read(self) -> None:
        while True:
            try:
                text = self.ws.text()
            except Exception as exc:
                self.log.append(f"signaling ended: {exc!r}")
                return
            message = json.loads(text)
            self.log.append(f"signal {message.get('type')}")
            try:
                self.lt.run(self._on_message(message), timeout=20)
            except Exception as exc:
                self.log.append(f"error handling {message.get('type')}: {exc!r}")

    async def _on_message(self, m: dict) -> None:
        from aiortc import RTCSessionDescription
        from aiortc.sdp import candidate_from_sdp
        pc = self.pc
        kind = m.get("type")
        if kind == "peer-joined":
            self._use(pc.createDataChannel("chat"))
            await pc.setLocalDescription(await pc.createOffer())   # aiortc gathers everything here
            self._send({"type": "offer", "sdp": pc.localDescription.sdp})
            self._send({"type": "candidate", "candidate": ""})
        elif kind == "offer":
            await pc.setRemoteDescription(RTCSessionDescription(sdp=m["sdp"], type="offer"))
            await pc.setLocalDescription(await pc.createAnswer())
            self._send({"type": "answer", "sdp": pc.localDescription.sdp})
            self._send({"type": "candidate", "candidate": ""})
        elif kind == "answer":
            await pc.setRemoteDescription(RTCSessionDescription(sdp=m["sdp"], type="answer"))
        elif kind == "candidate":
            text = m.get("candidate", m.get("sdp", ""))
            if text:
                c = candidate_from_sdp(text.split(":", 1)[1] if text.startswith("candidate:") else text)
                c.sdpMid, c.sdpMLineIndex = m.get("sdpMid"), m.get("sdpMLineIndex")
                await pc.addIceCandidate(c)
        elif kind in ("bye", "peer-left"):
            self.hung_up = kind

    def send_chat(self, text: str) -> bool:
        async def go():
            if self.chat is None or self.chat.readyState != "open":
                return False
            self.chat.send(text)
            return True
        return self.lt.run(go(), timeout=10)

    def chat_open(self) -> bool:
        return self.chat is not None and self.chat.readyState == "open"

    def summary(self) -> dict:
        return {"connectionState": self.pc.connectionState, "video": self.video.summary() if self.video else None,
                "audio": self.audio.summary() if self.audio else None, "chatReceived": list(self.chat_received),
                "hungUp": self.hung_up, "log": list(self.log)}

    def hang_up(self) -> None:
        try:
            self._send({"type": "bye"})
        except OSError:
            pass

    def close(self) -> None:
        try:
            self.lt.run(self.pc.close(), timeout=10)
        except Exception:
            pass
        self.ws.close()
        self.lt.stop()
