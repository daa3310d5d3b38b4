"""Interop: the P2P signaling endpoint (`swiftrtc signal`, and the same one inside `swiftrtc serve`)
with Chromium's WebSocket client, which nobody here wrote, and a raw stdlib-only Python client
that sends exact frames.

Issue 11, part 1: joined / peer-joined, offer and candidates (as a browser's JSON.stringify makes
them) forwarded verbatim, peer-left, room full, malformed JSON answered with the connection
open, a message over the limit closed with 1009, a fragmented message assembled.
Issue 18: a page from an origin the server was not told about cannot connect; with
--signal-token a peer needs the token (a browser offers it as a subprotocol) and every room a
key, and a stranger with the token but another key gets neither the seat nor the offer.
Run inside the loopback-only namespace: interop/run.sh -k signal
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import socket
import struct
import urllib.parse

import pytest

from interop.conftest import ManagedProcess
from interop.relay_helpers import read_head
from interop.ws_client import RawPeer, ws_handshake

PEERS_JS = r"""
window.peers = {};
window.bearerProtocol = t => 'swiftrtc.bearer.' + btoa(t).replaceAll('+', '-').replaceAll('/', '_').replace(/=+$/, '');
window.openPeer = (name, url, protocols) => new Promise((resolve, reject) => {
  const p = {messages: [], closed: null};
  const ws = protocols ? new WebSocket(url, protocols) : new WebSocket(url);
  p.ws = ws;
  ws.onmessage = (e) => p.messages.push(e.data);
  ws.onclose = (e) => { p.closed = {code: e.code, reason: e.reason}; };
  ws.onopen = () => resolve(true);
  ws.onerror = () => reject(new Error('WebSocket error on ' + name));
  window.peers[name] = p;
});
true
"""


@contextlib.contextmanager
def start_signaling(kind: str, swift_bin, artifact_dir, logs, *extra: str):
    """`swiftrtc signal` or `swiftrtc serve` on free ports, for a `with`: its signaling URL."""
    args = [str(swift_bin), kind, "--http", "127.0.0.1:0", *extra]
    if kind == "serve":
        args += ["--udp", "127.0.0.1:0"]
    proc = ManagedProcess(args, artifact_dir / f"{kind}.log")
    logs.append((f"swiftrtc {kind}", proc.text))
    try:
        m = proc.wait_for_line(r"(?:listening|signaling) on (ws://\S+)\?room=NAME", timeout=20)
        yield m.group(1)
    finally:
        proc.close()


def origin_of(url: str) -> str:
    parts = urllib.parse.urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


@pytest.fixture(params=["signal", "serve"])
def signal_url(request, swift_bin, artifact_dir, logs, pages_server):
    # The test page is served from another port: the server is told to take its Origin.
    with start_signaling(request.param, swift_bin, artifact_dir, logs, "--cors-origin", origin_of(pages_server.url)) as url:
        yield url




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
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nConnection: close\r\n\r\n".encode())
        reply = b""
        while chunk := s.recv(4096):
            reply += chunk
    assert reply.startswith(b"HTTP/1.1 400 Bad Request\r\n")
    assert reply.endswith(b"missing or invalid room: ?room=NAME with 1-64 letters, digits, '-', '_' or '.'\n")


@pytest.mark.parametrize("kind", ["signal", "serve"])
def test_page_from_an_unlisted_origin_cannot_connect(kind, swift_bin, artifact_dir, logs, page):
    """Without --cors-origin for it, a page from another origin (here: the test page's port) gets
    403 for its WebSocket handshake: Chromium sees the connection fail and no room is joined."""
    with start_signaling(kind, swift_bin, artifact_dir, logs) as url:
        outcome = page.evaluate(f"""new Promise(resolve => {{
          const ws = new WebSocket({json.dumps(url + "?room=foreign")});
          ws.onopen = () => resolve('open');
          ws.onclose = e => resolve('closed ' + e.code);
        }})""", timeout=15)
        assert outcome == "closed 1006", outcome
        assert "joins room foreign" not in (artifact_dir / f"{kind}.log").read_text()


@pytest.mark.parametrize("kind", ["signal", "serve"])
def test_signal_token_and_room_keys(kind, swift_bin, artifact_dir, logs, page, pages_server):
    """--signal-token: without a token 401, a wrong one 403, no key 400. Chromium joins with the
    token as a subprotocol (the server answers swiftrtc.signal) and a key; a stranger with the
    token and another key is refused (wrong room key, 1008) and never sees the offer; a raw peer
    with `Authorization: Bearer` and the key joins and gets it."""
    key = "Zp4vQ8-n_Tk2Lm9xWc3R"
    with start_signaling(kind, swift_bin, artifact_dir, logs, "--signal-token", "sig-secret",
                         "--cors-origin", origin_of(pages_server.url)) as url:
        host, port, path = RawPeer._split(url)
        statuses = {}
        for label, query, headers in (("no token", f"?room=k&key={key}", {}),
                                      ("wrong token", f"?room=k&key={key}", {"Authorization": "Bearer nope"}),
                                      ("no key", "?room=k", {"Authorization": "Bearer sig-secret"})):
            with socket.create_connection((host, port), timeout=10) as s:
                s.sendall(ws_handshake(path + query, f"{host}:{port}", headers))
                statuses[label] = read_head(s)
        assert statuses["no token"][0] == 401 and b"signaling needs a token" in statuses["no token"][1], statuses
        assert statuses["wrong token"][0] == 403 and statuses["no key"][0] == 400, statuses

        page.evaluate(PEERS_JS)
        protocols = page.evaluate("['swiftrtc.signal', bearerProtocol('sig-secret')]")
        page.call("openPeer", "a", f"{url}?room=k&key={key}", protocols)
        page.wait_for("peers.a.messages.length >= 1", timeout=10)
        assert page.evaluate("peers.a.messages[0]") == '{"type":"joined","room":"k","peers":0}'
        assert page.evaluate("peers.a.ws.protocol") == "swiftrtc.signal"
        page.call("openPeer", "stranger", f"{url}?room=k&key={key[:-1]}X", protocols)
        page.wait_for("peers.stranger.closed !== null", timeout=10)
        assert page.evaluate("peers.stranger.messages") == ['{"type":"error","error":"wrong room key"}']
        assert page.evaluate("peers.stranger.closed") == {"code": 1008, "reason": "wrong room key"}

        raw = RawPeer(f"{url}?room=k&key={key}", headers={"Authorization": "Bearer sig-secret"})
        try:
            assert raw.status_line == "HTTP/1.1 101 Switching Protocols" and raw.accept_ok
            assert raw.text() == '{"type":"joined","room":"k","peers":1}'
            page.wait_for("peers.a.messages.length >= 2", timeout=10)
            page.evaluate("peers.a.ws.send(JSON.stringify({type: 'offer', sdp: 'v=0 for the invited peer'})), true")
            assert json.loads(raw.text()) == {"type": "offer", "sdp": "v=0 for the invited peer"}
            assert page.evaluate("peers.stranger.messages.length") == 1
        finally:
            raw.close()
