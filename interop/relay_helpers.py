"""Helpers for the relay interop tests (test_relay.py): `swiftrtc serve`, the publish/play/call
CLI processes, raw HTTP against the relay, and Chromium on the relay's /players/ page.

Everything runs on 127.0.0.1 (interop/run.sh gives the tests a loopback-only namespace).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import re
import signal
import socket
import struct
import time
import urllib.error
import urllib.request
import zlib
from pathlib import Path
from typing import Any, Callable

from interop.conftest import ManagedProcess
from interop.peers import free_port


def free_udp_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def poll(fn: Callable[[], Any], until: Callable[[Any], bool], timeout: float,
         interval: float = 0.25) -> tuple[Any, float]:
    """Call fn() until until(value) holds or timeout; returns (last value, seconds waited)."""
    start = time.monotonic()
    value = fn()
    while not until(value):
        if time.monotonic() - start > timeout:
            break
        time.sleep(interval)
        value = fn()
    return value, time.monotonic() - start


# ---- HTTP ---------------------------------------------------------------------------------------

class Reply:
    """One HTTP reply: status, headers (case-insensitive lookup), body bytes, and its JSON if any."""

    def __init__(self, status: int, headers, body: bytes):
        self.status = status
        self.headers = headers
        self.body = body

    @property
    def text(self) -> str:
        return self.body.decode("utf-8", "replace")

    def json(self) -> Any:
        return json.loads(self.body)

    def __repr__(self) -> str:
        return f"HTTP {self.status} {self.headers.get('Content-Type')!r} {self.text[:300]!r}"


def http(method: str, url: str, body: bytes | str | None = None, content_type: str | None = None,
         timeout: float = 15, headers: dict | None = None) -> Reply:
    data = body.encode() if isinstance(body, str) else body
    req = urllib.request.Request(url, data=data, method=method)
    if content_type:
        req.add_header("Content-Type", content_type)
    for k, v in (headers or {}).items():
        req.add_header(k, v)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as res:
            return Reply(res.status, res.headers, res.read())
    except urllib.error.HTTPError as exc:
        return Reply(exc.code, exc.headers, exc.read())


def raw_http(host: str, port: int, data: bytes, timeout: float = 10) -> bytes:
    """Send raw bytes on a fresh TCP connection; returns everything read until EOF or timeout."""
    with socket.create_connection((host, port), timeout=timeout) as s:
        s.sendall(data)
        chunks = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                chunk = s.recv(65536)
            except socket.timeout:
                break
            if not chunk:
                break
            chunks.append(chunk)
            if b"\r\n\r\n" in b"".join(chunks) and _complete(b"".join(chunks)):
                break
        return b"".join(chunks)


def connect_from(source_ip: str, host: str, port: int, timeout: float = 5) -> socket.socket:
    """A TCP connection from one of the namespace's loopback addresses (127.0.0.2, …): each is
    its own client as far as per-address limits go."""
    s = socket.socket()
    s.bind((source_ip, 0))
    s.settimeout(timeout)
    s.connect((host, port))
    return s


def read_head(sock: socket.socket) -> tuple[int | None, bytes]:
    """(status, the response's bytes: its head and body, or a 101's head and what followed) on
    `sock`; status None if the server closed without answering or nothing came in time."""
    data = b""
    try:
        while b"\r\n\r\n" not in data or (not data.startswith(b"HTTP/1.1 101") and not _complete(data)):
            chunk = sock.recv(4096)
            if not chunk:
                break
            data += chunk
    except (TimeoutError, OSError):
        pass
    m = re.match(rb"HTTP/1\.[01] (\d{3}) ", data)
    return (int(m.group(1)) if m else None), data


def _complete(data: bytes) -> bool:
    head, _, body = data.partition(b"\r\n\r\n")
    m = re.search(rb"(?im)^content-length:\s*(\d+)", head)
    return m is None or len(body) >= int(m.group(1))


# ---- the relay ------------------------------------------------------------------------------------

class Relay:
    """`swiftrtc serve` on free loopback ports; its output goes to <artifacts>/relay.log."""

    def __init__(self, binary: Path, log_path: Path, startup_timeout: float = 20, extra_args: tuple[str, ...] = ()):
        self.host = "127.0.0.1"
        self.log_path = log_path
        self.http_port = free_port()
        self.udp_port = free_udp_port()
        self.process = ManagedProcess(
            [str(binary), "serve", "--http", f"{self.host}:{self.http_port}",
             "--udp", f"{self.host}:{self.udp_port}", "--candidate", self.host, *extra_args], log_path)
        try:
            self.banner = self.process.wait_for_line(r"^serve: API on .*$", startup_timeout).group(0)
        except Exception:
            self.process.close()
            raise
        self.base = f"http://{self.host}:{self.http_port}"

    def text(self) -> str:
        return self.process.text()

    def alive(self) -> bool:
        return self.process.proc.poll() is None

    def close(self) -> None:
        # What the relay counted (resends, budgets, drops) goes next to its log: the numbers a
        # failed run is read with afterwards.
        if self.alive():
            try:
                reply = self.request("GET", "/metrics/", timeout=3)
                if reply.status == 200:
                    self.log_path.with_name("relay-metrics.txt").write_bytes(reply.body)
            except Exception:
                pass
        self.process.close()

    # URLs
    def webrtc_url(self, app: str, stream: str) -> str:
        return f"webrtc://{self.host}:{self.http_port}/{app}/{stream}"

    def whip_url(self, app: str, stream: str) -> str:
        return f"{self.base}/rtc/v1/whip/?app={app}&stream={stream}"

    def whep_url(self, app: str, stream: str) -> str:
        return f"{self.base}/rtc/v1/whep/?app={app}&stream={stream}"

    # HTTP
    def request(self, method: str, path: str, body: bytes | str | None = None,
                content_type: str | None = None, timeout: float = 15, headers: dict | None = None) -> Reply:
        return http(method, self.base + path, body, content_type, timeout, headers)

    def raw(self, data: bytes, timeout: float = 10) -> bytes:
        return raw_http(self.host, self.http_port, data, timeout)

    def srs_api(self, role: str, body: bytes | str | dict) -> Reply:
        data = json.dumps(body) if isinstance(body, dict) else body
        return self.request("POST", f"/rtc/v1/{role}/", data, "application/json")

    def streams(self) -> list[dict]:
        reply = self.request("GET", "/api/v1/streams/", timeout=10)
        assert reply.status == 200, f"GET /api/v1/streams/: {reply}"
        doc = reply.json()
        assert doc.get("code") == 0, doc
        return doc.get("streams", [])

    def stream(self, app: str, name: str) -> dict | None:
        for s in self.streams():
            if s.get("app") == app and s.get("name") == name:
                return s
        return None

    def wait_event(self, pattern: str, timeout: float = 20) -> re.Match:
        """Wait for a line of relay output (e.g. `publisher \\S+ connected \\(live/a\\)`)."""
        return self.process.wait_for_line(pattern, timeout)


# ---- swiftrtc publish / play / call ----------------------------------------------------------------

class SwiftRun:
    """One `swiftrtc <command>` process with its output in <dir>/<name>.log and JSON in <name>.json."""

    def __init__(self, binary: Path, command: str, args: list[str], directory: Path, name: str,
                 stats: bool = True, stdin_pipe: bool = False):
        self.name = name
        self.json_path = directory / f"{name}.json" if stats else None
        argv = [str(binary), command, *args]
        if self.json_path is not None:
            self.json_path.unlink(missing_ok=True)
            argv += ["--stats-json", str(self.json_path)]
        self.argv = argv
        self.started = time.monotonic()
        self.process = ManagedProcess(argv, directory / f"{name}.log", stdin_pipe=stdin_pipe)
        self.seconds: float | None = None

    @property
    def pid(self) -> int:
        return self.process.proc.pid

    def text(self) -> str:
        # The status line rewrites itself with \r; show each update on its own line.
        return self.process.text().replace("\r", "\n")

    def wait(self, timeout: float) -> int:
        """Wait for exit; returns the exit code or raises with the output on timeout."""
        try:
            code = self.process.proc.wait(timeout=timeout)
        except Exception:
            raise AssertionError(f"{self.name} ({' '.join(self.argv[1:3])}) still running after "
                                 f"{timeout} s:\n{self.text()[-3000:]}")
        self.seconds = time.monotonic() - self.started
        return code

    def stats(self) -> dict:
        assert self.json_path is not None and self.json_path.is_file(), (
            f"{self.name} wrote no stats JSON at {self.json_path}; output:\n{self.text()[-3000:]}")
        try:
            return json.loads(self.json_path.read_text())
        except ValueError as exc:
            raise AssertionError(f"{self.name} stats JSON does not parse: {exc}") from exc

    def kill(self, sig: int = signal.SIGKILL) -> None:
        """Signal only this process (not its group's helpers; there are none)."""
        try:
            os.kill(self.process.proc.pid, sig)
        except ProcessLookupError:
            pass
        self.process.proc.wait(timeout=10)

    def close(self) -> None:
        self.process.close()


def summary(stats: dict) -> dict:
    """The top-level keys of a --stats-json document, without the bulky W3C stats."""
    return {k: v for k, v in stats.items() if k not in ("stats", "play", "publish", "inbound",
                                                        "outbound", "relayStreams")}


# ---- STUN ---------------------------------------------------------------------------------------

def stun_binding_request(username: str, password: str | bytes) -> bytes:
    """An ICE connectivity check as a controlling full agent nominating the pair (RFC 8445
    7.1.2): USERNAME, PRIORITY, ICE-CONTROLLING, USE-CANDIDATE, MESSAGE-INTEGRITY, FINGERPRINT."""
    def attr(kind: int, value: bytes) -> bytes:
        return struct.pack(">HH", kind, len(value)) + value + b"\0" * (-len(value) % 4)
    tid = os.urandom(12)
    body = (attr(0x0006, username.encode()) + attr(0x0024, struct.pack(">I", 1853824767))
            + attr(0x802A, os.urandom(8)) + attr(0x0025, b""))
    header = lambda extra: struct.pack(">HHI", 0x0001, len(body) + extra, 0x2112A442) + tid
    key = password.encode() if isinstance(password, str) else password
    mac = hmac.new(key, header(24) + body, hashlib.sha1).digest()
    body += attr(0x0008, mac)
    crc = zlib.crc32(header(8) + body) ^ 0x5354554E
    return header(8) + body + attr(0x8028, struct.pack(">I", crc))



# ---- PNG ------------------------------------------------------------------------------------------

def png_info(path: Path) -> dict:
    """Checks a PNG's signature and chunk CRCs up to IEND; returns width, height, colour type."""
    data = path.read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise AssertionError(f"{path} is not a PNG (signature {data[:8]!r})")
    pos, info, seen_iend, idat = 8, {}, False, 0
    while pos + 12 <= len(data):
        (length,) = struct.unpack(">I", data[pos:pos + 4])
        ctype = data[pos + 4:pos + 8]
        chunk = data[pos + 8:pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length:pos + 12 + length])
        if zlib.crc32(ctype + chunk) & 0xFFFFFFFF != crc:
            raise AssertionError(f"{path}: bad CRC in chunk {ctype!r} at offset {pos}")
        if ctype == b"IHDR":
            w, h, depth, colour = struct.unpack(">IIBB", chunk[:10])
            info.update(width=w, height=h, bitDepth=depth, colourType=colour)
        elif ctype == b"IDAT":
            idat += length
        elif ctype == b"IEND":
            seen_iend = True
            break
        pos += 12 + length
    if not info or not seen_iend or idat == 0:
        raise AssertionError(f"{path}: incomplete PNG (IHDR {bool(info)}, IDAT {idat} bytes, IEND {seen_iend})")
    info["bytes"] = len(data)
    return info


