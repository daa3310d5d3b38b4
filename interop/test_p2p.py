"""Interop: peer-to-peer calls through the signaling server (issue 11, parts 2 and 3).

- Chromium on the call page (`/call/?room=NAME`) ↔ `swiftrtc p2p` through `swiftrtc signal`, with
  either side joining first (so either side offers): each decodes the other's video (the Swift
  test pattern read back off Chromium's <video>), chat messages both ways on the data channel,
  and the hang-up seen by the other side.
- Two `swiftrtc p2p` processes through `swiftrtc serve` (the same endpoint inside the relay).
- With `serve --signal-token` (issue 18.3): the call page takes the token from its fragment and
  makes the room's key; `swiftrtc p2p --token` joins with the key from the invitation.
Run inside the loopback-only namespace: interop/run.sh -k p2p
"""

from __future__ import annotations

import subprocess
import time

import pytest

from interop.conftest import ManagedProcess, write_json
from interop.media_files import decode_errors, ffprobe
from interop.relay_helpers import PC_STATS_JS, READ_PATTERN_JS, SwiftRun, close_page, poll, summary


@pytest.fixture
def signal_server(swift_bin, artifact_dir, logs):
    proc = ManagedProcess([str(swift_bin), "signal", "--http", "127.0.0.1:0"], artifact_dir / "signal.log")
    logs.append(("swiftrtc signal", proc.text))
    try:
        m = proc.wait_for_line(r"listening on (ws://(\S+?)/rtc/v1/signal/)\?room=NAME", timeout=20)
        yield {"ws": m.group(1), "http": "http://" + m.group(2)}
    finally:
        proc.close()


def p2p(swift_bin, url: str, artifact_dir, name: str, duration: float = 25, extra: tuple[str, ...] = ()) -> SwiftRun:
    return SwiftRun(swift_bin, "p2p", [url, "--source", "testsrc", "--size", "640x360", "--duration", str(duration), *extra],
                    artifact_dir, name, stdin_pipe=True)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("first", ["chromium", "swift"])
