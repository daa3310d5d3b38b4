"""Interop tests: the relay's DVR (`swiftrtc serve --record DIR`), issue 23 part 3.

Headless Chromium publishes its fake camera and microphone over WHIP (H.264 in one test, VP8 in
the other) to `swiftrtc serve --record DIR --hook URL` for 20 s, then stops (WHIP DELETE). Then:
- `ffprobe` (Debian's ffmpeg) reads the file: duration 20 s ± 2 %, video frames ≥ 98 % of the
  frames Chromium's stats say it sent, audio and video start within 40 ms of each other;
- `ffmpeg -v error -i FILE -enc_time_base -1 -f null -` prints nothing (no decode errors; see media_files);
- the hook (a tiny HTTP server here) got SRS's `on_dvr` naming that file;
- a second Chromium page plays the file in a `<video>` element, served over HTTP from here,
  to the end (`ended` fires) at the size Chromium sent.
Run inside the loopback-only namespace: interop/run.sh interop/test_dvr.py
"""

from __future__ import annotations

import http.server
import json
import re
import shutil
import threading
import time
from pathlib import Path

import pytest

from interop.conftest import require, write_json
from interop.media_files import decode_errors, ffprobe
from interop.peers import StaticServer
from interop.relay_helpers import Relay, close_page, open_player_page, page_log, poll
from interop.test_relay import PUBLISH_CODEC_FIRST_JS

RECORD_SECONDS = 20.0
API_TOKEN = "dvr-api"


# Chromium's video outbound-rtp now: framesSent/framesEncoded, size, codec.
OUTBOUND_JS = r"""(async () => { const r = await pc.getStats(); let o = null;
  r.forEach((s) => { if (s.type === 'outbound-rtp' && s.kind === 'video') {
    const c = s.codecId && r.get(s.codecId);
    o = {framesSent: s.framesSent || 0, framesEncoded: s.framesEncoded || 0, width: s.frameWidth,
         height: s.frameHeight, codec: c ? c.mimeType : null, at: Date.now()}; } });
  return o; })()"""

# Plays `src` in a <video> to its end; resolves with what the element said.
PLAY_FILE_JS = """((src, timeoutMs) => new Promise((resolve) => {
  const v = document.createElement('video');
  v.muted = true; v.playsInline = true; v.preload = 'auto';
  document.body.appendChild(v);
  const out = {events: [], width: 0, height: 0, currentTime: 0, duration: null, error: null};
  const done = (why) => { out.events.push(why); out.width = v.videoWidth; out.height = v.videoHeight;
    out.currentTime = v.currentTime; out.duration = v.duration; out.decoded = v.getVideoPlaybackQuality ?
    v.getVideoPlaybackQuality().totalVideoFrames : null; resolve(out); };
  v.addEventListener('loadedmetadata', () => { out.events.push('loadedmetadata'); out.width = v.videoWidth; out.height = v.videoHeight; });
  v.addEventListener('playing', () => out.events.push('playing'));
  v.addEventListener('ended', () => done('ended'));
  v.addEventListener('error', () => { out.error = v.error ? v.error.code + ' ' + v.error.message : 'error'; done('error'); });
  setTimeout(() => done('timeout'), timeoutMs);
  v.src = src;
  v.play().catch((e) => { out.error = String(e); });
}))(%s, %d)"""


class HookServer:
    """Answers every hook POST with SRS's {"code": 0} and keeps the JSON bodies."""

    def __init__(self) -> None:
        self.bodies: list[dict] = []
        bodies = self.bodies

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                data = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    bodies.append(json.loads(data))
                except ValueError:
                    bodies.append({"unparsed": data.decode("latin-1")})
                reply = b'{"code":0}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, fmt, *args):
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/hook"
        threading.Thread(target=self.httpd.serve_forever, name="dvr-hook", daemon=True).start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def hook():
    h = HookServer()
    yield h
    h.close()


@pytest.fixture
def record_dir(artifact_dir):
    d = artifact_dir / "dvr"
    d.mkdir()
    return d


@pytest.fixture
def relay(swift_bin, artifact_dir, logs, hook, record_dir):
    r = Relay(swift_bin, artifact_dir / "relay.log",
              extra_args=("--record", str(record_dir), "--hook", hook.url, "--api-token", API_TOKEN))
    logs.append(("relay output", r.text))
    yield r
    r.close()


def stream_row(relay: Relay, app: str, name: str) -> dict | None:
    reply = relay.request("GET", "/api/v1/streams/", headers={"Authorization": f"Bearer {API_TOKEN}"}, timeout=10)
    assert reply.status == 200, reply
    return next((s for s in reply.json().get("streams", []) if s.get("app") == app and s.get("name") == name), None)


