"""Interop tests for the media pipeline (issue 3): real pictures and sound to and from Chromium
and aiortc, and the sender controls checked by what the receiver measures.

`swiftrtc publish` (WHIP client, test pattern of /work/dev/TESTPATTERN.md) and `swiftrtc play`
(WHEP client) run against Chromium pages (pages/media.html) and aiortc endpoints
(media_peers.py). With INTEROP_STANDIN=1 the Swift binary is replaced by media_standin.py, an
aiortc implementation of the same CLI contract, so every test here also runs without Swift.
Run inside a loopback-only network namespace with interop/run.sh, e.g.
    INTEROP_STANDIN=1 interop/run.sh -k media
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from interop.conftest import (STANDIN, ManagedProcess, launch_browser, open_test_page, require, swiftrtc_bin,
                              write_json)
from interop.media_peers import (AiortcWhepSender, AiortcWhipReceiver, ChromiumWhepSender,
                                 ChromiumWhipReceiver)
from interop.testpattern import check_png, parse_y4m, read_pattern

FAKE_CAMERA_FLAGS = ("--use-fake-device-for-media-stream=fps=30",)  # default fake camera is 20 fps


# ---- fixtures ----------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def browser():
    """This module's Chromium: the shared flags plus a 30 fps fake camera (the later duplicate of
    --use-fake-device-for-media-stream wins on Chromium's command line)."""
    b = launch_browser(extra_flags=FAKE_CAMERA_FLAGS)
    yield b
    b.close()


@pytest.fixture
def media_page(browser, pages_server, logs, artifact_dir):
    yield from open_test_page(browser, pages_server.url + "media.html", logs, artifact_dir, save_sdp=True)


# ---- running `swiftrtc publish|play` (or the stand-in) -------------------------------------------

class CliRun:
    def __init__(self, impl: str, code: int, output: str, samples: list, stats: dict | None,
                 exited_at: float, seconds: float):
        self.impl, self.code, self.output, self.samples = impl, code, output, samples
        self.stats, self.exited_at, self.seconds = stats, exited_at, seconds


def cli_command(sub: str, args: list[str]) -> tuple[list[str], str]:
    if STANDIN:
        return [sys.executable, "-u", "-m", "interop.media_standin", sub, *args], "aiortc-standin"
    binary = swiftrtc_bin()
    require(binary.is_file() and os.access(binary, os.X_OK),
            f"swiftrtc binary not found at {binary} (build it, set SWIFTRTC_BIN, "
            "or run with INTEROP_STANDIN=1)")
    return [str(binary), sub, *args], "swiftrtc"


def run_cli(sub: str, args: list[str], artifact_dir: Path, logs, sample=None, tag: str | None = None,
            interval: float = 0.5, timeout: float = 45) -> CliRun:
    """Run `swiftrtc <sub> ARGS --stats-json artifact_dir/<tag>.json`, sampling the far end
    every `interval` s while it runs (and once after). Stats JSON is loaded if written."""
    tag = tag or sub
    json_path = artifact_dir / f"{tag}.json"
    json_path.unlink(missing_ok=True)
    cmd, impl = cli_command(sub, [*args, "--stats-json", str(json_path)])
    (artifact_dir / f"{tag}.cmd").write_text(" ".join(cmd) + "\n")
    proc = ManagedProcess(cmd, artifact_dir / f"{tag}.log")
    logs.append((f"{impl} {tag} output", proc.text))
    samples: list = []
    started = time.monotonic()
    deadline = started + timeout
    try:
        while proc.proc.poll() is None:
            if time.monotonic() > deadline:
                raise AssertionError(f"{impl} {sub} still running after {timeout} s:\n{proc.text()[-3000:]}")
            if sample:
                try:
                    samples.append(sample())
                except Exception as exc:
                    samples.append({"error": repr(exc)})
            time.sleep(interval)
        exited_at = time.monotonic()
        if sample:
            samples.append(sample())
    finally:
        proc.close()
    stats = None
    if json_path.is_file():
        try:
            stats = json.loads(json_path.read_text())
        except ValueError as exc:
            raise AssertionError(f"{impl} {sub} wrote unparsable stats JSON: {exc}") from exc
    return CliRun(impl, proc.proc.returncode, proc.text(), samples, stats, exited_at, exited_at - started)