def test_chromium_call_page_with_swift_p2p(first, signal_server, browser, swift_bin, artifact_dir, logs):
    room = f"room-{first}"
    page = browser.new_page(f"{signal_server['http']}/call/?room={room}")
    logs.append(("call page log", lambda: "\n".join(page.evaluate("window.log", timeout=5) or [])))
    swift = None
    try:
        if first == "swift":
            swift = p2p(swift_bin, f"{signal_server['ws']}?room={room}", artifact_dir, "p2p")
            logs.append(("swiftrtc p2p", swift.text))
            swift.process.wait_for_line(r"p2p: waiting for the other peer", timeout=15)
        page.evaluate("document.getElementById('connect').click(); true")
        if first == "chromium":
            page.wait_for("window.log.includes('state waiting for the peer')", timeout=15)
            swift = p2p(swift_bin, f"{signal_server['ws']}?room={room}", artifact_dir, "p2p")
            logs.append(("swiftrtc p2p", swift.text))
        t0 = time.monotonic()
        stats, _ = poll(lambda: page.evaluate(PC_STATS_JS, timeout=10),
                        lambda s: bool(s and s["inbound"] and s["inbound"]["framesDecoded"] > 30), timeout=25, interval=0.25)
        connect_s = time.monotonic() - t0
        assert stats and stats["inbound"] and stats["inbound"]["framesDecoded"] > 30, (
            f"Chromium decoded nothing: {stats}\n{page.evaluate('window.log', timeout=5)}")
        reads = []
        for _ in range(15):
            reads.append(page.evaluate(READ_PATTERN_JS, timeout=10))
            time.sleep(0.1)
        # Chat both ways once the channel is open on both sides.
        page.wait_for("window.chat && window.chat.readyState === 'open'", timeout=15)
        swift.process.wait_for_line(r"p2p: chat open", timeout=15)
        page.evaluate("window.chat.send('hello from chromium'); true")
        swift.process.wait_for_line(r"chat: hello from chromium", timeout=10)
        swift.process.send_line("hello from swift")
        page.wait_for("window.chatLog.includes('peer: hello from swift')", timeout=10)
        time.sleep(1.5)   # a little more video for Swift's side
        page.screenshot(str(artifact_dir / "call-page.png"))
        # What Chromium encodes as the call ends: the size Swift's last frames must have.
        sent = ((page.evaluate(PC_STATS_JS, timeout=10) or {}).get("outbound") or [{}])[0]
        page.evaluate("document.getElementById('hangup').click(); true")
        swift.process.wait_for_line(r"p2p: the peer hung up", timeout=10)
        code = swift.wait(timeout=20)
        page_log = page.evaluate("window.log", timeout=5)
    finally:
        close_page(browser, page)
        if swift is not None:
            swift.close()
    s = summary(swift.stats())
    valid = [r for r in reads if r and r.get("valid")]
    write_json(artifact_dir / "p2p.json", {"first": first, "chromiumStats": stats, "chromiumSentAtEnd": sent,
                                            "patternReads": reads, "swift": s, "pageLog": page_log})
    print(f"{first} first: Chromium decoding after {connect_s:.1f} s, pattern read on {len(valid)}/{len(reads)}; "
          f"Swift decoded {s.get('framesDecoded')} frames {s.get('frameWidth')}x{s.get('frameHeight')}, "
          f"chat {s.get('chatSent')} sent / {s.get('chatReceived')} received; Chromium sent {sent}")
    assert code == 0, swift.text()[-2000:]
    # Our first frames are sized for the estimator's 300 kbit/s start until its probes confirm
    # more (`BandwidthAdaptation.start`: 480x270 from this 640x360 source); on a busy CI machine
    # the page once read one of those 1.0 s in, 0.1 s before the probes' result moved the sender
    # to 640x360. Those only before the first 640x360 read, that within 2 s; 640x360 from then on.
    full = next((i for i, r in enumerate(valid) if (r["width"], r["height"]) == (640, 360)), None)
    assert len(valid) >= 10 and full is not None and valid[full]["currentTime"] <= 2.0, reads
    assert all((r["width"], r["height"]) in {(480, 270), (320, 180)} for r in valid[:full]), reads
    assert all((r["width"], r["height"]) == (640, 360) for r in valid[full:]), reads
    frames = [r["frame"] for r in valid]
    assert all(b >= a for a, b in zip(frames, frames[1:])), frames
    # Chromium sends its 640x360 camera whole, or smaller when its encoder starts below the
    # bit rate it wants for that size (its first frames can go out before the first probe is
    # acknowledged: 320x180 for a whole call in a CI run). Swift decodes what was sent.
    sent_size = (sent.get("frameWidth"), sent.get("frameHeight"))
    assert sent_size in {(640, 360), (480, 270), (320, 180)}, f"Chromium sent {sent}"
    assert s.get("framesDecoded", 0) >= 30 and (s.get("frameWidth"), s.get("frameHeight")) == sent_size, (
        f"Swift decoded {s.get('framesDecoded')} frames, the last {s.get('frameWidth')}x{s.get('frameHeight')}; "
        f"Chromium sent {sent}")
    assert s.get("audioFramesDecoded", 0) > 50, s
    assert s.get("chatSent") == 1 and s.get("chatReceived") == 1 and s.get("hungUp") == "the peer hung up", s


@pytest.mark.timeout(60)
def test_two_swift_peers_through_serve(swift_bin, artifact_dir, logs):
    proc = ManagedProcess([str(swift_bin), "serve", "--http", "127.0.0.1:0", "--udp", "127.0.0.1:0"],
                          artifact_dir / "serve.log")
    logs.append(("swiftrtc serve", proc.text))
    try:
        url = proc.wait_for_line(r"signaling on (ws://\S+)\?room=NAME", timeout=20).group(1) + "?room=pair"
        recording = artifact_dir / "p2p-a.mkv"   # p2p --record: what a receives, as it came
        a = p2p(swift_bin, url, artifact_dir, "p2p-a", duration=8, extra=("--record", str(recording)))
        logs.append(("p2p a", a.text))
        a.process.wait_for_line(r"p2p: waiting for the other peer", timeout=15)
        b = p2p(swift_bin, url, artifact_dir, "p2p-b", duration=30)
        logs.append(("p2p b", b.text))
        for run, other in ((a, "b"), (b, "a")):
            run.process.wait_for_line(r"p2p: chat open", timeout=15)
            run.process.send_line(f"from the other side ({other} reads this)")
        code_a = a.wait(timeout=30)   # a ends at 8 s and says bye: b must notice and end too
        b.process.wait_for_line(r"p2p: the peer hung up", timeout=10)
        code_b = b.wait(timeout=20)
    finally:
        proc.close()
    sa, sb = summary(a.stats()), summary(b.stats())
    write_json(artifact_dir / "p2p.json", {"a": sa, "b": sb})
    for s in (sa, sb):
        assert s.get("patternVerified") is True and s.get("framesDecoded", 0) >= 60, s
        assert s.get("chatSent") == 1 and s.get("chatReceived") == 1, s
    assert code_a == 0 and code_b == 0
    assert sb.get("hungUp") == "the peer hung up", sb
    probe, errors = ffprobe(recording), decode_errors(recording)
    assert errors == "", errors[:2000]
    recorded = (probe.get("video") or {}).get("packets", 0)
    assert recorded >= 0.98 * sa["framesDecoded"] and (probe.get("audio") or {}).get("codec") == "opus", (probe, sa)


