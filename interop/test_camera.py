"""Interop tests: cameras through the CLI (issue 5, "How we know it works").

- `swiftrtc devices --json` lists the synthetic front and back cameras with formats and controls.
- `swiftrtc photo` on the synthetic camera: mean luma rises with exposure bias and ISO, R/B with the
  white-balance temperature, zoom 2x doubles the centre; bad settings are clear errors.
- `swiftrtc publish --source camera:synthetic:front` to the relay, `switch back` and `photo PATH`
  typed on its stdin mid-stream: the player keeps decoding and ends up seeing the back camera's
  picture; the photo is written and the stream keeps its frame rate.
- `swiftrtc photo --faces` (issue 24): the front camera's subject is printed as it enters and is in
  the JSON where the photo shows skin; `demo --camera` has a faces step.
Run inside the loopback-only namespace: interop/run.sh -k camera
"""

from __future__ import annotations

import json
import subprocess
import time
from pathlib import Path

import numpy as np
import pytest

from interop.conftest import write_json
from interop.relay_helpers import Relay, SwiftRun, png_info, summary


def run_cli(binary: Path, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


def photo(binary: Path, directory: Path, name: str, *flags: str, source: str = "camera:synthetic:back") -> dict:
    out, js = directory / f"{name}.png", directory / f"{name}.json"
    r = run_cli(binary, "photo", "--source", source, "--size", "640x480",
                "--out", str(out), "--json", str(js), *flags)
    assert r.returncode == 0, f"swiftrtc photo {' '.join(flags)} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    info = png_info(out)
    assert (info["width"], info["height"]) == (640, 480), info
    return {**json.loads(js.read_text()), "stdout": r.stdout}


@pytest.mark.timeout(60)
def test_devices_json(swift_bin, artifact_dir):
    r = run_cli(swift_bin, "devices", "--json")
    assert r.returncode == 0, r.stderr
    devices = json.loads(r.stdout)
    write_json(artifact_dir / "devices.json", devices)
    by_id = {d["id"]: d for d in devices}
    front, back = by_id["synthetic:front"], by_id["synthetic:back"]
    assert front["position"] == "front" and back["position"] == "back"
    sizes = {(f["width"], f["height"]) for f in back["formats"]}
    assert {(3840, 2160), (1920, 1080), (1280, 720), (640, 480), (352, 288)} <= sizes, sizes
    assert back["torch"] is True and front["torch"] is False
    assert back["controls"]["zoom"]["max"] == 16 and front["controls"]["zoom"]["max"] == 4
    assert {"exposureBias", "iso", "exposureDuration", "whiteBalanceTemperature", "focusPosition"} <= set(front["controls"])
    text = run_cli(swift_bin, "devices")
    assert text.returncode == 0 and "synthetic:back" in text.stdout and "torchLevel: 0…1" in text.stdout, text.stdout


@pytest.mark.timeout(240)
def test_photo_controls_measured(swift_bin, artifact_dir):
    bias = [photo(swift_bin, artifact_dir, f"bias{b}", "--exposure-bias", str(b))["meanLuma"] for b in (-2, 0, 2)]
    iso = [photo(swift_bin, artifact_dir, f"iso{i}", "--iso", str(i), "--exposure-time", "5")["meanLuma"]
           for i in (100, 400, 1600)]
    wb = []
    for k in (3000, 6500):
        s = photo(swift_bin, artifact_dir, f"wb{k}", "--white-balance", str(k))
        wb.append(s["meanR"] / s["meanB"])
    write_json(artifact_dir / "photo_measures.json", {"lumaByBias": bias, "lumaByIso": iso, "rbByWhiteBalance": wb})
    print(f"luma by bias -2/0/2: {bias}; by ISO 100/400/1600: {iso}; R/B at 3000/6500 K: {wb}")
    assert bias[0] < bias[1] < bias[2], bias
    assert iso[0] < iso[1] < iso[2], iso
    assert wb[0] < wb[1], wb
    # What the camera set is printed, clamped: ISO 99999 becomes the back camera's maximum.
    r = run_cli(swift_bin, "photo", "--source", "camera:synthetic:back", "--out", str(artifact_dir / "clamped.jpg"),
                "--iso", "99999", "--size", "352x288")
    assert r.returncode == 0, r.stderr
    assert "camera ISO 3072 (asked: ISO 99999)" in r.stdout, r.stdout
    assert (artifact_dir / "clamped.jpg").read_bytes()[:3] == b"\xff\xd8\xff"


@pytest.mark.timeout(60)
def test_photo_faces(swift_bin, artifact_dir):
    """`swiftrtc photo --faces` on the synthetic front camera: the subject's face entering is
    printed, and its box in the JSON is where the photo shows skin (the room around it is not)."""
    import av
    s = photo(swift_bin, artifact_dir, "faces", "--faces", source="camera:synthetic:front")
    write_json(artifact_dir / "faces.json", s)
    assert "entered" in s["stdout"] and "face in view" in s["stdout"], s["stdout"]
    faces = s["faces"]
    assert len(faces) == 1, faces
    f = faces[0]
    with av.open(str(artifact_dir / "faces.png")) as container:
        rgb = next(container.decode(video=0)).to_ndarray(format="rgb24").astype(np.float64)
    h, w, _ = rgb.shape
    x0, y0 = int(f["x"] * w), int(f["y"] * h)
    x1, y1 = int((f["x"] + f["width"]) * w), int((f["y"] + f["height"]) * h)
    inner = rgb[y0 + (y1 - y0) // 3:y1 - (y1 - y0) // 3, x0 + (x1 - x0) // 3:x1 - (x1 - x0) // 3]
    r, g, b = (inner[..., c].mean() for c in range(3))
    print(f"face box {f}; mean RGB in its middle third {r:.0f}/{g:.0f}/{b:.0f}")
    # Skin: red over green over blue, clearly so; the synthetic wall around is near grey.
    assert r > g + 20 > b + 40, (r, g, b)


@pytest.mark.timeout(60)
def test_camera_bad_input(swift_bin):
    r = run_cli(swift_bin, "photo", "--source", "camera:synthetic:front", "--out", "/tmp/x.png", "--torch", "on")
    assert r.returncode == 1 and "camera synthetic:front: has no torchLevel control" in r.stderr, (r.stdout, r.stderr)
    r = run_cli(swift_bin, "photo", "--source", "camera:nope", "--out", "/tmp/x.png")
    assert r.returncode == 1 and "camera nope: no such camera" in r.stderr, r.stderr
    r = run_cli(swift_bin, "photo", "--out", "/tmp/x.gif")
    assert r.returncode == 2 and "--out must end in .png, .jpg or .jpeg" in r.stderr, r.stderr
    r = run_cli(swift_bin, "photo", "--out", "/tmp/x.png", "--white-balance", "warm")
    assert r.returncode == 2 and "--white-balance \"warm\" is not valid" in r.stderr, r.stderr
    # A missing camera is reported before anything connects (nothing listens on port 1).
    r = run_cli(swift_bin, "publish", "webrtc://127.0.0.1:1/live/x", "--source", "camera:bogus")
    assert r.returncode == 1 and "camera bogus: no such camera (have: " in r.stderr, r.stderr


def y4m_frames(path: Path):
    """(width, height, [(Y, U, V) planes as numpy arrays]) of a 4:2:0 Y4M file."""
    data = path.read_bytes()
    nl = data.index(b"\n")
    params = {t[0]: t[1:] for t in data[10:nl].decode().split()}
    w, h = int(params["W"]), int(params["H"])
    cw, ch = (w + 1) // 2, (h + 1) // 2
    size = w * h + 2 * cw * ch
    frames, pos = [], nl + 1
    while pos < len(data):
        start = data.index(b"\n", pos) + 1
        buf = np.frombuffer(data, dtype=np.uint8, count=size, offset=start)
        frames.append((buf[:w * h].reshape(h, w), buf[w * h:w * h + cw * ch].reshape(ch, cw),
                       buf[w * h + cw * ch:].reshape(ch, cw)))
        pos = start + size
    return w, h, frames


def which_camera(v: np.ndarray) -> str | None:
    """The synthetic cameras' identifying block (upper left of the upright picture, upper right when
    mirrored): magenta (high V) on the front camera, cyan (low V) on the back one."""
    ch, cw = v.shape
    rows = slice(int(ch * 0.2), int(ch * 0.45))
    means = [float(v[rows, int(cw * a):int(cw * b)].mean()) for a, b in ((0.06, 0.26), (0.74, 0.94))]
    if max(means) > 160:
        return "front"
    if min(means) < 100:
        return "back"
    return None


@pytest.mark.timeout(120)
def test_switch_camera_and_photo_while_publishing(swift_bin, artifact_dir, logs):
    relay = Relay(swift_bin, artifact_dir / "relay.log")
    logs.append(("relay output", relay.text))
    publisher = player = None
    try:
        url = relay.webrtc_url("live", "camera")
        publisher = SwiftRun(swift_bin, "publish",
                             [url, "--source", "camera:synthetic:front", "--size", "640x480", "--fps", "30",
                              "--duration", "9", "--audio", "none"], artifact_dir, "publish", stdin_pipe=True)
        logs.append(("swiftrtc publish", publisher.text))
        relay.wait_event(r"publisher \S+ connected \(live/camera\)", timeout=20)
        record = artifact_dir / "camera.y4m"
        player = SwiftRun(swift_bin, "play", [url, "--duration", "6", "--record", str(record)], artifact_dir, "play")
        logs.append(("swiftrtc play", player.text))
        relay.wait_event(r"player \S+ connected \(live/camera\)", timeout=20)
        time.sleep(1.5)
        publisher.process.send_line("switch back")
        time.sleep(1)
        shot = artifact_dir / "during-publish.jpg"   # JPEG: a 4K PNG takes seconds in a debug build
        publisher.process.send_line(f"photo {shot}")
        play_code = player.wait(timeout=40)
        pub_code = publisher.wait(timeout=40)
    finally:
        for p in (player, publisher):
            if p is not None:
                p.close()
        relay.close()
    play_stats, pub_stats = player.stats(), publisher.stats()
    w, h, frames = y4m_frames(record)
    seen = [which_camera(f[2]) for f in frames]
    write_json(artifact_dir / "summary.json", {"play": summary(play_stats), "publish": summary(pub_stats),
                                               "cameraPerFrame": seen})
    assert play_code == 0, f"swiftrtc play exited {play_code}:\n{player.text()[-3000:]}"
    assert pub_code == 0, f"swiftrtc publish exited {pub_code}:\n{publisher.text()[-3000:]}"
    assert (w, h) == (640, 480)
    out = publisher.text()
    assert "camera switched synthetic:front → synthetic:back" in out, out[-3000:]
    assert f"photo {shot} 3840x2160" in out, out[-3000:]
    assert shot.read_bytes()[:3] == b"\xff\xd8\xff", "the photo is not a JPEG"
    # The player kept decoding through the switch: ~6 s at 30 fps, front first, back at the end.
    assert len(frames) >= 120, f"decoded only {len(frames)} frames"
    first_back = seen.index("back") if "back" in seen else None
    assert seen[:10].count("front") >= 8, seen[:20]
    assert first_back is not None and all(s == "back" for s in seen[first_back + 5:]), seen
    assert seen[first_back:].count("front") == 0, seen
    # A photo in the middle did not cost the stream frames: the publisher encoded ~30 fps throughout.
    encoded = pub_stats.get("framesEncoded", 0)
    assert encoded >= 0.85 * 30 * 9, f"publisher encoded {encoded} frames in 9 s"


@pytest.mark.timeout(90)
def test_camera_demo(swift_bin, artifact_dir, logs):
    """`swiftrtc demo --camera`: the synthetic camera through the relay with the test pattern's band
    burned in (verified in order by the player), touring its controls with a PNG after each step."""
    out = artifact_dir / "demo"
    run = SwiftRun(swift_bin, "demo", ["--camera", "--duration", "10", "--out", str(out)], artifact_dir, "demo",
                   stats=False)
    logs.append(("swiftrtc demo --camera", run.text))
    try:
        code = run.wait(timeout=60)
    finally:
        run.close()
    assert code == 0, f"swiftrtc demo --camera exited {code}:\n{run.text()[-3000:]}"
    stats = json.loads((out / "stats.json").read_text())
    assert stats.get("patternVerified") is True and stats.get("frameWidth") == 1280, summary(stats)
    shots = sorted(out.glob("camera-*.png"))
    names = [p.name for p in shots]
    assert len(shots) == 8, names
    for p in shots:
        assert (png_info(p)["width"], png_info(p)["height"]) == (1280, 720), p
    assert "switched to the back camera" in run.text(), run.text()[-2000:]
    assert "face detection on" in run.text() and " entered" in run.text(), run.text()[-2000:]