def require_ok(run: CliRun, sub: str) -> dict:
    assert run.code == 0, f"{run.impl} {sub} exited {run.code}:\n{run.output[-3000:]}"
    assert run.stats is not None, f"{run.impl} {sub} wrote no stats JSON:\n{run.output[-3000:]}"
    return run.stats


def valid(samples: list) -> list[dict]:
    return [s for s in samples if s and "error" not in s]


def chromium_video(s: dict) -> dict:
    return (s or {}).get("video") or {}


def rate(samples: list[dict], value, when, end_before: float, window: float) -> dict:
    """Rate of value(s) per second over the `window` s ending at the last sample taken at least
    `end_before` (monotonic time) — i.e. in steady state, before the sender began to hang up.
    `when(s)` gives the sample's own clock in seconds (the receiver's stats timestamp)."""
    usable = [s for s in samples if s["t"] <= end_before and value(s) is not None]
    assert len(usable) >= 2, f"too few samples before the end of the stream: {len(usable)}"
    end = usable[-1]
    start = min(usable, key=lambda s: abs(when(s) - (when(end) - window)))
    dt = when(end) - when(start)
    assert dt >= 0.8 * window, f"samples cover only {dt:.2f} s of the wanted {window} s window"
    dv = value(end) - value(start)
    return {"rate": dv / dt, "delta": dv, "seconds": dt}


def last_during_stream(samples: list[dict], run: CliRun, key) -> dict:
    during = [s for s in valid(samples) if s["t"] <= run.exited_at - 0.5 and key(s)]
    assert during, f"no receiver sample with data while the sender ran: {samples[-3:]}"
    return during[-1]


def shot(page, artifact_dir: Path, name: str) -> None:
    try:
        page.screenshot(str(artifact_dir / name))
    except Exception as exc:  # a screenshot is evidence, not the test
        (artifact_dir / f"{name}.error.txt").write_text(repr(exc))


def publish_args(url: str, codec: str = "h264", size: str = "1280x720", fps: int = 30,
                 duration: float = 5, *extra: str) -> list[str]:
    return [url, "--source", "testsrc", "--codec", codec, "--size", size, "--fps", str(fps),
            "--duration", str(duration), *extra]


def publish_to_chromium(page, artifact_dir, logs, *extra, codec="h264", duration=5.0, size="1280x720"):
    receiver = ChromiumWhipReceiver(page)
    logs.append(("chromium whip receiver", lambda: "\n".join(receiver.log)))
    try:
        run = run_cli("publish", publish_args(receiver.url, codec, size, 30, duration, *extra),
                      artifact_dir, logs, sample=receiver.stats)
    finally:
        receiver.close()
    # Let the last rendered frame show in the screenshot, then keep the evidence.
    shot(page, artifact_dir, "chromium-received.png")
    write_json(artifact_dir / "chromium-samples.json", run.samples)
    (artifact_dir / "whip-receiver.log").write_text("\n".join(receiver.log))
    return run, receiver


def stats_seconds(s: dict) -> float:
    """A Chromium stats sample's own clock (RTCStats timestamp, ms) in seconds."""
    return chromium_video(s)["timestamp"] / 1000.0


# ---- Swift publishes to Chromium -------------------------------------------------------------------