# ---- Chromium on the relay's player page -----------------------------------------------------------

# The player page keeps its RTCPeerConnection in a script-level `let pc`, visible to evaluate().
PC_STATS_JS = r"""
(async () => {
  if (typeof pc === 'undefined' || !pc) return null;
  const report = await pc.getStats();
  const byId = new Map();
  report.forEach((s) => byId.set(s.id, s));
  const codec = (s) => (s && s.codecId && byId.get(s.codecId)) ? byId.get(s.codecId).mimeType : null;
  const out = {connectionState: pc.connectionState, inbound: null, inboundAudio: null, outbound: [],
               outboundAudio: null, pair: null};
  report.forEach((s) => {
    if (s.type === 'inbound-rtp' && s.kind === 'video') {
      out.inbound = {framesDecoded: s.framesDecoded || 0, frameWidth: s.frameWidth, frameHeight: s.frameHeight,
                     packetsReceived: s.packetsReceived, packetsLost: s.packetsLost, keyFramesDecoded: s.keyFramesDecoded,
                     framesPerSecond: s.framesPerSecond, pliCount: s.pliCount, nackCount: s.nackCount,
                     freezeCount: s.freezeCount, totalFreezesDuration: s.totalFreezesDuration,
                     framesDropped: s.framesDropped, codec: codec(s)};
    } else if (s.type === 'inbound-rtp' && s.kind === 'audio') {
      out.inboundAudio = {packetsReceived: s.packetsReceived, codec: codec(s)};
    } else if (s.type === 'outbound-rtp' && s.kind === 'video') {
      out.outbound.push({framesEncoded: s.framesEncoded, framesSent: s.framesSent, frameWidth: s.frameWidth,
                         frameHeight: s.frameHeight, packetsSent: s.packetsSent, rid: s.rid, codec: codec(s),
                         qualityLimitationReason: s.qualityLimitationReason, encoderImplementation: s.encoderImplementation});
    } else if (s.type === 'outbound-rtp' && s.kind === 'audio') {
      out.outboundAudio = {packetsSent: s.packetsSent, codec: codec(s)};
    } else if (s.type === 'candidate-pair' && s.nominated && s.state === 'succeeded') {
      const l = byId.get(s.localCandidateId), r = byId.get(s.remoteCandidateId);
      out.pair = {local: l && `${l.address}:${l.port}`, remote: r && `${r.address}:${r.port}`,
                  rtt: s.currentRoundTripTime, availableOutgoingBitrate: s.availableOutgoingBitrate};
    }
  });
  return out;
})()
"""

