"""aiortc's audio send path per 10 ms of 48 kHz mono speech-like audio, for swiftrtc-bench:
what its RTCRtpSender does with a microphone frame (an av.AudioFrame made from PCM, then
aiortc.codecs.opus.OpusEncoder: resample to stereo, libopus at its 96 kbit/s voip setting).
aiortc has no echo canceller / gain / noise processing, so there is none to add. Prints one JSON
line: {"us_per_10ms": …, "frames": …} (thread CPU time)."""
import argparse
import json
import math
import time

import numpy as np
from av import AudioFrame
from aiortc.codecs.opus import OpusEncoder


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=3.0)
    args = ap.parse_args()
    rate, n = 48000, 960            # aiortc's sender hands the encoder 20 ms frames
    t = np.arange(rate * 2) / rate
    env = 0.5 + 0.5 * np.sin(2 * math.pi * 4 * t)
    pcm = (6000 * env * (np.sin(2 * math.pi * 220 * t) + 0.5 * np.sin(2 * math.pi * 440 * t))).astype(np.int16)
    encoder = OpusEncoder()
    done, pts = 0, 0
    start = time.thread_time()
    while time.thread_time() - start < args.seconds:
        i = (done * n) % (len(pcm) - n)
        frame = AudioFrame.from_ndarray(pcm[i:i + n].reshape(1, -1), format="s16", layout="mono")
        frame.sample_rate = rate
        frame.pts = pts
        pts += n
        encoder.encode(frame)
        done += 1
    per_20ms = (time.thread_time() - start) / done
    print(json.dumps({"us_per_10ms": per_20ms / 2 * 1e6, "frames": done}), flush=True)


if __name__ == "__main__":
    main()