@pytest.mark.timeout(120)
@pytest.mark.parametrize("codec", ["H264", "VP8"])
def test_publish_to_chromium(codec, media_page, artifact_dir, logs):
    run, receiver = publish_to_chromium(media_page, artifact_dir, logs, codec=codec.lower())
    pub = require_ok(run, "publish")
    samples = valid(run.samples)
    assert samples, f"no Chromium stats: {run.samples[-3:]}"
    final = samples[-1]
    video = chromium_video(final)
    reader = final.get("reader") or {}
    decoded = max(chromium_video(s).get("framesDecoded", 0) for s in samples)
    print(f"{run.impl} {codec}: sent {pub['framesSent']} frames, Chromium decoded {decoded} "
          f"{video.get('frameWidth')}x{video.get('frameHeight')} codec {video.get('codec')}, "
          f"rendered {reader.get('frames')} read {reader.get('patternFrames')} "
          f"#{reader.get('firstNumber')}..#{reader.get('lastNumber')} latency p50 {reader.get('latencyMsP50')} ms")
    assert pub["codec"].lower() == f"video/{codec}".lower(), pub["codec"]
    assert (video.get("codec") or {}).get("mimeType", "").lower() == f"video/{codec}".lower(), video
    assert (video.get("frameWidth"), video.get("frameHeight")) == (1280, 720), video
    assert pub["framesSent"] > 0, pub
    assert decoded >= 0.9 * pub["framesSent"], (
        f"Chromium decoded {decoded} of {pub['framesSent']} frames sent (< 90%)")
    assert reader.get("patternFrames", 0) >= 10, f"page read the pattern on too few frames: {reader}"
    assert reader["patternFrames"] >= 0.9 * reader["frames"], f"pattern unreadable on > 10% of rendered frames: {reader}"
    assert reader["increasing"], f"frame numbers read back are not increasing: {reader}"
    assert receiver.deleted, "the publisher did not DELETE its WHIP resource"
    # Chromium took transport-cc: its feedback gave our estimator a path estimate, which on
    # loopback ramps to the sender's ceiling (2.5 Mbit/s video + audio). (The aiortc stand-in
    # has no estimator.)
    assert run.impl != "swiftrtc" or (pub.get("availableOutgoingBitrate") or 0) > 1_000_000, (
        f"no bandwidth estimate from Chromium's transport-cc feedback: {pub.get('availableOutgoingBitrate')}")


# ---- Chromium's fake camera → Swift play -------------------------------------------------------------

def check_recording(artifact_dir: Path, play: dict, size: tuple[int, int]) -> dict:
    y4m = parse_y4m(artifact_dir / "play.y4m")
    frames = y4m["frames"]
    assert (y4m["width"], y4m["height"]) == size, f"Y4M is {y4m['width']}x{y4m['height']}, expected {size}"
    assert len(frames) >= 10, f"Y4M holds only {len(frames)} frames"
    change = float(np.abs(frames[0].astype(np.int16) - frames[-1].astype(np.int16)).mean())
    assert change > 1, f"first and last recorded frames hardly differ (mean abs diff {change:.2f})"
    w, h = check_png(artifact_dir / "play.png")
    assert (w, h) == size, f"snapshot PNG is {w}x{h}, expected {size}"
    assert (play["frameWidth"], play["frameHeight"]) == size, play
    return {"frames": len(frames), "firstLastMeanAbsDiff": change, "colorspace": y4m["colorspace"],
            "y4m": y4m}


def play_args(url: str, artifact_dir: Path, duration: float = 5) -> list[str]:
    return [url, "--record", str(artifact_dir / "play.y4m"), "--snapshot", str(artifact_dir / "play.png"),
            "--duration", str(duration)]


@pytest.mark.timeout(120)
def test_play_from_chromium(media_page, artifact_dir, logs):
    sender = ChromiumWhepSender(media_page)
    logs.append(("chromium whep sender", lambda: "\n".join(sender.log)))
    try:
        run = run_cli("play", play_args(sender.url, artifact_dir), artifact_dir, logs, sample=sender.stats)
    finally:
        sender.close()
    shot(media_page, artifact_dir, "chromium-sender.png")
    write_json(artifact_dir / "chromium-samples.json", run.samples)
    play = require_ok(run, "play")
    samples = valid(run.samples)
    settings = (samples[-1].get("localSettings") if samples else None) or []
    rec = check_recording(artifact_dir, play, (640, 480))
    out_video = (samples[-1].get("outVideo") if samples else None) or {}
    print(f"{run.impl}: Chromium sent {out_video.get('framesEncoded')} frames ({settings}); play decoded "
          f"{play['framesDecoded']} {play['frameWidth']}x{play['frameHeight']}, Y4M {rec['frames']} frames, "
          f"diff {rec['firstLastMeanAbsDiff']:.1f}, audio {play['audioFramesDecoded']} frames "
          f"{play['audioEnergyDb']} dBFS, connect {play['connectMs']} ms, first frame {play['firstFrameMs']} ms")
    assert play["framesDecoded"] > 0, play
    assert play["audioFramesDecoded"] > 0, f"no Opus audio decoded: {play}"
    assert play["audioEnergyDb"] is not None and play["audioEnergyDb"] > -50, (
        f"decoded audio is (nearly) silent: {play['audioEnergyDb']} dBFS; Chromium's fake microphone beeps")


