"""Interop tests: SwiftRTC's transport against real peers (Chromium 156, aiortc 1.16).

A-type (echo): a real peer offers to `swiftrtc echo` and must decode its own media coming back.
B-type (probe): `swiftrtc probe` offers to a real peer; both sides must receive RTP.
Run inside a loopback-only network namespace with interop/run.sh.
"""

from __future__ import annotations

import json
import time
import urllib.request

import pytest

from interop.conftest import STANDIN, require, run_probe, write_json
from interop.peers import (VIDEO_HEIGHT, VIDEO_WIDTH, AiortcAnswerer, AiortcEchoClient,
                           ChromiumAnswerer, post_offer)


def poll(fn, until, timeout: float, interval: float = 0.25):
    """Call fn() until until(value) holds; returns (value, seconds waited); value is the last one."""
    start = time.monotonic()
    value = fn()
    while not until(value):
        if time.monotonic() - start > timeout:
            break
        time.sleep(interval)
        value = fn()
    return value, time.monotonic() - start


def video_decoding(stats) -> bool:
    return bool(stats and stats.get("video") and stats["video"]["framesDecoded"] > 0
                and stats.get("transport") and stats["transport"]["dtlsState"] == "connected")


# ---- A: a real peer calls the echo server ----------------------------------------------------

@pytest.mark.timeout(90)
@pytest.mark.parametrize("codec", ["VP8", "H264"])
def test_chromium_echo(codec, echo_server, page, artifact_dir, logs):
    started = time.monotonic()
    call = page.call("echoCall", echo_server.url, codec, timeout=25)
    (artifact_dir / "offer.sdp").write_text(call["offer"])
    (artifact_dir / "answer.sdp").write_text(call["answer"])
    assert call["location"], "201 response had no Location header (or CORS hides it)"

    stats, waited = poll(lambda: page.call("stats", timeout=10), video_decoding, timeout=20)
    write_json(artifact_dir / "stats.json", stats)
    assert stats is not None, "no RTCPeerConnection in the page"
    assert stats["transport"] and stats["transport"]["dtlsState"] == "connected", stats
    assert stats["video"] and stats["video"]["framesDecoded"] > 0, (
        f"Chromium decoded no echoed video within 20 s: {json.dumps(stats)}")
    assert stats["video"]["codec"].lower() == f"video/{codec}".lower(), stats["video"]
    assert stats["pair"] and stats["pair"]["state"] == "succeeded", stats["pair"]
    assert stats["audio"] and stats["audio"]["packetsReceived"] > 0, stats["audio"]
    first_frame_s = time.monotonic() - started

    # Let a few frames reach the <video> element so the screenshot shows the echo.
    page.wait_for("document.getElementById('remote').videoWidth > 0", timeout=10)
    later, _ = poll(lambda: page.call("stats", timeout=10),
                    lambda s: s["video"]["framesDecoded"] >= 10, timeout=5)
    page.screenshot(str(artifact_dir / f"chromium-echo-{codec}.png"))
    write_json(artifact_dir / "stats-later.json", later)
    write_json(artifact_dir / "timing.json", {"impl": echo_server.impl, "codec": codec,
                                               "firstDecodedFrameSeconds": first_frame_s,
                                               "pollSeconds": waited})
    print(f"{echo_server.impl} {codec}: first decoded frame after {first_frame_s:.2f} s, "
          f"{later['video']['framesDecoded']} frames {later['video']['frameWidth']}x"
          f"{later['video']['frameHeight']}, pair {later['pair']}")
    assert later["video"]["framesDecoded"] > stats["video"]["framesDecoded"], "echo stopped"
    status = page.evaluate(f"fetch({json.dumps(page.evaluate('window.resourceLocation'))}, "
                           "{method: 'DELETE'}).then(r => r.status)", timeout=10)
    assert status == 200, f"DELETE session returned {status}"