@pytest.mark.timeout(90)
@pytest.mark.parametrize("first", ["aiortc", "swift"])
def test_aiortc_peer_with_swift_p2p(first, signal_server, swift_bin, artifact_dir, logs):
    """An aiortc peer speaking the room protocol ↔ swiftrtc p2p: video both ways (each reads the
    other's test pattern), audio, the data channel both ways, bye seen."""
    from interop.p2p_peer import AiortcP2PPeer
    url = f"{signal_server['ws']}?room=aio-{first}"
    peer = swift = None
    try:
        if first == "aiortc":
            peer = AiortcP2PPeer(url)
            poll(lambda: peer.log, lambda log: "signal joined" in log, timeout=10)
            swift = p2p(swift_bin, url, artifact_dir, "p2p")
        else:
            swift = p2p(swift_bin, url, artifact_dir, "p2p")
            swift.process.wait_for_line(r"p2p: waiting for the other peer", timeout=15)
            peer = AiortcP2PPeer(url)
        logs.append(("swiftrtc p2p", swift.text))
        logs.append(("aiortc peer", lambda: "\n".join(peer.log)))
        # The first frames are sized for the 300 kbit/s start (480x270); wait for the source's size.
        poll(lambda: peer.summary(), lambda s: bool(s["video"] and s["video"]["patternFrames"] >= 30
                                                    and "640x360" in s["video"]["sizes"]), timeout=30)
        poll(lambda: peer.chat_open(), lambda ok: ok, timeout=15)
        swift.process.wait_for_line(r"p2p: chat open", timeout=15)
        assert peer.send_chat("hello from aiortc")
        swift.process.wait_for_line(r"chat: hello from aiortc", timeout=10)
        swift.process.send_line("hello from swift")
        poll(lambda: peer.chat_received, lambda r: "hello from swift" in r, timeout=10)
        peer.hang_up()
        swift.process.wait_for_line(r"p2p: the peer hung up", timeout=10)
        code = swift.wait(timeout=20)
        theirs = peer.summary()
    finally:
        if peer is not None:
            peer.close()
        if swift is not None:
            swift.close()
    s = summary(swift.stats())
    write_json(artifact_dir / "p2p.json", {"first": first, "aiortc": theirs, "swift": s})
    v = theirs["video"]
    print(f"{first} first: aiortc read the Swift pattern on {v['patternFrames']} frames {v['sizes']}, audio "
          f"{theirs['audio'] and theirs['audio']['frames']} frames; Swift decoded {s.get('framesDecoded')} "
          f"(pattern {s.get('patternVerified')}), chat {s.get('chatSent')}/{s.get('chatReceived')}")
    assert code == 0, swift.text()[-2000:]
    assert v["patternFrames"] >= 30 and v["increasing"] and "640x360" in v["sizes"], v
    assert theirs["audio"] and theirs["audio"]["frames"] > 50, theirs["audio"]
    assert s.get("patternVerified") is True and s.get("framesDecoded", 0) >= 30, s
    assert theirs["chatReceived"] == ["hello from swift"], theirs
    assert s.get("chatSent") == 1 and s.get("chatReceived") == 1 and s.get("hungUp") == "the peer hung up", s


