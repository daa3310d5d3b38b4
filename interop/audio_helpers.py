"""Audio helpers for test_audio.py: a private PulseAudio with null sinks, recording a monitor,
and measuring what was recorded (level, FFT peak, gaps)."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import tempfile
import time
import wave
from pathlib import Path

import numpy as np

from interop.conftest import ManagedProcess

RATE = 48000


class Pulse:
    """`pulseaudio` as root (it warns, harmlessly) on a socket of its own in a temp directory, so
    it works inside the test's network namespace and touches no other sound server. Sinks are
    null sinks at 48 kHz; `<name>.monitor` records what each plays."""

    def __init__(self, log_path: Path, sinks: tuple[str, ...] = ("spk",)):
        self.dir = Path(tempfile.mkdtemp(prefix="swiftrtc-pulse-"))
        runtime = self.dir / "run"
        runtime.mkdir()
        self.socket = runtime / "native"
        self.env = {**os.environ, "HOME": str(self.dir), "PULSE_RUNTIME_PATH": str(runtime),
                    "PULSE_STATE_PATH": str(self.dir / "state"), "PULSE_SERVER": f"unix:{self.socket}"}
        self.args = [shutil.which("pulseaudio") or "pulseaudio", "--daemonize=no", "--exit-idle-time=-1", "-n",
                     "--use-pid-file=no", "--log-target=stderr",
                     f"--load=module-native-protocol-unix socket={self.socket} auth-anonymous=1"]
        self.args += [f"--load=module-null-sink sink_name={s} rate={RATE}" for s in sinks]
        self.log_path = log_path
        self.start()

    def start(self) -> None:
        self.process = ManagedProcess(self.args, self.log_path, env=self.env)
        deadline = time.monotonic() + 15
        while subprocess.run(["pactl", "info"], env=self.env, capture_output=True).returncode != 0:
            if self.process.proc.poll() is not None or time.monotonic() > deadline:
                text = self.process.text()
                self.process.close()
                raise RuntimeError(f"pulseaudio did not come up on {self.socket}:\n{text[-3000:]}")
            time.sleep(0.1)

    def restart(self) -> None:
        """The sound server goes away (every stream with it) and comes back on the same socket."""
        self.process.close()
        self.log_path = self.log_path.with_name(self.log_path.stem + "-restarted.log")
        self.start()

    def load_sink(self, name: str) -> int:
        """A null sink plugged in at run time; returns its module index (for unload_module)."""
        r = subprocess.run(["pactl", "load-module", "module-null-sink", f"sink_name={name}", f"rate={RATE}"],
                           env=self.env, capture_output=True, text=True, check=True)
        return int(r.stdout.strip())

    def unload_module(self, index: int) -> None:
        subprocess.run(["pactl", "unload-module", str(index)], env=self.env, check=True)

    def record(self, source: str, path: Path) -> subprocess.Popen:
        """parec of `source` as raw s16le mono 48 kHz; small latency so nothing is lost at stop."""
        out = open(path, "wb")
        return subprocess.Popen(["parec", "--latency-msec=20", "-d", source, "--format=s16le", f"--rate={RATE}",
                                 "--channels=1", "--raw"], stdout=out, stderr=subprocess.DEVNULL, env=self.env)

    def play(self, sink: str, wav: Path) -> subprocess.Popen:
        return subprocess.Popen(["paplay", "-d", sink, str(wav)], stderr=subprocess.DEVNULL, env=self.env)

    def close(self) -> None:
        self.process.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


def write_tone(path: Path, frequency: float, peak: float, seconds: float) -> None:
    n = int(RATE * seconds)
    t = np.arange(n) / RATE
    pcm = (peak * 32767 * np.sin(2 * math.pi * frequency * t)).astype("<i2")
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(pcm.tobytes())


def write_voice(path: Path, f0: float, band: tuple[float, float], peak: float, seconds: float,
                syllable_s: float = 0.25, seed: int = 1) -> None:
    """A speech-like stand-in: harmonics of a gliding f0 kept inside `band`, in syllable-length
    bursts with short pauses (what an echo canceller meets in a call, but in a known band)."""
    rng = np.random.default_rng(seed)
    n = int(RATE * seconds)
    t = np.arange(n) / RATE
    pitch = f0 * (1 + 0.08 * np.sin(2 * math.pi * 0.7 * t) + 0.03 * np.sin(2 * math.pi * 3.1 * t))
    phase = 2 * math.pi * np.cumsum(pitch) / RATE
    x = np.zeros(n)
    for k in range(1, int(band[1] / f0) + 2):
        if band[0] <= k * f0 <= band[1]:
            x += np.sin(k * phase + rng.uniform(0, 2 * math.pi)) / math.sqrt(k)
    seg = int(RATE * syllable_s)
    env = np.zeros(n)
    for start in range(0, n, seg):
        length = min(seg, n - start)
        env[start:start + length] = np.hanning(length) * rng.uniform(0.5, 1.0) * (rng.uniform() > 0.15)
    x *= env
    x *= peak / max(np.max(np.abs(x)), 1e-9)
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes((x * 32767).astype("<i2").tobytes())


def band_db(x: np.ndarray, low: float, high: float) -> float:
    """Mean power in [low, high] Hz, dB re full scale."""
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2 / (len(x) * np.mean(np.hanning(len(x)) ** 2))
    freqs = np.fft.rfftfreq(len(x), 1 / RATE)
    power = spectrum[(freqs >= low) & (freqs <= high)].sum() * 2 / len(x)
    return 10 * math.log10(power + 1e-15)


def write_clicks(path: Path, count: int, period_s: float, peak: float, lead_s: float = 0.5) -> np.ndarray:
    """Short 1 kHz bursts (20 ms, Hann) every period_s; returns the burst (the correlation template)."""
    n = int(RATE * 0.02)
    burst = peak * np.hanning(n) * np.sin(2 * math.pi * 1000 * np.arange(n) / RATE)
    x = np.zeros(int(RATE * (lead_s + count * period_s)))
    for i in range(count):
        start = int(RATE * (lead_s + i * period_s))
        x[start:start + n] = burst
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes((x * 32767).astype("<i2").tobytes())
    return burst


def click_round_trips(x: np.ndarray, burst: np.ndarray) -> tuple[list[float], list[float]]:
    """For each click in a recording (correlation gain > 0.7 with `burst`), the lag (ms) and gain
    of its copy one loop later: the strongest correlation peak 30–800 ms after it (the click's
    own sidelobes end before 30 ms). A click whose copy never came back has gain ≈ 0."""
    corr = np.abs(np.correlate(x, burst, mode="same")) / np.sum(burst ** 2)   # ≈ the burst's gain at each lag
    latencies, gains = [], []
    pos = 0
    while True:
        above = np.nonzero(corr[pos:] > 0.7)[0]
        if len(above) == 0:
            break
        start = pos + int(above[0])
        peak = start + int(np.argmax(corr[start:start + RATE // 50]))
        window = corr[peak + int(0.03 * RATE): peak + int(0.8 * RATE)]
        if len(window) < int(0.5 * RATE):
            break
        echo = int(np.argmax(window))
        latencies.append((echo + int(0.03 * RATE)) * 1000 / RATE)
        gains.append(float(window[echo]))
        pos = peak + int(1.0 * RATE)
    return latencies, gains


def load_raw(path: Path) -> np.ndarray:
    return np.frombuffer(path.read_bytes(), dtype="<i2").astype(np.float64) / 32768


def window_db(x: np.ndarray, window: int) -> np.ndarray:
    n = len(x) // window
    if n == 0:
        return np.array([])
    rms = np.sqrt(np.mean(x[: n * window].reshape(n, window) ** 2, axis=1))
    return 20 * np.log10(rms + 1e-12)


def tone_segments(x: np.ndarray, threshold_db: float, window_ms: float = 2.5) -> list[tuple[int, int]]:
    """[start, end) sample ranges where 2.5 ms windows are above threshold_db."""
    w = int(RATE * window_ms / 1000)
    loud = window_db(x, w) > threshold_db
    segments, start = [], None
    for i, on in enumerate(loud):
        if on and start is None:
            start = i
        if not on and start is not None:
            segments.append((start * w, i * w))
            start = None
    if start is not None:
        segments.append((start * w, len(loud) * w))
    return segments


def tone_stretches(x: np.ndarray, threshold_db: float, bridge_ms: float = 50, min_ms: float = 500) -> list[tuple[int, int]]:
    """Stretches of tone at least `min_ms` long, joined across quiet gaps shorter than `bridge_ms`:
    a glitch inside a stretch is judged by gaps_ms() against its own limit, not taken for a pause
    (a 17.5 ms gap split one tone in two in a CI run, failing the count of stretches instead)."""
    joined: list[tuple[int, int]] = []
    for s in tone_segments(x, threshold_db):
        if joined and s[0] - joined[-1][1] < RATE * bridge_ms / 1000:
            joined[-1] = (joined[-1][0], s[1])
        else:
            joined.append(s)
    return [s for s in joined if s[1] - s[0] >= RATE * min_ms / 1000]


def gaps_ms(x: np.ndarray, threshold_db: float) -> list[float]:
    """Lengths of the quiet stretches between the first and the last loud window."""
    seg = tone_segments(x, threshold_db)
    return [(b[0] - a[1]) * 1000 / RATE for a, b in zip(seg, seg[1:])]


def analyse(x: np.ndarray) -> dict:
    """RMS level (dBFS), FFT peak frequency and the fraction of energy within ±20 Hz of it."""
    rms_db = 20 * math.log10(math.sqrt(float(np.mean(x ** 2))) + 1e-12)
    spectrum = np.abs(np.fft.rfft(x * np.hanning(len(x)))) ** 2
    freqs = np.fft.rfftfreq(len(x), 1 / RATE)
    peak = float(freqs[int(np.argmax(spectrum))])
    near = spectrum[np.abs(freqs - peak) <= 20].sum() / max(spectrum.sum(), 1e-30)
    return {"levelDb": rms_db, "peakHz": peak, "energyNearPeak": float(near)}