@pytest.mark.timeout(60)
@pytest.mark.parametrize("codec", ["VP8", "H264"])
def test_aiortc_echo(codec, echo_server, need_aiortc, artifact_dir, logs):
    client = AiortcEchoClient(echo_server.url, video_codec=codec)
    logs.append(("aiortc client", lambda: "\n".join(client.log)))
    try:
        started = time.monotonic()
        client.connect(timeout=20)
        (artifact_dir / "offer.sdp").write_text(client.offer or "")
        (artifact_dir / "answer.sdp").write_text(client.answer or "")
        result = client.wait_frames(video=15, audio=25, timeout=20)
        elapsed = time.monotonic() - started
        write_json(artifact_dir / "result.json", {"impl": echo_server.impl, "seconds": elapsed, **result})
        print(f"{echo_server.impl} {codec}: aiortc connected in {result['connectMs']} ms, "
              f"{result['tracks']} after {elapsed:.2f} s")
        assert result["connectionState"] == "connected", result
        video = [t for t in result["tracks"] if t["kind"] == "video"]
        audio = [t for t in result["tracks"] if t["kind"] == "audio"]
        assert video and sum(t["frames"] for t in video) > 0, f"no echoed video frames: {result}"
        assert audio and sum(t["frames"] for t in audio) > 0, f"no echoed audio frames: {result}"
        sizes = {s for t in video for s in t["sizes"]}
        assert sizes == {f"{VIDEO_WIDTH}x{VIDEO_HEIGHT}"}, f"echoed video has sizes {sizes}"
        assert any(c.lower().startswith(f"video/{codec.lower()}/")
                   for codecs in result["negotiated"].values() for c in codecs), result["negotiated"]
    finally:
        client.close()


@pytest.mark.timeout(30)
def test_echo_http_contract(echo_server):
    """Status codes and headers of contract A that browsers depend on."""
    base = echo_server.url
    req = urllib.request.Request(base, method="OPTIONS", headers={
        "Origin": "http://127.0.0.1:1", "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type"})
    with urllib.request.urlopen(req, timeout=10) as res:
        assert res.status == 204
        assert res.headers.get("Access-Control-Allow-Origin") in ("*", "http://127.0.0.1:1")
        assert "content-type" in (res.headers.get("Access-Control-Allow-Headers") or "").lower()
    status, body, _ = post_offer(base, "this is not sdp\r\n")
    assert status == 400, (status, body)
    assert body.strip() and "\n" not in body.strip(), f"400 reason should be one line: {body!r}"


# ---- B: swiftrtc probe offers to a real peer --------------------------------------------------

def check_probe_json(report: dict) -> None:
    assert report.get("connected") is True, report
    assert report.get("iceState") in ("connected", "completed") and report.get("dtlsState") == "connected", report
    kinds = sorted(t["kind"] for t in report["transceivers"])
    assert kinds == ["audio", "video"], kinds
    for t in report["transceivers"]:
        assert t["sentPackets"] > 0, t
        assert t["receivedPackets"] > 0, f"probe received nothing on mid {t['mid']}: {t}"
        assert set(t["receivedPayloadTypes"]) <= set(t["negotiatedPayloadTypes"]), t
        assert t["receivedPayloadTypes"], t


def load_probe_json(path, output: str) -> dict:
    assert path.is_file(), f"swiftrtc probe wrote no JSON at {path}; its output:\n{output[-3000:]}"
    try:
        return json.loads(path.read_text())
    except ValueError as exc:
        raise AssertionError(f"probe JSON at {path} does not parse: {exc}") from exc


def growing(samples: list[dict], key) -> bool:
    values = [key(s) for s in samples if s and "error" not in s]
    values = [v for v in values if v is not None]
    return len(values) >= 2 and values[-1] > 0 and any(b > a for a, b in zip(values, values[1:]))


