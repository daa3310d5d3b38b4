"""Interop tests: real audio devices through a real sound server (issue 13).

PulseAudio runs as root with null sinks on a private socket (interop/audio_helpers.py); a sink's
monitor records what was played into it, and serves as a microphone.
- Playout: `swiftrtc publish --audio tone` (440 Hz, peak 0.25 = −15.05 dBFS RMS) through
  `swiftrtc serve`, `swiftrtc play --speaker spk`; `parec` of spk.monitor has the tone's
  frequency (FFT peak) and level (±1 dB), continuous (no gap > 20 ms).
- Capture + mute: a 1 kHz tone played into spk with `paplay`; `swiftrtc publish --audio
  mic:spk.monitor` sends it; `swiftrtc play --speaker far` on the far side plays what it decodes;
  `parec` of far.monitor has the same spectrum and level. `mute` on the publisher's stdin
  silences the far side, `unmute` brings it back, with no reopen and no renegotiation.
CI=true: a missing pulseaudio/parec/paplay fails instead of skipping.
Run inside the loopback-only namespace: interop/run.sh -k audio
"""

from __future__ import annotations

import json
import shutil
import time

import pytest

from interop.audio_helpers import RATE, Pulse, analyse, gaps_ms, load_raw, stop, tone_segments, write_tone
from interop.conftest import require, write_json
from interop.relay_helpers import SwiftRun, summary
from interop.test_relay import relay, runs  # noqa: F401 — the relay suite's fixtures

TONE_DB = -15.05        # swiftrtc's built-in tone: 440 Hz, peak 0.25 of full scale
MIC_TONE_HZ, MIC_TONE_PEAK = 1000.0, 0.3
MIC_TONE_DB = -13.52    # 20·log10(0.3/√2)


@pytest.fixture
def pulse(artifact_dir, logs):
    require(all(shutil.which(t) for t in ("pulseaudio", "parec", "paplay", "pactl")),
            "pulseaudio / pulseaudio-utils are not installed (apt-get install -y pulseaudio pulseaudio-utils)")
    p = Pulse(artifact_dir / "pulseaudio.log", sinks=("spk", "far"))
    logs.append(("pulseaudio", p.process.text))
    yield p
    p.close()


@pytest.fixture(autouse=True)
def pulse_env(pulse, monkeypatch):
    """Every swiftrtc process of these tests talks to the test's PulseAudio."""
    for key in ("HOME", "PULSE_RUNTIME_PATH", "PULSE_STATE_PATH", "PULSE_SERVER"):
        monkeypatch.setenv(key, pulse.env[key])


def test_devices_lists_the_null_sinks(swift_bin, runs, artifact_dir):
    r = runs(SwiftRun(swift_bin, "devices", ["--json"], artifact_dir, "devices", stats=False))
    assert r.wait(timeout=30) == 0, r.text()
    text = r.process.text()   # stdout and stderr: the JSON array is the bracketed part
    devices = json.loads(text[text.index("["): text.rindex("]") + 1])
    write_json(artifact_dir / "devices.json", devices)
    by_id = {d["id"]: d for d in devices}
    assert by_id["spk"]["kind"] == "audiooutput" and by_id["far"]["kind"] == "audiooutput", by_id.keys()
    assert by_id["spk.monitor"]["kind"] == "audioinput" and by_id["spk.monitor"]["isMonitor"] is True
    assert by_id["spk"]["sampleRate"] == RATE
    assert by_id["synthetic:front"]["kind"] == "videoinput"