# ---- aiortc as the other side --------------------------------------------------------------------------

@pytest.mark.timeout(120)
@pytest.mark.parametrize("codec", ["H264", "VP8"])
def test_publish_to_aiortc(codec, need_aiortc, artifact_dir, logs):
    receiver = AiortcWhipReceiver()
    logs.append(("aiortc whip receiver", lambda: "\n".join(receiver.log)))
    try:
        run = run_cli("publish", publish_args(receiver.url, codec.lower()), artifact_dir, logs,
                      sample=receiver.stats)
    finally:
        receiver.close()
    write_json(artifact_dir / "aiortc-samples.json", run.samples)
    (artifact_dir / "whip-receiver.log").write_text("\n".join(receiver.log))
    pub = require_ok(run, "publish")
    final = valid(run.samples)[-1]
    video = final.get("video") or {}
    print(f"{run.impl} {codec}: sent {pub['framesSent']}, aiortc decoded {video.get('frames')} "
          f"{video.get('sizes')}, read {video.get('patternFrames')} #{video.get('firstNumber')}.."
          f"#{video.get('lastNumber')}, latency p50 {video.get('latencyMsP50')} ms, audio {final.get('audio')}")
    negotiated = [c for cs in final["negotiated"].values() for c in cs]
    assert any(c.lower().startswith(f"video/{codec.lower()}/") for c in negotiated), negotiated
    assert video.get("frames", 0) > 0, f"aiortc decoded no video: {final}"
    # From the 300 kbit/s start the first frames are sized for it (480x270) until the estimate is
    # known; aiortc gives no transport-cc feedback, so after 2 s (the feedback timeout) the encoder
    # runs at its own rate and full size.
    early = sum(n for size, n in video["sizes"].items() if size != "1280x720")
    assert "1280x720" in video["sizes"] and early <= 2.5 * 30, video["sizes"]
    assert video["frames"] >= 0.9 * pub["framesSent"], (
        f"aiortc decoded {video['frames']} of {pub['framesSent']} frames sent (< 90%)")
    assert video["patternFrames"] >= 0.9 * video["frames"], f"pattern unreadable on > 10% of frames: {video}"
    assert video["increasing"], video
    audio = final.get("audio") or {}
    assert audio.get("frames", 0) > 0 and audio.get("energyDb", -200) > -50, f"tone did not arrive: {audio}"
    assert receiver.deleted, "the publisher did not DELETE its WHIP resource"


@pytest.mark.timeout(120)
def test_play_from_aiortc(need_aiortc, artifact_dir, logs):
    sender = AiortcWhepSender(width=640, height=480, fps=30)
    logs.append(("aiortc whep sender", lambda: "\n".join(sender.log)))
    try:
        run = run_cli("play", play_args(sender.url, artifact_dir), artifact_dir, logs, sample=sender.stats)
    finally:
        sender.close()
    write_json(artifact_dir / "aiortc-samples.json", run.samples)
    play = require_ok(run, "play")
    rec = check_recording(artifact_dir, play, (640, 480))
    # Read the pattern from the recording ourselves: play's own claim is checked, not trusted.
    numbers = [got[0] for got in map(read_pattern, rec["y4m"]["frames"]) if got]
    print(f"{run.impl}: play decoded {play['framesDecoded']}, pattern {play['patternFrames']} "
          f"verified={play['patternVerified']}, Y4M {rec['frames']} frames ({len(numbers)} readable), "
          f"audio {play['audioFramesDecoded']} frames {play['audioEnergyDb']} dBFS")
    assert play["patternVerified"] is True, play
    assert play["patternFrames"] >= 0.9 * play["framesDecoded"], play
    assert len(numbers) >= 0.9 * rec["frames"], f"only {len(numbers)} of {rec['frames']} recorded frames readable"
    assert all(b > a for a, b in zip(numbers, numbers[1:])), "recorded frame numbers not increasing"
    assert play["audioFramesDecoded"] > 0 and play["audioEnergyDb"] > -50, play