# Reads the SwiftRTC test pattern (TESTPATTERN.md) from the page's <video> through a canvas.
READ_PATTERN_JS = r"""
(() => {
  const v = document.getElementById('video');
  if (!v || !v.videoWidth || !v.videoHeight) return null;
  const W = v.videoWidth, H = v.videoHeight;
  const c = document.createElement('canvas');
  c.width = W; c.height = H;
  const g = c.getContext('2d', {willReadFrequently: true});
  g.drawImage(v, 0, 0, W, H);
  const cw = Math.floor(W / 32), ch = Math.floor(H / 24);
  const d = g.getImageData(0, 0, W, 3 * ch).data;
  const words = [];
  for (let row = 0; row < 3; row++) {
    let word = 0;
    for (let col = 0; col < 32; col++) {
      const x0 = col * cw + Math.floor(cw / 4), x1 = col * cw + Math.floor(3 * cw / 4);
      const y0 = row * ch + Math.floor(ch / 4), y1 = row * ch + Math.floor(3 * ch / 4);
      let sum = 0, n = 0;
      for (let y = y0; y < y1; y++) for (let x = x0; x < x1; x++) {
        const i = (y * W + x) * 4;
        sum += 0.299 * d[i] + 0.587 * d[i + 1] + 0.114 * d[i + 2];
        n++;
      }
      word = word * 2 + (n && sum / n > 128 ? 1 : 0);
    }
    words.push(word);
  }
  const valid = ((~(words[0] ^ words[1])) >>> 0) === words[2];
  const now = Date.now();
  const latency = valid ? ((now % 4294967296) - words[1] + 4294967296) % 4294967296 : null;
  return {width: W, height: H, frame: words[0], captureMs: words[1], check: words[2], valid,
          latencyMs: latency, currentTime: v.currentTime};
})()
"""