@pytest.mark.timeout(180)
@pytest.mark.parametrize("codec, ext", [("H264", "mp4"), ("VP8", "webm")], ids=["H264-mp4", "VP8-webm"])
def test_chromium_publish_is_recorded(codec, ext, relay, hook, record_dir, browser, artifact_dir, logs):
    require(shutil.which("ffprobe") is not None and shutil.which("ffmpeg") is not None,
            "ffprobe/ffmpeg not installed (apt-get install ffmpeg)")
    app, name = "live", f"dvr-{codec.lower()}"
    page = open_player_page(browser, relay, app, name)
    logs.append(("player page #log", lambda: page_log(page)))
    logs.append(("chromium console", lambda: "\n".join(page.console)))
    samples: list[dict] = []
    try:
        page.evaluate(PUBLISH_CODEC_FIRST_JS % (json.dumps(codec), "null"), timeout=20)
        relay.wait_event(rf"publisher \S+ connected \({app}/{name}\)", timeout=20)
        first, _ = poll(lambda: page.evaluate(OUTBOUND_JS, timeout=10), lambda o: o and o["framesSent"] > 0,
                        timeout=10, interval=0.02)
        samples.append(first)
        row, _ = poll(lambda: stream_row(relay, app, name), lambda r: r and (r.get("recording") or {}).get("file"), timeout=10)
        while time.time() * 1000 - first["at"] < RECORD_SECONDS * 1000 - 60:
            time.sleep(min(1.0, max(0.01, (RECORD_SECONDS * 1000 - 60 - (time.time() * 1000 - first["at"])) / 1000)))
            samples.append(page.evaluate(OUTBOUND_JS, timeout=10))
        # Stop: stats first, then the page's Stop (WHIP DELETE, pc.close()) right after.
        last = page.evaluate(OUTBOUND_JS + ".then((o) => { document.getElementById('stop').click(); return o; })",
                             timeout=10)
        samples.append(last)
        closed = relay.wait_event(rf"recorded {app}/{name} to (\S+):", timeout=30)
    finally:
        (artifact_dir / "page-log.txt").write_text(page_log(page))
        close_page(browser, page)

    path = Path(closed.group(1))
    probe = ffprobe(path)
    video, audio = probe.get("video", {}), probe.get("audio", {})
    duration = probe["duration"]
    frames = video.get("packets", 0)
    sent = last["framesSent"]
    av_start = abs(video.get("start", float("nan")) - audio.get("start", float("nan")))
    errors = decode_errors(path)
    poll(lambda: [b for b in hook.bodies if b.get("action") == "on_dvr"], lambda b: b, timeout=10)
    on_dvr = [b for b in hook.bodies if b.get("action") == "on_dvr"]

    # A second page plays the file from an HTTP server of ours, to its end.
    files = StaticServer(directory=str(record_dir))
    try:
        player = browser.new_page(files.url)
        try:
            src = files.url + str(path.relative_to(record_dir))
            played = player.evaluate(PLAY_FILE_JS % (json.dumps(src), int((RECORD_SECONDS + 25) * 1000)),
                                     timeout=RECORD_SECONDS + 40)
        finally:
            close_page(browser, player)
    finally:
        files.close()

    summary = {"file": str(path), "ffprobe": probe, "durationS": duration, "framesInFile": frames,
               "chromiumFramesSent": sent, "chromiumFramesEncoded": last["framesEncoded"],
               "publishedMs": last["at"] - first["at"], "avStartOffsetS": av_start, "decodeErrors": errors,
               "hook": hook.bodies, "apiRow": row, "browserPlayback": played, "outbound": samples}
    write_json(artifact_dir / "summary.json", summary)
    print(f"{codec}: {path.name} {duration:.3f} s (published {(last['at'] - first['at']) / 1000:.3f} s), "
          f"{frames} frames of {sent} sent ({frames / max(sent, 1):.1%}), {video.get('width')}x{video.get('height')}, "
          f"A/V start offset {av_start * 1000:.1f} ms, on_dvr {len(on_dvr)}, browser playback {played}")

    assert path.parent == record_dir / app / name and path.suffix == f".{ext}", path
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d\.\d{3}Z", path.stem), path.name
    assert row["recording"]["active"] is True and row["recording"]["file"] == str(path), row
    assert (last.get("codec") or "").lower() == f"video/{codec.lower()}", last
    assert video.get("codec") == codec.lower(), probe
    assert audio.get("codec") == "opus", probe
    assert abs(duration - RECORD_SECONDS) <= 0.02 * RECORD_SECONDS, f"duration {duration} s"
    assert frames >= 0.98 * sent, f"{frames} frames in the file, Chromium sent {sent}"
    assert av_start <= 0.040, f"audio and video start {av_start * 1000:.1f} ms apart"
    assert errors == "", f"ffmpeg decode errors:\n{errors[:3000]}"
    assert len(on_dvr) == 1, hook.bodies
    body = on_dvr[0]
    assert body["file"] == str(path) and body["app"] == app and body["stream"] == name, body
    assert body["vhost"] == "__defaultVhost__" and body["client_id"] and body["ip"] == "127.0.0.1" and body["cwd"], body
    assert played["events"][-1] == "ended" and played["error"] is None, played
    assert (played["width"], played["height"]) == (video.get("width"), video.get("height")), (played, video)
    assert (played["width"], played["height"]) in {(s["width"], s["height"]) for s in samples if s and s.get("width")}, played
