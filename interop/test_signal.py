"""Interop: the P2P signaling endpoint (`swiftrtc signal`, and the same one inside `swiftrtc serve`)
with Chromium's WebSocket client, which nobody here wrote, and a raw stdlib-only Python client
that sends exact frames.

Issue 11, part 1: joined / peer-joined, offer and candidates (as a browser's JSON.stringify makes
them) forwarded verbatim, peer-left, room full, malformed JSON answered with the connection
open, a message over the limit closed with 1009, a fragmented message assembled.
Run inside the loopback-only namespace: interop/run.sh -k signal
"""

from __future__ import annotations

import base64
import json
import os
import socket
import struct

import pytest

from interop.conftest import ManagedProcess
from interop.ws_client import RawPeer

PEERS_JS = r"""
window.peers = {};
window.openPeer = (name, url) => new Promise((resolve, reject) => {
  const p = {messages: [], closed: null};
  const ws = new WebSocket(url);
  p.ws = ws;
  ws.onmessage = (e) => p.messages.push(e.data);
  ws.onclose = (e) => { p.closed = {code: e.code, reason: e.reason}; };
  ws.onopen = () => resolve(true);
  ws.onerror = () => reject(new Error('WebSocket error on ' + name));
  window.peers[name] = p;
});
true
"""


@pytest.fixture(params=["signal", "serve"])
def signal_url(request, swift_bin, artifact_dir, logs):
    args = [str(swift_bin), request.param, "--http", "127.0.0.1:0"]
    if request.param == "serve":
        args += ["--udp", "127.0.0.1:0"]
    proc = ManagedProcess(args, artifact_dir / f"{request.param}.log")
    logs.append((f"swiftrtc {request.param}", proc.text))
    try:
        m = proc.wait_for_line(r"(?:listening|signaling) on (ws://\S+)\?room=NAME", timeout=20)
        yield m.group(1)
    finally:
        proc.close()




def test_chromium_peers_signal_through_swiftrtc(signal_url, page):
    page.evaluate(PEERS_JS)
    url = signal_url + "?room=chromium"
    page.call("openPeer", "a", url)
    page.wait_for("peers.a.messages.length >= 1", timeout=10)
    assert page.evaluate("peers.a.messages[0]") == '{"type":"joined","room":"chromium","peers":0}'
    page.call("openPeer", "b", url)
    page.wait_for("peers.b.messages.length >= 1 && peers.a.messages.length >= 2", timeout=10)
    assert page.evaluate("peers.b.messages[0]") == '{"type":"joined","room":"chromium","peers":1}'
    assert page.evaluate("peers.a.messages[1]") == '{"type":"peer-joined"}'

    # What a browser sends: JSON.stringify of its descriptions and candidates, verbatim across.
    sent = page.evaluate("""(async () => {
      const pc = new RTCPeerConnection();
      pc.createDataChannel('x');
      const offer = await pc.createOffer();
      const c = new RTCIceCandidate({candidate: 'candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host',
                                     sdpMid: '0', sdpMLineIndex: 0});
      const texts = [JSON.stringify(offer), JSON.stringify({type: 'candidate', ...c.toJSON()}),
                     JSON.stringify({type: 'candidate', candidate: '', sdpMid: '0', sdpMLineIndex: 0})];
      pc.close();
      for (const t of texts) peers.a.ws.send(t);
      return texts; })()""")
    page.wait_for(f"peers.b.messages.length >= {1 + len(sent)}", timeout=10)
    assert page.evaluate("peers.b.messages.slice(1)") == sent
    assert json.loads(sent[0])["type"] == "offer"

    # Malformed JSON: an error back, the connection stays open.
    page.evaluate("peers.b.ws.send('{not json'), true")
    page.wait_for("peers.b.messages.length >= 5", timeout=10)
    assert json.loads(page.evaluate("peers.b.messages[4]")) == {"type": "error", "error": "malformed JSON: expected one object per message"}
    page.evaluate("peers.b.ws.send(JSON.stringify({type: 'answer', sdp: 'v=0\\r\\n'})), true")
    page.wait_for("peers.a.messages.length >= 3", timeout=10)
    assert json.loads(page.evaluate("peers.a.messages[2]")) == {"type": "answer", "sdp": "v=0\r\n"}

    # A third peer is refused; 1 MiB closes the sender with 1009 and the other hears peer-left.
    page.call("openPeer", "c", url)
    page.wait_for("peers.c.closed !== null", timeout=10)
    assert page.evaluate("peers.c.messages") == ['{"type":"error","error":"room full"}']
    assert page.evaluate("peers.c.closed") == {"code": 1008, "reason": "room full"}
    page.evaluate("peers.b.ws.send(JSON.stringify({type: 'offer', sdp: 'x'.repeat(1 << 20)})), true")
    page.wait_for("peers.b.closed !== null && peers.a.messages.length >= 4", timeout=10)
    assert page.evaluate("peers.b.closed.code") == 1009
    assert page.evaluate("peers.a.messages[3]") == '{"type":"peer-left"}'
    page.evaluate("peers.a.ws.close(1000), true")


def test_raw_fragmented_message_reaches_chromium(signal_url, page):
    page.evaluate(PEERS_JS)
    url = signal_url + "?room=raw"
    page.call("openPeer", "a", url)
    raw = RawPeer(url)
    try:
        assert raw.status_line == "HTTP/1.1 101 Switching Protocols" and raw.accept_ok
        assert raw.text() == '{"type":"joined","room":"raw","peers":1}'
        text = json.dumps({"type": "offer", "sdp": "v=0 in three fragments"}).encode()
        raw.send_frame(0x1, text[:7], fin=False)
        raw.send_frame(0x9, b"ping between")
        raw.send_frame(0x0, text[7:20], fin=False)
        raw.send_frame(0x0, text[20:])
        assert raw.frame() == (0xA, b"ping between")
        page.wait_for("peers.a.messages.length >= 3", timeout=10)
        assert page.evaluate("peers.a.messages") == ['{"type":"joined","room":"raw","peers":0}', '{"type":"peer-joined"}', text.decode()]

        # Closing handshake: our close frame is echoed with its code, then Chromium hears peer-left.
        raw.send_frame(0x8, struct.pack(">H", 1000) + b"bye")
        assert raw.frame() == (0x8, struct.pack(">H", 1000))
        page.wait_for("peers.a.messages.length >= 4", timeout=10)
        assert page.evaluate("peers.a.messages[3]") == '{"type":"peer-left"}'
    finally:
        raw.close()


def test_missing_room_is_400(signal_url):
    host, port, path = RawPeer._split(signal_url)
    with socket.create_connection((host, port), timeout=10) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode())
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert reply.endswith(b"missing or invalid room: ?room=NAME with 1-64 letters, digits, '-', '_' or '.'\n")