UFRAG_JS = """(() => { const u = d => d && (d.sdp.match(/a=ice-ufrag:(\\S+)/) || [])[1];
  return {local: u(pc.localDescription), remote: u(pc.remoteDescription), state: pc.connectionState}; })()"""


@pytest.mark.timeout(90)
def test_ice_restart_mid_call_both_ways(signal_server, browser, swift_bin, artifact_dir, logs):
    """Swift restarts ICE (stdin restart-ice → a re-offer through the room), then Chromium does
    (pc.restartIce() on the call page): both sides get new credentials, and neither side's
    decoded video stops for more than 1 s (Chromium's framesDecoded sampled every 0.1 s, Swift's
    longest gap between decoded frames over the whole call)."""
    from interop.test_renegotiation import longest_stall
    room = "restart"
    page = browser.new_page(f"{signal_server['http']}/call/?room={room}")
    logs.append(("call page log", lambda: "\n".join(page.evaluate("window.log", timeout=5) or [])))
    swift = p2p(swift_bin, f"{signal_server['ws']}?room={room}", artifact_dir, "p2p", duration=40)
    logs.append(("swiftrtc p2p", swift.text))
    samples: list[tuple[float, int]] = []
    sent: list[dict] = []   # what Chromium sent, and why it limited it

    def sample(seconds: float):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            s = page.evaluate(PC_STATS_JS, timeout=10)
            samples.append((time.monotonic(), (s and s["inbound"] or {}).get("framesDecoded", 0)))
            out = (s and s["outbound"] or [{}])[0]
            sent.append({"t": round(time.monotonic(), 2), "width": out.get("frameWidth"),
                         "reason": out.get("qualityLimitationReason"),
                         "available": ((s or {}).get("pair") or {}).get("availableOutgoingBitrate")})
            time.sleep(0.1)

    try:
        swift.process.wait_for_line(r"p2p: waiting for the other peer", timeout=15)
        page.evaluate("document.getElementById('connect').click(); true")
        poll(lambda: page.evaluate(PC_STATS_JS, timeout=10),
             lambda s: bool(s and s["inbound"] and s["inbound"]["framesDecoded"] > 30), timeout=25, interval=0.25)
        before = page.evaluate(UFRAG_JS, timeout=10)
        sample(1.5)
        swift.process.send_line("restart-ice")
        swift.process.wait_for_line(r"p2p: ICE restart offered", timeout=10)
        poll(lambda: page.evaluate(UFRAG_JS, timeout=10), lambda u: u["remote"] != before["remote"], timeout=10, interval=0.1)
        sample(3.0)
        after_swift = page.evaluate(UFRAG_JS, timeout=10)
        page.evaluate("window.restartIce(); true")
        poll(lambda: page.evaluate(UFRAG_JS, timeout=10), lambda u: u["local"] != after_swift["local"], timeout=10, interval=0.1)
        swift.process.wait_for_line(r"p2p: offer received; answering", timeout=10)
        sample(3.0)
        after_chromium = page.evaluate(UFRAG_JS, timeout=10)
        page.evaluate("document.getElementById('hangup').click(); true")
        swift.process.wait_for_line(r"p2p: the peer hung up", timeout=10)
        code = swift.wait(timeout=20)
        page_log = page.evaluate("window.log", timeout=5)
    finally:
        close_page(browser, page)
        swift.close()
    s = summary(swift.stats())
    stall = longest_stall(samples)
    write_json(artifact_dir / "restart.json", {"ufrags": [before, after_swift, after_chromium], "chromiumStallSeconds": stall,
                                                "swift": s, "samples": samples, "chromiumSent": sent, "pageLog": page_log})
    print(f"ICE restarts: ufrags {before} -> {after_swift} -> {after_chromium}; Chromium's longest stall {stall:.2f} s; "
          f"Swift's longest frame gap {s.get('longestFrameGapMs')} ms, decoded {s.get('framesDecoded')}; Chromium sent "
          f"{sorted({x['width'] for x in sent if x['width']})} wide, limited by {sorted({x['reason'] for x in sent})}")
    assert code == 0, swift.text()[-2000:]
    assert after_swift["remote"] != before["remote"] and after_swift["state"] == "connected", (before, after_swift)
    assert after_chromium["local"] != after_swift["local"] and after_chromium["state"] == "connected", (after_swift, after_chromium)
    assert stall <= 1.0, f"Chromium's video stalled {stall:.2f} s across the restarts"
    assert s.get("longestFrameGapMs", 1e9) <= 1000 and s.get("freezesOver500Ms") == 0, s
    # Chromium's fake camera (no pattern): we must decode what it sends. Its sending size is its
    # own choice: on a busy machine its CPU adaptation steps down (seen once in CI: 480 wide
    # after the restart); a step down for *bandwidth* would be our feedback's fault.
    widths = [x["width"] for x in sent if x["width"]]
    limited = sorted({x["reason"] for x in sent if x["reason"] not in (None, "none")})
    assert s.get("framesDecoded", 0) >= 100 and widths and s.get("frameWidth") == widths[-1], (s, widths[-5:])
    assert "bandwidth" not in limited, f"Chromium limited its video for {limited}: {sent}"


