"""A WebSocket client in a few lines of the standard library (no new PyPI package): used by the
signaling tests to send exact frames and by the aiortc P2P peer to speak the room protocol."""

from __future__ import annotations

import base64
import hashlib
import os
import socket
import struct


def ws_handshake(path: str, host: str, headers: dict | None = None, key: str | None = None) -> bytes:
    """A WebSocket opening handshake (RFC 6455 §4.1) for `path`, with extra header fields."""
    key = key or base64.b64encode(os.urandom(16)).decode()
    extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
    return (f"GET {path} HTTP/1.1\r\nHost: {host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n{extra}\r\n").encode()


class RawPeer:
    """A WebSocket client in a few lines of stdlib: exact, masked frames out; frames in."""

    def __init__(self, url: str, headers: dict | None = None):
        host, port, path = self._split(url)
        self.sock = socket.create_connection((host, port), timeout=10)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall(ws_handshake(path, f"{host}:{port}", headers, key))
        self.buffer = b""
        while b"\r\n\r\n" not in self.buffer:
            self.buffer += self._recv()
        head, self.buffer = self.buffer.split(b"\r\n\r\n", 1)
        self.status_line = head.split(b"\r\n")[0].decode()
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest()).decode()
        self.accept_ok = f"sec-websocket-accept: {accept}".lower() in head.decode().lower()

    @staticmethod
    def _split(url: str):
        rest = url[len("ws://"):]
        authority, _, path = rest.partition("/")
        host, _, port = authority.rpartition(":")
        return host, int(port), "/" + path

    def _recv(self) -> bytes:
        data = self.sock.recv(65536)
        if not data:
            raise ConnectionError("closed by the server")
        return data

    def send_frame(self, opcode: int, payload: bytes, fin: bool = True) -> None:
        mask = os.urandom(4)
        n = len(payload)
        header = bytes([(0x80 if fin else 0) | opcode])
        header += bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
        self.sock.sendall(header + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def frame(self) -> tuple[int, bytes]:
        while True:
            if len(self.buffer) >= 2:
                n, offset = self.buffer[1] & 0x7F, 2
                if n == 126:
                    n, offset = (struct.unpack(">H", self.buffer[2:4])[0], 4) if len(self.buffer) >= 4 else (None, 4)
                elif n == 127:
                    n, offset = (struct.unpack(">Q", self.buffer[2:10])[0], 10) if len(self.buffer) >= 10 else (None, 10)
                if n is not None and len(self.buffer) >= offset + n:
                    opcode, payload = self.buffer[0] & 0x0F, self.buffer[offset:offset + n]
                    self.buffer = self.buffer[offset + n:]
                    return opcode, payload
            self.buffer += self._recv()

    def text(self) -> str:
        opcode, payload = self.frame()
        assert opcode == 1, f"expected a text frame, got opcode {opcode}"
        return payload.decode()

    def close(self) -> None:
        self.sock.close()