# ---- sender controls, measured at the receiver -----------------------------------------------------------

def measured_fps(run: CliRun) -> dict:
    samples = valid(run.samples)
    return rate([s for s in samples if chromium_video(s).get("timestamp")],
                lambda s: chromium_video(s).get("framesDecoded"), stats_seconds,
                end_before=run.exited_at - 1.0, window=3.0)


@pytest.mark.timeout(120)
def test_adapt_output_format(media_page, artifact_dir, logs):
    run, _ = publish_to_chromium(media_page, artifact_dir, logs, "--adapt", "640x360@15", duration=6.0)
    pub = require_ok(run, "publish")
    fps = measured_fps(run)
    last = last_during_stream(run.samples, run, lambda s: chromium_video(s).get("frameWidth"))
    v = chromium_video(last)
    write_json(artifact_dir / "measured.json", {"fps": fps, "last": last, "publisher": pub})
    print(f"{run.impl}: Chromium {v['frameWidth']}x{v['frameHeight']}, {fps['rate']:.2f} fps over "
          f"{fps['seconds']:.2f} s (Chromium's own framesPerSecond {v.get('framesPerSecond')})")
    assert (v["frameWidth"], v["frameHeight"]) == (640, 360), v
    assert abs(fps["rate"] - 15) <= 0.15 * 15, f"measured {fps['rate']:.2f} fps, expected 15 ± 15%"
    reader = last.get("reader") or {}
    assert reader.get("increasing") and reader.get("patternFrames", 0) > 0, reader


@pytest.mark.timeout(120)
def test_max_framerate(media_page, artifact_dir, logs):
    run, _ = publish_to_chromium(media_page, artifact_dir, logs, "--max-fps", "10", duration=6.0)
    pub = require_ok(run, "publish")
    fps = measured_fps(run)
    write_json(artifact_dir / "measured.json", {"fps": fps, "publisher": pub})
    print(f"{run.impl}: {fps['rate']:.2f} fps over {fps['seconds']:.2f} s")
    assert abs(fps["rate"] - 10) <= 0.15 * 10, f"measured {fps['rate']:.2f} fps, expected 10 ± 15%"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("codec", ["H264", "VP8"])
def test_max_bitrate(codec, media_page, artifact_dir, logs):
    run, _ = publish_to_chromium(media_page, artifact_dir, logs, "--bitrate", "500",
                                 codec=codec.lower(), duration=6.0)
    pub = require_ok(run, "publish")
    samples = [s for s in valid(run.samples) if chromium_video(s).get("timestamp")]
    br = rate(samples, lambda s: chromium_video(s).get("bytesReceived"), stats_seconds,
              end_before=run.exited_at - 1.0, window=3.0)
    kbps = br["rate"] * 8 / 1000
    write_json(artifact_dir / "measured.json", {"kbps": kbps, "bytes": br, "publisher": pub})
    print(f"{run.impl} {codec}: {kbps:.0f} kbps received (payload bytes) over {br['seconds']:.2f} s")
    # maxBitrate is a ceiling: above it by more than 15% is a failure. Encoders undershoot on
    # easy content, so 30% below is allowed (a looser bound than the 15% above, on purpose).
    assert kbps <= 500 * 1.15, f"{kbps:.0f} kbps exceeds maxBitrate 500 kbps by more than 15%"
    assert kbps >= 500 * 0.70, f"{kbps:.0f} kbps is more than 30% below maxBitrate 500 kbps"


