#!/usr/bin/env python3
"""Mouth-to-ear audio latency through two PeerConnections on loopback with real devices
(issue 13's benchmark). PulseAudio with a null sink `spk` (interop/audio_helpers.Pulse); two
`swiftrtc p2p` peers through `swiftrtc signal`: A captures `spk.monitor` (`--audio
mic:spk.monitor`, no processing), B plays A's audio into `spk` at volume 0.5. Clicks played into
spk are heard by A, sent to B and played into spk again, so spk.monitor holds each click and its
−6 dB copy one trip later: capture → Opus → network → jitter buffer → playout buffer → device.
Prints and writes {p50Ms, p95Ms, latenciesMs, loopGains}; exits 2 if PulseAudio or swiftrtc is
missing, 1 if the run could not be made. Run it in a loopback-only network namespace (make bench).
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
from interop.audio_helpers import Pulse, click_round_trips, load_raw, stop, write_clicks  # noqa: E402
from interop.conftest import ManagedProcess  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--swiftrtc", required=True)
    ap.add_argument("--json", default="artifacts/bench-audio-latency.json")
    ap.add_argument("--clicks", type=int, default=20)
    args = ap.parse_args()
    if not Path(args.swiftrtc).exists():
        print(f"audio_latency: {args.swiftrtc} not found", file=sys.stderr)
        return 2
    work = Path(tempfile.mkdtemp(prefix="swiftrtc-audio-latency-"))
    try:
        pulse = Pulse(work / "pulseaudio.log", sinks=("spk",))
    except (OSError, RuntimeError) as e:
        print(f"audio_latency: no PulseAudio: {e}", file=sys.stderr)
        return 2
    procs: list[ManagedProcess] = []
    try:
        signal = ManagedProcess([args.swiftrtc, "signal", "--http", "127.0.0.1:0"], work / "signal.log", env=pulse.env)
        procs.append(signal)
        url = signal.wait_for_line(r"listening on (ws://\S+)\?room=NAME", timeout=20).group(1) + "?room=latency"
        seconds = args.clicks * 1.2 + 12
        common = ["--size", "160x120", "--fps", "10", "--duration", str(seconds)]
        a = ManagedProcess([args.swiftrtc, "p2p", url, *common, "--audio", "mic:spk.monitor", "--audio-processing", "none",
                            "--speaker", "none"], work / "p2p-a.log", env=pulse.env)
        procs.append(a)
        a.wait_for_line(r"p2p: waiting for the other peer", timeout=20)
        b = ManagedProcess([args.swiftrtc, "p2p", url, *common, "--audio", "none", "--speaker", "spk"], work / "p2p-b.log",
                           env=pulse.env, stdin_pipe=True)
        procs.append(b)
        b.wait_for_line(r"p2p: connected", timeout=20)
        b.send_line("volume 0.5")
        b.wait_for_line(r"speaker volume 0.5", timeout=5)
        time.sleep(2.5)   # past the null sink's start-up stall and the buffers settling
        clicks = work / "clicks.wav"
        burst = write_clicks(clicks, count=args.clicks, period_s=1.2, peak=0.5)
        recording = work / "loop.raw"
        parec = pulse.record("spk.monitor", recording)
        source = pulse.play("spk", clicks)
        try:
            source.wait(timeout=seconds + 10)
            time.sleep(1)
        finally:
            stop(parec)
            stop(source)
        latencies, gains = click_round_trips(load_raw(recording), burst)
    except Exception as e:  # a run that could not be made is loud, not a result
        print(f"audio_latency: the run failed: {e}", file=sys.stderr)
        for p in procs:
            print(p.text()[-2000:], file=sys.stderr)
        return 1
    finally:
        for p in procs:
            p.close()
        pulse.close()
    found = [lat for lat, g in zip(latencies, gains) if 0.3 <= g <= 0.7]
    result = {"latenciesMs": latencies, "loopGains": gains, "clicks": args.clicks, "copiesFound": len(found),
              "path": "p2p A mic(spk.monitor) -> Opus -> loopback -> p2p B jitter+playout buffers -> spk"}
    if found:
        result.update(p50Ms=float(np.percentile(found, 50)), p95Ms=float(np.percentile(found, 95)))
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2))
    print(f"audio.mouth_to_ear_p50_ms   {result.get('p50Ms')}\naudio.mouth_to_ear_p95_ms   {result.get('p95Ms')}"
          f"\n({len(found)} of {args.clicks} clicks came back at about half; wrote {args.json})")
    return 0 if found else 1


if __name__ == "__main__":
    sys.exit(main())
