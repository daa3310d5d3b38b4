"""Reading recordings back: ffprobe (Debian's ffmpeg) for the container's view, ffmpeg for decode
errors, PyAV for the test pattern in every picture."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path


def ffprobe(path: Path) -> dict:
    """{"video": {...}, "audio": {...}, "duration": s}: codec, size, channels, start time and the
    packets actually read (not the header's claim)."""
    out = subprocess.run(["ffprobe", "-v", "error", "-count_packets", "-show_entries",
                          "stream=codec_type,codec_name,width,height,channels,start_time,duration,nb_read_packets"
                          ":format=duration,format_name", "-of", "json", str(path)],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, f"ffprobe {path}: {out.stderr}"
    doc = json.loads(out.stdout)
    result: dict = {"duration": float(doc.get("format", {}).get("duration") or 0),
                    "format": doc.get("format", {}).get("format_name")}
    for s in doc.get("streams", []):
        kind = s.get("codec_type")
        if kind in ("video", "audio") and kind not in result:
            result[kind] = {"codec": s.get("codec_name"), "width": s.get("width"), "height": s.get("height"),
                            "channels": s.get("channels"), "packets": int(s.get("nb_read_packets") or 0),
                            "start": float(s.get("start_time") or 0)}
    return result


def last_frame_size(path: Path) -> tuple[int, int] | None:
    """The size of the last decoded video frame (a stream's header has its first frame's)."""
    out = subprocess.run(["ffprobe", "-v", "error", "-select_streams", "v:0", "-show_entries", "frame=width,height",
                          "-of", "csv=p=0", str(path)], capture_output=True, text=True, timeout=120)
    rows = [line.split(",") for line in out.stdout.split() if line.strip()]
    return (int(rows[-1][0]), int(rows[-1][1])) if rows and len(rows[-1]) == 2 else None


def decode_errors(path: Path) -> str:
    """What `ffmpeg -v error -i F -enc_time_base -1 -f null -` prints: nothing for a clean file.
    `-enc_time_base -1` keeps the stream's own time base: without it the CLI re-times video to
    1/r_frame_rate (1/30 s) and, when the sender's capture clock jitters, two frames landing in
    one 33 ms slot are reported as "non monotonically increasing dts" by the null muxer, an
    artifact of that conversion, not of the file (seen on a publisher under load)."""
    out = subprocess.run(["ffmpeg", "-nostdin", "-v", "error", "-i", str(path), "-enc_time_base", "-1", "-f", "null", "-"],
                         capture_output=True, text=True, timeout=120)
    return (out.stderr + ("" if out.returncode == 0 else f"\nexit {out.returncode}")).strip()


def pattern_frames(path: Path) -> list:
    """The test pattern's (frame number, capture ms) of every decoded picture, None where unreadable."""
    import av
    from interop.testpattern import read_pattern
    frames = []
    with av.open(str(path)) as container:
        for frame in container.decode(video=0):
            frames.append(read_pattern(frame.to_ndarray(format="gray")))
    return frames