@pytest.mark.timeout(120)
def test_disable_track(media_page, artifact_dir, logs):
    run, _ = publish_to_chromium(media_page, artifact_dir, logs, "--disable-after", "2", duration=5.0)
    pub = require_ok(run, "publish")
    samples = [s for s in valid(run.samples) if chromium_video(s).get("timestamp")]
    assert samples, run.samples[-3:]
    # The receiver's view of the disable: the first sample after which no frame number is read.
    reads = [(s.get("reader") or {}).get("patternFrames", 0) for s in samples]
    assert reads[-1] > 0, "the page never read the pattern before the track was disabled"
    stop = next(i for i, r in enumerate(reads) if r == reads[-1])
    after = [s for s in samples[stop:] if s["t"] <= run.exited_at - 0.5]
    assert samples[stop]["t"] < run.exited_at - 1.5, (
        f"the page read the test pattern until the stream ended ({reads[-1]} frames): "
        "the track was not disabled after 2 s")
    assert len(after) >= 2, f"too few samples after the disable: {len(after)}"
    # skip half a second for the black frames to replace the last picture frames in flight
    t_from = stats_seconds(after[0]) + 0.5
    window = [s for s in after if stats_seconds(s) >= t_from]
    assert len(window) >= 2, f"disabled period too short to measure: {len(window)} samples"
    dv = chromium_video(window[-1])["framesDecoded"] - chromium_video(window[0])["framesDecoded"]
    dt = stats_seconds(window[-1]) - stats_seconds(window[0])
    fps_disabled = dv / dt
    last_reader = samples[-1].get("reader") or {}
    write_json(artifact_dir / "measured.json", {"fpsDisabled": fps_disabled, "frames": dv, "seconds": dt,
                                                "reader": last_reader, "publisher": pub})
    print(f"{run.impl}: after disable {dv} frames in {dt:.2f} s ({fps_disabled:.2f} fps), "
          f"last frame mean luma {last_reader.get('meanLumaLast')}")
    assert dv > 0, "framesDecoded stopped growing after the disable (no black frames)"
    assert fps_disabled <= 2, f"{fps_disabled:.2f} fps while disabled; expected a low rate (≤ 2 fps)"
    assert last_reader.get("meanLumaLast") is not None and last_reader["meanLumaLast"] < 30, (
        f"last rendered frame is not black: mean luma {last_reader.get('meanLumaLast')}")


@pytest.mark.timeout(150)
def test_beauty_processor(need_aiortc, artifact_dir, logs):
    """Beauty strength 1 removes fine texture: ≥ 20% less high-frequency energy (mean |Laplacian|
    below the band) in the frames aiortc receives than with strength 0. 640x360 keeps the Python
    stand-in's filter real time; the pattern's square carries a fine texture for it to smooth."""
    energies, lumas = {}, {}
    for strength in ("0", "1"):
        receiver = AiortcWhipReceiver(measure_hf=True)
        logs.append((f"aiortc receiver beauty {strength}", lambda r=receiver: "\n".join(r.log)))
        try:
            run = run_cli("publish", publish_args(receiver.url, "h264", "640x360", 30, 4, "--beauty", strength,
                                                  "--bitrate", "1500", "--audio", "none"),
                          artifact_dir, logs, tag=f"publish-beauty{strength}")
            final = receiver.stats()
        finally:
            receiver.close()
        require_ok(run, "publish")
        video = final.get("video") or {}
        assert video.get("frames", 0) >= 30, f"beauty {strength}: too few frames received: {video}"
        assert video["patternFrames"] >= 0.9 * video["frames"], f"beauty {strength} broke the pattern: {video}"
        energies[strength] = video["hfEnergyMean"]
        lumas[strength] = video["meanLumaLast"]
        write_json(artifact_dir / f"received-beauty{strength}.json", final)
    drop = 1 - energies["1"] / energies["0"]
    write_json(artifact_dir / "measured.json", {"hfEnergy": energies, "drop": drop, "meanLumaLast": lumas})
    print(f"{run.impl}: high-frequency energy beauty 0 → {energies['0']:.3f}, beauty 1 → "
          f"{energies['1']:.3f} ({drop:.0%} less); mean luma of the last frame {lumas}")
    assert drop >= 0.20, (
        f"beauty 1 removed only {drop:.0%} of the high-frequency energy (need ≥ 20%); note an "
        "edge-preserving filter can only show on a pattern with fine texture (testpattern.TEXTURE)")
