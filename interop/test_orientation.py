"""Interop: the rotation of Swift's frames reaches Chromium in the video-orientation header
extension (urn:3gpp:video-orientation, CVO), and Chromium shows the picture turned.

`swiftrtc publish --source camera:synthetic:back --orientation portrait` sends 640x480 frames in
sensor orientation marked with rotation 90 (a phone held upright) to a Chromium WHIP receiver
(pages/media.html). Chromium negotiates CVO, decodes 640x480 frames (inbound-rtp
frameWidth/frameHeight are pre-rotation) and its <video> reports 480x640.
    interop/run.sh -k orientation
"""

from __future__ import annotations

import pytest

from interop.conftest import STANDIN, write_json
from interop.media_peers import ChromiumWhipReceiver
from interop.test_media import (browser, chromium_video, media_page, require_ok,  # noqa: F401
                                run_cli, shot, valid)

VIDEO_SIZE_JS = ("(() => { const v = document.getElementById('remote');"
                 " return v ? [v.videoWidth, v.videoHeight] : null; })()")


@pytest.mark.timeout(120)
@pytest.mark.skipif(STANDIN, reason="the aiortc stand-in has no camera")
def test_rotation_reaches_chromium(media_page, artifact_dir, logs):
    receiver = ChromiumWhipReceiver(media_page)
    logs.append(("chromium whip receiver", lambda: "\n".join(receiver.log)))

    def sample():
        s = receiver.stats() or {}
        s["videoElement"] = media_page.evaluate(VIDEO_SIZE_JS, timeout=10)
        return s

    try:
        args = [receiver.url, "--source", "camera:synthetic:back", "--orientation", "portrait", "--codec", "h264",
                "--size", "640x480", "--fps", "30", "--duration", "5"]
        run = run_cli("publish", args, artifact_dir, logs, sample=sample)
    finally:
        receiver.close()
    shot(media_page, artifact_dir, "chromium-received.png")
    write_json(artifact_dir / "chromium-samples.json", run.samples)
    (artifact_dir / "whip-receiver.log").write_text("\n".join(receiver.log))
    pub = require_ok(run, "publish")

    offer = next((line for line in receiver.log if line.startswith("offer:")), "")
    answer = next((line for line in receiver.log if line.startswith("answer:")), "")
    assert "urn:3gpp:video-orientation" in offer, "swiftrtc did not offer the video-orientation extension"
    assert "urn:3gpp:video-orientation" in answer, "Chromium did not accept the video-orientation extension"

    samples = valid(run.samples)
    shown = [tuple(s["videoElement"]) for s in samples if s.get("videoElement") and s["videoElement"][0] > 0]
    decoded = [chromium_video(s) for s in samples if chromium_video(s).get("framesDecoded", 0) > 0]
    print(f"{run.impl}: sent {pub['framesSent']} frames; Chromium decoded "
          f"{decoded[-1].get('framesDecoded') if decoded else 0} of "
          f"{decoded[-1].get('frameWidth') if decoded else '?'}x{decoded[-1].get('frameHeight') if decoded else '?'}, "
          f"<video> sizes seen {sorted(set(shown))}")
    assert decoded, f"Chromium decoded nothing: {run.samples[-3:]}"
    # Sent as captured: Chromium decodes landscape frames and turns them for display.
    assert (decoded[-1]["frameWidth"], decoded[-1]["frameHeight"]) == (640, 480), decoded[-1]
    assert shown, "the <video> element never had a size"
    assert set(shown) == {(480, 640)}, f"<video> should be 480x640 (rotated), saw {sorted(set(shown))}"