@pytest.mark.timeout(90)
def test_call_page_and_swift_p2p_with_a_signal_token(browser, swift_bin, artifact_dir, logs):
    """`serve --signal-token`: Chromium opens `/call/#room=locked&token=T` and joins first; the page
    makes the room's key and shows the invitation. `swiftrtc p2p --token T` without the key is
    refused (400, it says why); with the key from the invitation it joins, and each side decodes
    the other's video until Chromium hangs up."""
    proc = ManagedProcess([str(swift_bin), "serve", "--http", "127.0.0.1:0", "--udp", "127.0.0.1:0", "--signal-token", "sig-secret"],
                          artifact_dir / "serve.log")
    logs.append(("swiftrtc serve", proc.text))
    swift = page = None
    try:
        m = proc.wait_for_line(r"signaling on (ws://(\S+?)/rtc/v1/signal/)\?room=NAME", timeout=20)
        ws, http_base = m.group(1), "http://" + m.group(2)
        page = browser.new_page(f"{http_base}/call/#room=locked&token=sig-secret")
        logs.append(("call page log", lambda: "\n".join(page.evaluate("window.log", timeout=5) or [])))
        page.evaluate("document.getElementById('connect').click(); true")
        page.wait_for("window.log.includes('state waiting for the peer')", timeout=15)
        invite = page.evaluate("document.getElementById('invite').textContent")
        key = page.evaluate("new URLSearchParams(location.hash.slice(1)).get('key')")
        assert key and len(key) >= 16 and invite.startswith(f"invite: {http_base}/call/#") and f"key={key}" in invite, invite
        keyless = subprocess.run([str(swift_bin), "p2p", f"{ws}?room=locked", "--token", "sig-secret", "--duration", "3"],
                                 capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
        assert keyless.returncode != 0 and "400" in keyless.stderr and "room key" in keyless.stderr, keyless.stderr
        swift = p2p(swift_bin, f"{ws}?room=locked&key={key}", artifact_dir, "p2p", duration=30, extra=("--token", "sig-secret"))
        logs.append(("swiftrtc p2p", swift.text))
        stats, _ = poll(lambda: page.evaluate(PC_STATS_JS, timeout=10),
                        lambda s: bool(s and s["inbound"] and s["inbound"]["framesDecoded"] > 30), timeout=25, interval=0.25)
        swift.process.wait_for_line(r"p2p: chat open", timeout=15)
        time.sleep(1.5)   # some video for Swift's side
        page.evaluate("document.getElementById('hangup').click(); true")
        swift.process.wait_for_line(r"p2p: the peer hung up", timeout=10)
        code = swift.wait(timeout=20)
    finally:
        if page is not None:
            close_page(browser, page)
        if swift is not None:
            swift.close()
        proc.close()
    s = summary(swift.stats())
    write_json(artifact_dir / "p2p-token.json", {"invite": invite, "chromiumStats": stats, "swift": s})
    print(f"with a signal token: Chromium decoded {stats and stats['inbound'] and stats['inbound']['framesDecoded']} frames, "
          f"Swift {s.get('framesDecoded')} (pattern {s.get('patternVerified')})")
    assert stats and stats["inbound"]["framesDecoded"] > 30, stats
    assert code == 0 and s.get("framesDecoded", 0) >= 30 and s.get("hungUp") == "the peer hung up", s


class ResettingProxy:
    """A TCP proxy in front of the signaling server whose connections can be cut abruptly (no
    WebSocket close frame, the TCP connection shut down and reset): what a phone's room connection
    meets when its network changes."""

    def __init__(self, upstream_port: int):
        import socket
        import threading
        self.upstream = ("127.0.0.1", upstream_port)
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.pairs: list = []
        self.lock = threading.Lock()
        self.accepted = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        import socket
        import threading
        while True:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.upstream)
            with self.lock:
                self.pairs.append((client, upstream))
                self.accepted += 1
            for a, b in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(a, b), daemon=True).start()

    @staticmethod
    def _pump(a, b) -> None:
        try:
            while data := a.recv(65536):
                b.sendall(data)
        except OSError:
            pass

    def reset_all(self) -> int:
        """Cuts every connection both ways with a reset; returns how many pairs there were."""
        import socket
        import struct
        with self.lock:
            pairs, self.pairs = self.pairs, []
        for pair in pairs:
            for s in pair:
                try:
                    s.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
                    s.shutdown(socket.SHUT_RDWR)   # wakes the pump blocked in recv; close alone does not
                    s.close()
                except OSError:
                    pass
        return len(pairs)

    def close(self) -> None:
        self.listener.close()
        self.reset_all()