@pytest.mark.swift_offerer
@pytest.mark.timeout(90)
def test_swift_offers_to_chromium(swift_probe_bin, page, artifact_dir, logs):
    answerer = ChromiumAnswerer(page)
    logs.append(("chromium answerer", lambda: "\n".join(answerer.log)))
    json_path = artifact_dir / "probe.json"
    try:
        code, output, samples = run_probe(swift_probe_bin, answerer.url, json_path,
                                          artifact_dir / "probe.log", duration=3,
                                          sample=answerer.stats)
        logs.append(("swiftrtc probe output", output))
    finally:
        answerer.close()
    write_json(artifact_dir / "chromium-samples.json", samples)
    (artifact_dir / "answerer.log").write_text("\n".join(answerer.log))
    page.screenshot(str(artifact_dir / "chromium-answerer.png"))
    assert code == 0, f"swiftrtc probe exited {code}:\n{output[-3000:]}"
    report = load_probe_json(json_path, output)

    def inbound(kind):
        return lambda s: (s.get(kind) or {}).get("packetsReceived") if s else None
    assert growing(samples, inbound("audio")), f"Chromium audio packetsReceived not growing: {samples}"
    assert growing(samples, inbound("video")), f"Chromium video packetsReceived not growing: {samples}"
    # The last sample may follow the probe's close (DTLS "closed"): any sample while it ran counts.
    states = [(s.get("transport") or {}).get("dtlsState") for s in samples if s and "error" not in s]
    assert "connected" in states, f"Chromium's DTLS never reported connected: {states}"
    check_probe_json(report)


@pytest.mark.swift_offerer
@pytest.mark.timeout(90)
def test_swift_offers_to_aiortc(swift_probe_bin, need_aiortc, artifact_dir, logs):
    answerer = AiortcAnswerer()
    logs.append(("aiortc answerer", lambda: "\n".join(answerer.log)))
    json_path = artifact_dir / "probe.json"
    try:
        code, output, samples = run_probe(swift_probe_bin, answerer.url, json_path,
                                          artifact_dir / "probe.log", duration=3,
                                          sample=answerer.stats)
        logs.append(("swiftrtc probe output", output))
    finally:
        answerer.close()
    write_json(artifact_dir / "aiortc-samples.json", samples)
    (artifact_dir / "answerer.log").write_text("\n".join(answerer.log))
    assert code == 0, f"swiftrtc probe exited {code}:\n{output[-3000:]}"
    report = load_probe_json(json_path, output)
    assert growing(samples, lambda s: s["packetsReceived"].get("audio")), samples
    assert growing(samples, lambda s: s["packetsReceived"].get("video")), samples
    check_probe_json(report)


# ---- baselines without Swift: the harness's own peers against each other ----------------------

@pytest.mark.timeout(60)
def test_baseline_aiortc_offers_to_chromium(page, need_aiortc, artifact_dir, logs):
    """aiortc offers to the Chromium answerer: proves the B-type harness (answerOffer, stats)."""
    answerer = ChromiumAnswerer(page)
    client = AiortcEchoClient(answerer.url)
    logs.append(("chromium answerer", lambda: "\n".join(answerer.log)))
    logs.append(("aiortc offerer", lambda: "\n".join(client.log)))
    try:
        client.connect(timeout=25)
        samples = []
        for _ in range(8):
            samples.append(answerer.stats())
            time.sleep(0.4)
        result = client.wait_frames(video=5, audio=5, timeout=10)
    finally:
        client.close()
        answerer.close()
    write_json(artifact_dir / "samples.json", {"chromium": samples, "aiortc": result})
    (artifact_dir / "answerer.log").write_text("\n".join(answerer.log))
    assert growing(samples, lambda s: (s.get("audio") or {}).get("packetsReceived")), samples
    assert growing(samples, lambda s: (s.get("video") or {}).get("packetsReceived")), samples
    assert samples[-1]["video"]["framesDecoded"] > 0, samples[-1]
    assert client.frames("video") > 0 and client.frames("audio") > 0, result
