"""Interop: data channels to `swiftrtc echo` from real peers (Chromium 156, aiortc 1.16).

Each peer opens an ordered, reliable channel on a data-only connection, sends 1,000 messages of
random sizes from 0 B to 256 KiB (one in ten as text) and checks every echo comes back intact
and in order. We offer a=max-message-size:1048576; aiortc takes messages up to 262144 bytes
(LOCAL_MAX_MESSAGE_SIZE), and so does Chromium: both peers use the full 256 KiB, and our echo
sends back no more than each said.
Then an unordered maxRetransmits=0 channel through the user-space emulator (interop/netem.py)
with 10% loss each way: what arrives comes back, nothing stalls behind a lost message. Last,
Swift as the offerer (`swiftrtc probe --datachannel`, bundled with audio and video): Chromium
and aiortc answer and echo the channel's messages.
Run inside the loopback-only namespace: bash interop/run.sh -k datachannel
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import time

import pytest

from interop.conftest import STANDIN, ManagedProcess, free_port, require, run_probe, swiftrtc_bin, write_json
from interop.netem import NetEm
from interop.peers import AiortcAnswerer, ChromiumAnswerer, LoopThread, new_peer_connection, post_offer

MESSAGES = 1000
MAX_SIZE = 256 * 1024


def message_sizes(seed: int) -> list[int]:
    rng = random.Random(seed)
    sizes = [rng.randint(0, MAX_SIZE) for _ in range(MESSAGES)]
    sizes[0], sizes[1], sizes[2], sizes[-1] = 0, MAX_SIZE, 1, 0   # the edges, always
    sizes[5] = 0   # an empty text message
    return sizes


ALPHABET = "abcdefghijklmnopqrstuvwxyz"
BASE = bytes((j * 13) & 0xFF for j in range(256))


def payload(i: int, size: int) -> bytes | str:
    """Message i, the same formula as dcPayload() in pages/webrtc.js, built by repetition:
    byte j is (i*7 + j*13) mod 256, character j is letter (i + j) mod 26."""
    if i % 10 == 5:
        shift = i % 26
        rotated = ALPHABET[shift:] + ALPHABET[:shift]
        return (rotated * (size // 26 + 1))[:size]
    table = bytes((k + i * 7) & 0xFF for k in range(256))
    return (BASE * (size // 256 + 1))[:size].translate(table)


def check_answer(answer: str, impl: str) -> None:
    assert re.search(r"^m=application \d+ UDP/DTLS/SCTP webrtc-datachannel\r?$", answer, re.M), answer
    assert "a=sctp-port:5000" in answer, answer
    if impl == "swiftrtc":
        assert "a=max-message-size:1048576" in answer, answer


@pytest.mark.timeout(300)
def test_chromium_datachannel_echo(echo_server, page, artifact_dir):
    sizes = message_sizes(1)
    result = page.call("dataChannelEcho", echo_server.url, sizes, timeout=280)
    answer = result.pop("answer")
    (artifact_dir / "answer.sdp").write_text(answer)
    write_json(artifact_dir / "result.json", {"impl": echo_server.impl, **result})
    total = sum(sizes)
    print(f"{echo_server.impl}: Chromium got {result['received']}/{MESSAGES} echoes "
          f"({total / 1e6:.1f} MB each way) in {result['seconds']:.2f} s, "
          f"{2 * total / result['seconds'] / 1e6:.1f} MB/s both ways")
    assert result["firstBad"] is None, f"echo differs from what was sent: {result['firstBad']}"
    assert result["received"] == MESSAGES, result
    assert result["bytes"] == total, result
    check_answer(answer, echo_server.impl)
    # Chromium's own limit (256 KiB) under ours (1 MiB).
    assert result["maxMessageSize"] == 262144, result
    assert result["state"] == "open", result
    assert result["lowEvents"] > 0, "Chromium never saw bufferedamountlow while sending"
    assert result["closed"], "Chromium's close() did not complete: the echo did not reset its side of the stream"


class AiortcDataChannelClient:
    """Offers a data-only connection to an echo URL and sends/checks the messages."""

    def __init__(self, url: str):
        self.url = url
        self.lt = LoopThread("dc-client-loop")
        self.pc = None
        self.answer = ""

    def run(self, sizes: list[int], timeout: float) -> dict:
        return self.lt.run(self._run(sizes, timeout), timeout=timeout + 20)

    async def _run(self, sizes: list[int], timeout: float) -> dict:
        from aiortc import RTCSessionDescription
        loop = asyncio.get_running_loop()
        pc = new_peer_connection()
        self.pc = pc
        dc = pc.createDataChannel("echo", ordered=True)
        opened = asyncio.Event()
        done = asyncio.Event()
        state = {"received": 0, "bytes": 0, "firstBad": None}
        expected = (payload(i, s) for i, s in enumerate(sizes))

        @dc.on("open")
        def on_open():
            opened.set()

        @dc.on("message")
        def on_message(message):
            i = state["received"]
            state["received"] += 1
            state["bytes"] += len(message)
            want = next(expected, None)
            if state["firstBad"] is None and message != want:
                state["firstBad"] = {"index": i, "gotSize": len(message), "gotType": type(message).__name__,
                                     "wantSize": sizes[i] if i < len(sizes) else None}
            if state["received"] == len(sizes):
                done.set()

        await pc.setLocalDescription(await pc.createOffer())
        status, body, _ = await loop.run_in_executor(None, post_offer, self.url, pc.localDescription.sdp)
        if status != 201:
            raise RuntimeError(f"POST {self.url}: HTTP {status}: {body[:300]}")
        self.answer = body
        await pc.setRemoteDescription(RTCSessionDescription(sdp=body, type="answer"))
        await asyncio.wait_for(opened.wait(), 15)
        started = time.monotonic()
        low = asyncio.Event()
        dc.bufferedAmountLowThreshold = 1 << 20

        @dc.on("bufferedamountlow")
        def on_low():
            low.set()

        for i, size in enumerate(sizes):
            while dc.bufferedAmount > (4 << 20):
                low.clear()
                await asyncio.wait_for(low.wait(), timeout)
            dc.send(payload(i, size))
        try:
            await asyncio.wait_for(done.wait(), timeout)
        except asyncio.TimeoutError:
            pass
        seconds = time.monotonic() - started
        max_size = pc.sctp._remote_max_message_size if pc.sctp else None
        # Our close resets the stream; the channel is closed once the echo resets its side too.
        closed = asyncio.Event()
        dc.on("close", closed.set)
        dc.close()
        try:
            await asyncio.wait_for(closed.wait(), 5)
        except asyncio.TimeoutError:
            pass
        state["closed"] = closed.is_set()
        await pc.close()
        return {**state, "seconds": seconds, "remoteMaxMessageSize": max_size}

    def close(self) -> None:
        self.lt.stop()


@pytest.mark.timeout(300)
def test_aiortc_datachannel_echo(echo_server, need_aiortc, artifact_dir):
    sizes = message_sizes(2)
    client = AiortcDataChannelClient(echo_server.url)
    try:
        result = client.run(sizes, timeout=240)
    finally:
        (artifact_dir / "answer.sdp").write_text(client.answer)
        client.close()
    write_json(artifact_dir / "result.json", {"impl": echo_server.impl, **result})
    total = sum(sizes)
    print(f"{echo_server.impl}: aiortc got {result['received']}/{MESSAGES} echoes "
          f"({total / 1e6:.1f} MB each way) in {result['seconds']:.2f} s, "
          f"{2 * total / result['seconds'] / 1e6:.1f} MB/s both ways")
    check_answer(client.answer, echo_server.impl)
    if echo_server.impl == "swiftrtc":
        assert result["remoteMaxMessageSize"] == 1048576, result
    assert result["firstBad"] is None, f"echo differs from what was sent: {result['firstBad']}"
    assert result["received"] == MESSAGES, result
    assert result["bytes"] == total, result
    assert result["closed"], "aiortc's close() did not complete: the echo did not reset its side of the stream"


# ---- unordered, maxRetransmits 0, 10% loss each way -------------------------------------------

LOSSY_COUNT = 400
LOSSY_SIZE = 1000


@pytest.fixture
def lossy_echo(logs, artifact_dir):
    """`swiftrtc echo` on 127.0.0.2:P advertising 127.0.0.1:P, where the emulator listens."""
    if STANDIN:
        pytest.skip("INTEROP_STANDIN=1: the reference echo has no --udp/--candidate to sit behind the emulator")
    binary = swiftrtc_bin()
    require(binary.is_file(), f"swiftrtc binary not found at {binary}")
    http, udp = free_port(), free_port()
    proc = ManagedProcess([str(binary), "echo", "--http", f"127.0.0.1:{http}", "--udp", f"127.0.0.2:{udp}",
                           "--candidate", "127.0.0.1"], artifact_dir / "echo-server.log")
    logs.append(("echo server output", proc.text))
    try:
        url = proc.wait_for_line(r"^echo: listening on (http://\S+)\s*$", timeout=20).group(1)
        with NetEm(listen=("127.0.0.1", udp), upstream=("127.0.0.2", udp), seed=7,
                   stats_json=artifact_dir / "netem.json") as net:
            yield url, net
    finally:
        proc.close()


def check_lossy(echoed: list[int], net: NetEm, artifact_dir, who: str) -> None:
    stats = net.stats()
    lost = stats["up"]["dropped_loss"] + stats["down"]["dropped_loss"]
    write_json(artifact_dir / "lossy.json", {"echoed": len(echoed), "lost_packets": lost, "netem": stats})
    print(f"{who}: {len(echoed)}/{LOSSY_COUNT} echoed through 10% loss each way ({lost} packets dropped)")
    assert lost > 0, "the emulator dropped nothing"
    assert len(set(echoed)) == len(echoed), "a message came back twice"
    # About 0.9 * 0.9 of them; lost ones stay lost (no retransmission).
    assert LOSSY_COUNT * 0.6 < len(echoed) < LOSSY_COUNT, f"{len(echoed)} of {LOSSY_COUNT} came back"
    # No stall: messages sent after the first losses still came back, up to the end.
    late = [i for i in echoed if i >= LOSSY_COUNT * 3 // 4]
    assert len(late) > LOSSY_COUNT // 8, f"only {len(late)} of the last quarter came back"
    assert max(echoed) >= LOSSY_COUNT - 10, f"the last echo was message {max(echoed)}"


@pytest.mark.timeout(120)
def test_chromium_unordered_lossy(lossy_echo, page, artifact_dir):
    url, net = lossy_echo
    opened = page.call("dataChannelOpen", url, {"ordered": False, "maxRetransmits": 0}, timeout=30)
    assert opened["ordered"] is False and opened["maxRetransmits"] == 0, opened
    net.set("both", "loss=10%")
    result = page.call("dataChannelBurst", LOSSY_COUNT, LOSSY_SIZE, 5, 3000, timeout=60)
    assert result["state"] == "open", result
    check_lossy(result["echoed"], net, artifact_dir, "Chromium")


@pytest.mark.timeout(120)
def test_aiortc_unordered_lossy(lossy_echo, need_aiortc, artifact_dir):
    url, net = lossy_echo
    lt = LoopThread("dc-lossy-loop")

    async def run() -> list[int]:
        from aiortc import RTCSessionDescription
        loop = asyncio.get_running_loop()
        pc = new_peer_connection()
        dc = pc.createDataChannel("lossy", ordered=False, maxRetransmits=0)
        opened = asyncio.Event()
        echoed: list[int] = []
        dc.on("open", opened.set)
        dc.on("message", lambda m: echoed.append(int.from_bytes(m[:4], "big")))
        await pc.setLocalDescription(await pc.createOffer())
        status, body, _ = await loop.run_in_executor(None, post_offer, url, pc.localDescription.sdp)
        assert status == 201, body
        await pc.setRemoteDescription(RTCSessionDescription(sdp=body, type="answer"))
        await asyncio.wait_for(opened.wait(), 15)
        net.set("both", "loss=10%")
        for i in range(LOSSY_COUNT):
            dc.send(i.to_bytes(4, "big") + bytes(LOSSY_SIZE - 4))
            await asyncio.sleep(0.005)
        await asyncio.sleep(3)
        await pc.close()
        return echoed

    try:
        echoed = lt.run(run(), timeout=90)
    finally:
        lt.stop()
    check_lossy(echoed, net, artifact_dir, "aiortc")


# ---- Swift offers: swiftrtc probe --datachannel, the peer answers and echoes ---------------------

# 100 messages of 0..256 KiB are 13 MB: under the 16 MiB Chromium's echo page may queue
# (its send() throws beyond), however slowly it drains.
PROBE_MESSAGES = 100


def probe_datachannel(binary, answerer, artifact_dir, logs) -> dict:
    json_path = artifact_dir / "probe.json"
    try:
        code, output, _ = run_probe(binary, answerer.url, json_path, artifact_dir / "probe.log", duration=2,
                                    sample=lambda: None, timeout=60,
                                    extra_args=("--datachannel", str(PROBE_MESSAGES)))
        logs.append(("swiftrtc probe output", output))
    finally:
        answerer.close()
    (artifact_dir / "answerer.log").write_text("\n".join(answerer.log))
    assert code == 0, f"swiftrtc probe exited {code}:\n{output[-3000:]}"
    report = json.loads(json_path.read_text())["dataChannel"]
    print(f"swiftrtc probe: data channel id {report['id']} echoed {report['echoed']}/{report['sent']} "
          f"in {report['seconds']:.2f} s (peer max-message-size {report['maxMessageSize']})")
    return report


def check_probe_report(report: dict) -> None:
    assert report["ok"] and report["echoed"] == PROBE_MESSAGES, report
    # We offered, the peer answered a=setup:active: we are the DTLS server, our ids are odd.
    assert report["id"] % 2 == 1, report
    assert report["maxMessageSize"] == 262144, report
    # 100 messages of up to 256 KiB overfill the 4 MiB queue: each wait ends on bufferedamountlow
    # as the peer's SACKs drain it below the 1 MiB threshold.
    assert report["queueFullWaits"] >= 1 and report["bufferedAmountLowEvents"] >= report["queueFullWaits"], report


@pytest.mark.swift_offerer
@pytest.mark.timeout(90)
def test_swift_offers_datachannel_to_chromium(swift_probe_bin, page, artifact_dir, logs):
    answerer = ChromiumAnswerer(page)
    logs.append(("chromium answerer", lambda: "\n".join(answerer.log)))
    check_probe_report(probe_datachannel(swift_probe_bin, answerer, artifact_dir, logs))


@pytest.mark.swift_offerer
@pytest.mark.timeout(90)
def test_swift_offers_datachannel_to_aiortc(swift_probe_bin, need_aiortc, artifact_dir, logs):
    answerer = AiortcAnswerer()
    logs.append(("aiortc answerer", lambda: "\n".join(answerer.log)))
    check_probe_report(probe_datachannel(swift_probe_bin, answerer, artifact_dir, logs))