@pytest.mark.timeout(90)
def test_p2p_call_survives_losing_the_room_connection(signal_server, swift_bin, artifact_dir, logs):
    """Issue 21: both peers' signaling connections are cut (reset, no goodbye) mid-call. The server
    holds their seats, each rejoins with its seat's token, nobody hears peer-left, the call goes on,
    and signaling works afterwards: an ICE restart typed on one side is offered and answered."""
    port = int(signal_server["ws"].rsplit(":", 1)[1].split("/")[0])
    proxy = ResettingProxy(port)
    url = f"ws://127.0.0.1:{proxy.port}/rtc/v1/signal/?room=rejoin"
    a = b = None
    try:
        a = p2p(swift_bin, url, artifact_dir, "p2p-a", duration=30)
        logs.append(("p2p a", a.text))
        a.process.wait_for_line(r"p2p: waiting for the other peer", timeout=15)
        b = p2p(swift_bin, url, artifact_dir, "p2p-b", duration=40)
        logs.append(("p2p b", b.text))
        for run in (a, b):
            run.process.wait_for_line(r"p2p: connected in", timeout=15)
            run.process.wait_for_line(r"p2p: chat open", timeout=15)
        time.sleep(2)
        assert proxy.reset_all() == 2
        t_cut = time.monotonic()
        for run in (a, b):
            run.process.wait_for_line(r"p2p: back in the room; the call went on", timeout=15)
        rejoin_s = time.monotonic() - t_cut
        assert proxy.accepted == 4, proxy.accepted
        # Signaling after the rejoin: a's ICE restart is offered through the room and b answers it.
        answered_before = b.text().count("p2p: offer received; answering")
        a.process.send_line("restart-ice")
        poll(b.text, lambda t: t.count("p2p: offer received; answering") > answered_before, timeout=10)
        # The data channel carried on too.
        a.process.send_line("still here after the rejoin")
        b.process.wait_for_line(r"chat: still here after the rejoin", timeout=10)
        code_a = a.wait(timeout=40)   # a ends at 30 s with a bye
        b.process.wait_for_line(r"p2p: the peer hung up", timeout=10)
        code_b = b.wait(timeout=20)
    finally:
        proxy.close()
        for run in (a, b):
            if run is not None:
                run.close()
    sa, sb = summary(a.stats()), summary(b.stats())
    write_json(artifact_dir / "p2p.json", {"a": sa, "b": sb, "rejoinSeconds": round(rejoin_s, 3)})
    print(f"both peers back in the room {rejoin_s:.2f} s after the cut; a decoded {sa.get('framesDecoded')}, "
          f"b {sb.get('framesDecoded')}, longest gaps {sa.get('longestFrameGapMs')}/{sb.get('longestFrameGapMs')} ms")
    for run in (a, b):
        assert "the peer left" not in run.text(), run.text()[-2000:]
    assert code_a == 0 and code_b == 0
    assert sb.get("hungUp") == "the peer hung up", sb
    for s in (sa, sb):
        assert s.get("patternVerified") is True and s.get("framesDecoded", 0) >= 600, s
        assert (s.get("freezeSecondsOver500Ms") or 0) == 0, s