@pytest.mark.timeout(90)
def test_playout_tone_reaches_the_speaker(relay, pulse, swift_bin, runs, artifact_dir):
    url = relay.webrtc_url("live", "tone")
    publisher = runs(SwiftRun(swift_bin, "publish", [url, "--size", "320x240", "--fps", "15", "--duration", "12",
                                                     "--audio", "tone"], artifact_dir, "publish"))
    relay.wait_event(r"publisher \S+ connected \(live/tone\)", timeout=15)
    recording = artifact_dir / "spk.raw"
    parec = pulse.record("spk.monitor", recording)
    try:
        player = runs(SwiftRun(swift_bin, "play", [url, "--duration", "7", "--speaker", "spk"], artifact_dir, "play"))
        play_code = player.wait(timeout=40)
    finally:
        stop(parec)
    pub_code = publisher.wait(timeout=30)
    stats = player.stats()
    x = load_raw(recording)
    seg = tone_segments(x, TONE_DB - 20)
    assert seg, f"no tone recorded from spk.monitor ({len(x) / RATE:.1f} s recorded)"
    first, last = seg[0][0], seg[-1][1]
    steady = x[first + RATE // 2: last - RATE // 4]
    result = {**analyse(steady), "tonalSeconds": (last - first) / RATE,
              "longestGapMs": max(gaps_ms(x[first:last], TONE_DB - 20), default=0.0),
              "playout": stats.get("playout"), "play": summary(stats)}
    write_json(artifact_dir / "playout.json", result)
    print(f"playout: {result['peakHz']:.1f} Hz at {result['levelDb']:.2f} dBFS (sent {TONE_DB}), "
          f"{result['tonalSeconds']:.2f} s of tone, longest gap {result['longestGapMs']:.1f} ms, playout {stats.get('playout')}")

    assert play_code == 0, player.text()[-3000:]
    assert pub_code == 0, publisher.text()[-3000:]
    assert "playing audio to spk" in player.text()
    assert result["tonalSeconds"] >= 4, result
    assert abs(result["peakHz"] - 440) <= 3, result
    assert abs(result["levelDb"] - TONE_DB) <= 1, result
    assert result["energyNearPeak"] >= 0.9, result
    assert result["longestGapMs"] <= 20, result
    assert stats["playout"]["framesPlayed"] >= 500 and stats["playout"]["deviceDelayMs"] > 0, stats["playout"]


@pytest.mark.timeout(120)
def test_microphone_capture_reaches_the_far_side_and_mutes(relay, pulse, swift_bin, runs, artifact_dir):
    wav = artifact_dir / "tone1k.wav"
    write_tone(wav, MIC_TONE_HZ, MIC_TONE_PEAK, 30)
    source = pulse.play("spk", wav)
    url = relay.webrtc_url("live", "mic")
    try:
        publisher = runs(SwiftRun(swift_bin, "publish", [url, "--size", "320x240", "--fps", "15", "--duration", "16",
                                                         "--audio", "mic:spk.monitor", "--audio-processing", "none"],
                                  artifact_dir, "publish", stdin_pipe=True))
        relay.wait_event(r"publisher \S+ connected \(live/mic\)", timeout=15)
        recording = artifact_dir / "far.raw"
        parec = pulse.record("far.monitor", recording)
        try:
            player = runs(SwiftRun(swift_bin, "play", [url, "--duration", "11", "--speaker", "far"], artifact_dir, "play"))
            player.process.wait_for_line(r"playing audio to far", timeout=20)
            time.sleep(4)
            publisher.process.send_line("mute")
            publisher.process.wait_for_line(r"microphone muted", timeout=5)
            time.sleep(2.5)
            publisher.process.send_line("unmute")
            publisher.process.wait_for_line(r"microphone unmuted", timeout=5)
            play_code = player.wait(timeout=40)
        finally:
            stop(parec)
        pub_code = publisher.wait(timeout=30)
    finally:
        stop(source)
    stats, pub_stats = player.stats(), publisher.stats()
    x = load_raw(recording)
    seg = [s for s in tone_segments(x, MIC_TONE_DB - 20) if s[1] - s[0] >= RATE // 2]
    gaps = [(b[0] - a[1]) / RATE for a, b in zip(seg, seg[1:])]
    result = {"segmentsSeconds": [(a / RATE, b / RATE) for a, b in seg], "gapsSeconds": gaps,
              "microphone": pub_stats.get("microphone"), "playout": stats.get("playout")}
    if len(seg) >= 2:
        before = analyse(x[seg[0][0] + RATE // 2: seg[0][1] - RATE // 10])
        after = analyse(x[seg[-1][0] + RATE // 4: seg[-1][1] - RATE // 10])
        muted = x[seg[0][1] + RATE // 4: seg[1][0] - RATE // 4]
        result.update(before=before, after=after,
                      mutedLevelDb=analyse(muted)["levelDb"] if len(muted) else None,
                      longestGapInsideMs=max(gaps_ms(x[seg[0][0]:seg[0][1]], MIC_TONE_DB - 20)
                                             + gaps_ms(x[seg[-1][0]:seg[-1][1]], MIC_TONE_DB - 20), default=0.0))
    write_json(artifact_dir / "capture.json", result)
    print(f"capture: {result}")

    assert play_code == 0, player.text()[-3000:]
    assert pub_code == 0, publisher.text()[-3000:]
    assert len(seg) == 2, f"expected tone, a muted stretch, tone again: {result}"
    assert 1.5 <= gaps[0] <= 3.5, f"the muted stretch should last ~2.5 s: {result}"
    assert result["mutedLevelDb"] is not None and result["mutedLevelDb"] < -60, result
    for part in (result["before"], result["after"]):
        assert abs(part["peakHz"] - MIC_TONE_HZ) <= 3, result
        assert abs(part["levelDb"] - MIC_TONE_DB) <= 1, result
        assert part["energyNearPeak"] >= 0.9, result
    assert result["longestGapInsideMs"] <= 20, result
    mic = pub_stats["microphone"]
    assert mic["deviceLost"] == 0 and mic["framesCaptured"] >= 1000, mic   # one device, never reopened
