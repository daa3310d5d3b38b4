"""Recording (`--record out.mp4|webm`): swiftrtc play and publish write the stream without
re-encoding, with its audio, in sync; read back by ffprobe, ffmpeg and PyAV, frame by frame.

Run alone: interop/run.sh interop/test_recording.py
"""
from __future__ import annotations

import signal
import time

import pytest

from interop.conftest import write_json
from interop.media_files import decode_errors, ffprobe, last_frame_size, pattern_frames
from interop.relay_helpers import SwiftRun, summary
from interop.test_relay import publish_args, relay, runs  # noqa: F401  (fixtures)


def consecutive(frames: list) -> bool:
    numbers = [f[0] for f in frames if f]
    return len(numbers) == len(frames) and all(b == a + 1 for a, b in zip(numbers, numbers[1:]))


@pytest.mark.timeout(90)
@pytest.mark.parametrize("codec,ext", [("h264", "mp4"), ("vp8", "webm")])
def test_play_and_publish_record(codec, ext, relay, swift_bin, runs, artifact_dir):  # noqa: F811
    """Publish with --record (what was sent) and play with --record (what arrived): both files hold
    every frame, in order, with the audio starting with the video, and decode without an error."""
    app, name = "live", f"rec-{codec}"
    sent, got = artifact_dir / f"sent.{ext}", artifact_dir / f"got.{ext}"
    publisher = runs(SwiftRun(swift_bin, "publish", publish_args(relay.webrtc_url(app, name), codec=codec, duration=12)
                              + ["--record", str(sent)], artifact_dir, "publish"))
    relay.wait_event(rf"publisher \S+ connected \({app}/{name}\)", timeout=15)
    player = runs(SwiftRun(swift_bin, "play", [relay.webrtc_url(app, name), "--duration", "8", "--record", str(got)],
                           artifact_dir, "play"))
    assert player.wait(timeout=30) == 0, player.text()[-3000:]
    assert publisher.wait(timeout=30) == 0, publisher.text()[-3000:]
    play, pub = player.stats(), publisher.stats()
    docs: dict = {}
    numbers: dict[str, list[int]] = {}
    for label, path in (("got", got), ("sent", sent)):
        probe = ffprobe(path)
        errors = decode_errors(path)
        frames = pattern_frames(path)
        docs[label] = {"probe": probe, "decodeErrors": errors, "patternFrames": len(frames),
                       "first": frames[0] if frames else None, "last": frames[-1] if frames else None,
                       "consecutive": consecutive(frames)}
        v, a = probe.get("video") or {}, probe.get("audio") or {}
        print(f"{label}.{ext}: {v.get('codec')} {v.get('width')}x{v.get('height')} {v.get('packets')} frames, "
              f"{a.get('codec')} {a.get('packets')} packets, {probe['duration']:.2f} s, A/V start "
              f"{1000 * (a.get('start', 0) - v.get('start', 0)):+.1f} ms, pattern {frames[:1]}…{frames[-1:]}")
        # The stream starts sized for the 300 kbit/s start (480x270 from 640x360, as libwebrtc)
        # until the probes confirm more: the header has the first keyframe's size, the last
        # frame the source's.
        assert v.get("codec") == codec and (v.get("width"), v.get("height")) in ((640, 360), (480, 270)), probe
        assert last_frame_size(path) == (640, 360), (last_frame_size(path), probe)
        assert a.get("codec") == "opus", probe
        assert abs(a["start"] - v["start"]) <= 0.040, f"audio starts {a['start']} s, video {v['start']} s"
        assert errors == "", f"{path.name} does not decode cleanly:\n{errors[:2000]}"
        numbers[label] = [f[0] for f in frames if f]
        assert len(numbers[label]) == len(frames), f"{path.name}: a frame without its pattern number: {frames[:5]}…"
    write_json(artifact_dir / "summary.json", docs)
    # Every frame in order, in both files: the sent file skips only frames the publisher dropped
    # before encoding (W3C framesDropped: a capture frame that found the encoder still busy; a CPU
    # stall on the 2-core CI machine once dropped 6, alternately), and what arrived is exactly
    # what was sent over its span.
    sent_n, got_n = numbers["sent"], numbers["got"]
    assert all(b > a for a, b in zip(sent_n, sent_n[1:])), f"sent.{ext}: pattern frames out of order"
    skipped = sum(b - a - 1 for a, b in zip(sent_n, sent_n[1:]))
    dropped = (pub.get("outbound") or {}).get("framesDropped", 0)
    assert skipped <= dropped, f"sent.{ext}: {skipped} pattern numbers missing, the publisher dropped {dropped} frames"
    assert got_n and got_n == [n for n in sent_n if got_n[0] <= n <= got_n[-1]], \
        f"got.{ext} is not what was sent over its span: {got_n[:5]}…"
    # What arrived: every frame the player decoded (loopback loses nothing), 8 s of it.
    decoded = summary(play)["framesDecoded"]
    got_frames = docs["got"]["probe"]["video"]["packets"]
    assert got_frames >= 0.98 * decoded and got_frames <= decoded + 2, (got_frames, decoded)
    assert 7.0 <= docs["got"]["probe"]["duration"] <= 9.0, docs["got"]["probe"]
    # What was sent: every encoded frame from the first on, for the whole publish.
    encoded = pub.get("framesEncoded", 0)
    assert abs(docs["sent"]["probe"]["video"]["packets"] - encoded) <= 1, (docs["sent"]["probe"], encoded)
    assert docs["sent"]["first"][0] == 0, docs["sent"]["first"]
    assert abs(docs["sent"]["probe"]["duration"] - encoded / 30) <= 0.5, (docs["sent"]["probe"], encoded)
    assert play["recording"]["videoFrames"] == got_frames, play["recording"]


@pytest.mark.timeout(60)
def test_killed_player_leaves_a_playable_recording(relay, swift_bin, runs, artifact_dir):  # noqa: F811
    """`kill -9` of `swiftrtc play --record out.mp4` after 10 s: the file decodes cleanly and plays
    to within 1 s of the kill (the test pattern's capture clock of the last picture says when)."""
    app, name = "live", "rec-kill"
    path = artifact_dir / "killed.mp4"
    publisher = runs(SwiftRun(swift_bin, "publish", publish_args(relay.webrtc_url(app, name), duration=20),
                              artifact_dir, "publish"))
    relay.wait_event(rf"publisher \S+ connected \({app}/{name}\)", timeout=15)
    player = runs(SwiftRun(swift_bin, "play", [relay.webrtc_url(app, name), "--record", str(path)],
                           artifact_dir, "play", stats=False))
    time.sleep(10)
    killed_ms = time.time() * 1000
    player.kill(signal.SIGKILL)
    publisher.close()
    probe = ffprobe(path)
    errors = decode_errors(path)
    frames = pattern_frames(path)
    last = frames[-1] if frames else None
    behind = (int(killed_ms) & 0xFFFFFFFF) - last[1] if last else None
    write_json(artifact_dir / "summary.json", {"probe": probe, "decodeErrors": errors, "frames": len(frames),
                                               "last": last, "lastFrameBeforeKillMs": behind})
    print(f"killed after 10 s: {len(frames)} frames, {probe['duration']:.2f} s readable, the last picture was captured "
          f"{behind} ms before the kill")
    assert errors == "", errors[:2000]
    assert len(frames) >= 200 and consecutive(frames), (len(frames), frames[:3])
    assert behind is not None and 0 <= behind <= 1000, f"the file ends {behind} ms before the kill"