@pytest.mark.timeout(90)
def test_call_page_survives_losing_the_room_connection(signal_server, browser, swift_bin, artifact_dir, logs):
    """Issue 21: the browser call page's room connection (page and WebSocket loaded through a
    ResettingProxy) is reset mid-call. The page takes its seat back with the seat's token, the
    Swift peer hears nothing (no peer-left), the video goes on, and signaling works afterwards:
    the page's ICE restart is offered through the new connection and answered."""
    port = int(signal_server["ws"].rsplit(":", 1)[1].split("/")[0])
    proxy = ResettingProxy(port)
    room = "page-rejoin"
    page = swift = None
    samples: list[tuple[float, int]] = []
    try:
        swift = p2p(swift_bin, f"{signal_server['ws']}?room={room}", artifact_dir, "p2p", duration=40)
        logs.append(("swiftrtc p2p", swift.text))
        swift.process.wait_for_line(r"p2p: waiting for the other peer", timeout=15)
        page = browser.new_page(f"http://127.0.0.1:{proxy.port}/call/?room={room}")
        logs.append(("call page log", lambda: "\n".join(page.evaluate("window.log", timeout=5) or [])))
        page.evaluate("document.getElementById('connect').click(); true")
        poll(lambda: page.evaluate(PC_STATS_JS, timeout=10),
             lambda s: bool(s and s["inbound"] and s["inbound"]["framesDecoded"] > 30), timeout=25, interval=0.25)
        time.sleep(2)
        assert proxy.reset_all() >= 1
        t_cut = time.monotonic()
        log, _ = poll(lambda: page.evaluate("window.log", timeout=5), lambda lg: "signaling rejoined" in (lg or []),
                      timeout=15, interval=0.05)
        rejoin_s = time.monotonic() - t_cut
        assert "signaling rejoined" in log, log
        # Signaling after the rejoin: the page's ICE restart reaches the Swift peer, which answers it.
        before = page.evaluate(UFRAG_JS, timeout=10)
        page.evaluate("window.restartIce(); true")
        swift.process.wait_for_line(r"p2p: offer received; answering", timeout=10)
        poll(lambda: page.evaluate(UFRAG_JS, timeout=10),
             lambda u: u["local"] != before["local"] and u["state"] == "connected", timeout=10, interval=0.1)
        end = time.monotonic() + 4
        while time.monotonic() < end:
            s = page.evaluate(PC_STATS_JS, timeout=10)
            samples.append((time.monotonic(), (s and s["inbound"] or {}).get("framesDecoded", 0)))
            time.sleep(0.1)
        page.evaluate("document.getElementById('hangup').click(); true")
        swift.process.wait_for_line(r"p2p: the peer hung up", timeout=10)
        code = swift.wait(timeout=20)
        log = page.evaluate("window.log", timeout=5)
    finally:
        proxy.close()
        if page is not None:
            close_page(browser, page)
        if swift is not None:
            swift.close()
    s = summary(swift.stats())
    write_json(artifact_dir / "page-rejoin.json", {"rejoinSeconds": round(rejoin_s, 3), "pageLog": log, "swift": s,
                                                    "chromiumFramesDecoded": samples})
    print(f"the call page was back in the room {rejoin_s:.2f} s after the cut; Swift decoded {s.get('framesDecoded')}, "
          f"longest gap {s.get('longestFrameGapMs')} ms")
    assert "the peer left" not in swift.text(), swift.text()[-2000:]
    assert code == 0 and s.get("hungUp") == "the peer hung up", s
    assert any(m.startswith("signaling reconnecting (attempt") for m in log), log
    assert rejoin_s <= 2.0, f"rejoined {rejoin_s:.2f} s after the cut"
    assert samples and samples[-1][1] > samples[0][1], f"Chromium stopped decoding after the rejoin: {samples}"
    # The Swift side decoded through the cut and the restart (~8 s of call).
    assert s.get("framesDecoded", 0) >= 100 and (s.get("freezesOver500Ms") or 0) == 0, s