def open_player_page(browser, relay: Relay, app: str, stream: str, query: str = ""):
    """A new tab on the relay's /players/ page (`query`: its own, e.g. "layer=low") with #app/#stream filled in."""
    page = browser.new_page(relay.base + "/players/" + (f"?{query}" if query else ""))
    page.evaluate(f"document.getElementById('app').value = {json.dumps(app)}; "
                  f"document.getElementById('stream').value = {json.dumps(stream)}; true")
    return page


def page_log(page) -> str:
    try:
        return page.evaluate("document.getElementById('log').textContent", timeout=5) or ""
    except Exception as exc:
        return f"<could not read #log: {exc!r}>"


def close_page(browser, page) -> None:
    try:
        page.evaluate("(typeof pc !== 'undefined' && pc) ? (pc.close(), true) : false", timeout=5)
    except Exception:
        pass
    try:
        browser.send("Target.closeTarget", {"targetId": page.target_id}, timeout=5)
    except Exception:
        pass


# ---- reading the test pattern from files ---------------------------------------------------------

def png_pattern(path: Path) -> tuple[int, int] | None:
    """(frame number, capture ms) read from a PNG of a test-pattern frame, None if unreadable.

    Decodes with PyAV (installed with aiortc); raises ImportError without it.
    """
    import av
    import numpy as np
    from interop.testpattern import read_pattern
    with av.open(str(path)) as container:
        frame = next(container.decode(video=0))
        rgb = frame.to_ndarray(format="rgb24").astype(np.float64)
    luma = 0.299 * rgb[..., 0] + 0.587 * rgb[..., 1] + 0.114 * rgb[..., 2]
    return read_pattern(luma)


def y4m_patterns(path: Path) -> dict:
    """Size and the per-frame (frame number, capture ms) or None of a recorded Y4M file."""
    from interop.testpattern import parse_y4m, read_pattern
    y4m = parse_y4m(path)
    return {"width": y4m["width"], "height": y4m["height"],
            "frames": [read_pattern(f) for f in y4m["frames"]]}
