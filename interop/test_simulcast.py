"""Simulcast through the relay (issue 22): Chromium publishes three layers over WHIP
(`sendEncodings` l/m/h, RFC 8853 rids); each viewer gets one layer, the one its URL asks for
(`&layer=low`), the largest by default, decoded at that layer's size: two `swiftrtc play`, and
Chromium over WHEP from the relay's /players/?layer=mid page."""
from __future__ import annotations

import json

import pytest

from interop.conftest import write_json
from interop.network_helpers import status_series
from interop.relay_helpers import PC_STATS_JS, SwiftRun, close_page, open_player_page, page_log, poll
from interop.test_relay import relay, runs  # noqa: F401 (fixtures)

PUBLISH_SIMULCAST_JS = """(async (codec) => {
  pc = new RTCPeerConnection();
  const media = await navigator.mediaDevices.getUserMedia({video: {width: 1280, height: 720, frameRate: 30}});
  video.srcObject = media;
  const t = pc.addTransceiver(media.getVideoTracks()[0], {direction: 'sendonly', sendEncodings: [
    {rid: 'l', scaleResolutionDownBy: 4}, {rid: 'm', scaleResolutionDownBy: 2}, {rid: 'h'}]});
  const all = RTCRtpReceiver.getCapabilities('video').codecs;
  const isCodec = (c) => c.mimeType.toLowerCase() === 'video/' + codec.toLowerCase();
  t.setCodecPreferences([...all.filter(isCodec), ...all.filter((c) => !isCodec(c))]);
  await negotiate('whip');
  log('publishing simulcast');
  return {offer: pc.localDescription.sdp, answer: pc.remoteDescription.sdp};
})(%s)"""

# Chromium's outbound video per rid: frames sent and their size.
LAYERS_SENT_JS = r"""(async () => { const r = await pc.getStats(); const o = {};
  r.forEach((s) => { if (s.type === 'outbound-rtp' && s.kind === 'video')
    o[s.rid || '-'] = {framesSent: s.framesSent || 0, width: s.frameWidth || 0, height: s.frameHeight || 0,
                       fps: s.framesPerSecond || 0}; });
  return o; })()"""


def stream_with_player_layers(relay, app: str, name: str, players: int) -> dict:
    """The relay's stream once `players` of its players show a layer (API). A player has one once
    that layer's first keyframe reached it: the last to join may still be waiting when another
    viewer has decoded 30 frames."""
    stream, _ = poll(lambda: relay.stream(app, name) or {},
                     lambda s: sum(1 for p in s.get("players", []) if p.get("layer")) >= players, timeout=15)
    return stream


@pytest.mark.timeout(90)
@pytest.mark.parametrize("codec", ["VP8", "H264"])
def test_chromium_simulcast_each_player_gets_its_layer(codec, relay, browser, swift_bin, runs, artifact_dir, logs):  # noqa: F811
    app, name = "live", f"simulcast-{codec.lower()}"
    page = open_player_page(browser, relay, app, name)
    logs.append(("player page #log", lambda: page_log(page)))
    try:
        sdp = page.evaluate(PUBLISH_SIMULCAST_JS % json.dumps(codec), timeout=20)
        (artifact_dir / "publish-offer.sdp").write_text(sdp["offer"])
        (artifact_dir / "publish-answer.sdp").write_text(sdp["answer"])
        answer = sdp["answer"]
        assert "a=simulcast:recv l;m;h" in answer and all(f"a=rid:{r} recv" in answer for r in "lmh"), \
            f"the relay's answer does not take the simulcast:\n{answer}"
        assert "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id" in answer
        relay.wait_event(rf"publisher \S+ connected \({app}/{name}\)", timeout=20)
        # Chromium turns its layers on as its estimate (from the relay's feedback) allows.
        all_on = lambda o: bool(o) and all(o.get(r, {}).get("framesSent", 0) > 10 for r in "lmh")  # noqa: E731
        layers, _ = poll(lambda: page.evaluate(LAYERS_SENT_JS, timeout=10), all_on, timeout=30)
        assert all_on(layers), f"Chromium did not send all three layers: {layers}"

        low = runs(SwiftRun(swift_bin, "play", [relay.whep_url(app, name) + "&layer=low", "--duration", "10"], artifact_dir, "play-low"))
        high = runs(SwiftRun(swift_bin, "play", [relay.whep_url(app, name), "--duration", "10"], artifact_dir, "play-high"))
        viewer = open_player_page(browser, relay, app, name, query="layer=mid")
        logs.append(("viewer page #log", lambda: page_log(viewer)))
        viewer.evaluate("document.getElementById('play').click(); true")
        watched, _ = poll(lambda: viewer.evaluate(PC_STATS_JS, timeout=10),
                          lambda st: bool(st and st["inbound"] and st["inbound"]["framesDecoded"] > 30), timeout=20)
        stream = stream_with_player_layers(relay, app, name, 3)
        codes = {run.name: run.wait(timeout=20) for run in (low, high)}
        sent = page.evaluate(LAYERS_SENT_JS, timeout=10)
        for run in (low, high):
            assert codes[run.name] == 0, (f"{run.name} failed (Chromium's layers {sent}, the relay's stream {stream}):\n"
                                          + run.text()[-1500:])
        close_page(browser, viewer)
    finally:
        (artifact_dir / "page-log.txt").write_text(page_log(page))
        close_page(browser, page)

    rows = {run.name: [r for r in status_series(run.text()) if r["fps"] > 0] for run in (low, high)}
    sizes = {n: sorted({(r["width"], r["height"]) for r in rs}) for n, rs in rows.items()}
    decoded = {run.name: next((v.get("framesDecoded", 0) for v in run.stats()["stats"].values()
                               if v.get("type") == "inbound-rtp" and v.get("kind") == "video"), 0) for run in (low, high)}
    inbound = (watched or {}).get("inbound") or {}
    write_json(artifact_dir / "summary.json", {"chromiumLayers": sent, "players": sizes, "framesDecoded": decoded,
                                               "chromiumViewer": watched, "apiStream": stream})
    print(f"simulcast {codec}: Chromium sends {sent}; play-low {sizes['play-low']}, play-high {sizes['play-high']}, "
          f"Chromium layer=mid {inbound.get('frameWidth')}x{inbound.get('frameHeight')} ({inbound.get('framesDecoded')} frames); "
          f"API layers {stream.get('video', {}).get('layers')}")
    low_size = (sent["l"]["width"], sent["l"]["height"])
    high_size = (sent["h"]["width"], sent["h"]["height"])
    assert low_size[0] * 4 <= high_size[0] + 8, f"Chromium's layers are not 1/4 and 1: {sent}"
    # Every frame each player decoded was of its layer (Chromium may have scaled a layer while
    # the estimate grew, so a size Chromium's layer had at some point, width within 1/8).
    assert sizes["play-low"] and all(w * 2 < high_size[0] for w, _ in sizes["play-low"]), \
        f"play with layer=low decoded {sizes['play-low']}, Chromium's low layer is {low_size}"
    assert sizes["play-high"] and max(w for w, _ in sizes["play-high"]) == high_size[0], \
        f"play (default: the largest layer) decoded {sizes['play-high']}, Chromium's high layer is {high_size}"
    assert all(n > 100 for n in decoded.values()), f"frames decoded in 10 s: {decoded}"
    # Every frame of the layer: the players' frame rate (median of their status lines) is
    # Chromium's for that layer (its fake camera and three encoders make ~20 fps here).
    for run_name, rid in (("play-low", "l"), ("play-high", "h")):
        fps = sorted(r["fps"] for r in rows[run_name])[len(rows[run_name]) // 2]
        assert fps >= sent[rid]["fps"] - 2, f"{run_name} played {fps} fps, Chromium sends layer {rid} at {sent[rid]['fps']}"
    layers_api = stream.get("video", {}).get("layers") or []
    assert [layer["rid"] for layer in layers_api] == ["l", "m", "h"], f"/api/v1/streams/ layers: {layers_api}"
    by_player = sorted(p.get("layer") for p in stream.get("players", []))
    assert by_player == ["h", "l", "m"], f"/api/v1/streams/ players' layers: {stream.get('players')}"
    # Chromium over WHEP decodes the middle layer through the relay's rewriting.
    assert inbound.get("framesDecoded", 0) > 30 and inbound.get("frameWidth") == sent["m"]["width"], \
        f"Chromium on /players/?layer=mid: {inbound}, Chromium's mid layer is {sent['m']}"


@pytest.mark.timeout(120)
@pytest.mark.parametrize("codec", ["VP8", "H264"])
def test_swift_simulcast_each_player_gets_its_layer(codec, relay, browser, swift_bin, runs, artifact_dir, logs):  # noqa: F811
    """`swiftrtc publish --simulcast` (1280x720: layers h, m/2, l/4, one encoder each) over WHIP:
    the relay takes the three rids, each player decodes its layer's size, and the publisher's
    stats show each layer encoded."""
    app, name = "live", f"swift-simulcast-{codec.lower()}"
    publisher = runs(SwiftRun(swift_bin, "publish", [relay.whip_url(app, name), "--codec", codec.lower(), "--simulcast",
                                                     "--duration", "30"], artifact_dir, "publish"))
    relay.wait_event(rf"publisher \S+ connected \({app}/{name}\)", timeout=20)
    # The layers come on as the publisher's estimate (from the relay's feedback) carries them.
    sized = lambda s: len([layer for layer in ((s or {}).get("video") or {}).get("layers") or []  # noqa: E731
                           if layer.get("width")]) == 3
    stream, _ = poll(lambda: relay.stream(app, name), sized, timeout=30)
    assert sized(stream), f"the relay did not see three sized layers: {stream}\n{publisher.text()[-2000:]}"

    low = runs(SwiftRun(swift_bin, "play", [relay.whep_url(app, name) + "&layer=low", "--duration", "8"], artifact_dir, "play-low"))
    high = runs(SwiftRun(swift_bin, "play", [relay.whep_url(app, name), "--duration", "8"], artifact_dir, "play-high"))
    viewer = open_player_page(browser, relay, app, name, query="layer=mid")
    logs.append(("viewer page #log", lambda: page_log(viewer)))
    try:
        viewer.evaluate("document.getElementById('play').click(); true")
        watched, _ = poll(lambda: viewer.evaluate(PC_STATS_JS, timeout=10),
                          lambda st: bool(st and st["inbound"] and st["inbound"]["framesDecoded"] > 30), timeout=20)
        stream = stream_with_player_layers(relay, app, name, 3)
        codes = {run.name: run.wait(timeout=20) for run in (low, high)}
    finally:
        close_page(browser, viewer)
    assert publisher.wait(timeout=40) == 0, f"publish failed:\n{publisher.text()[-2000:]}"
    for run in (low, high):
        assert codes[run.name] == 0, f"{run.name} failed (the relay's stream {stream}):\n" + run.text()[-1500:]

    rows = {run.name: [r for r in status_series(run.text()) if r["fps"] > 0] for run in (low, high)}
    sizes = {n: sorted({(r["width"], r["height"]) for r in rs}) for n, rs in rows.items()}
    layers = {layer.get("rid"): layer for layer in publisher.stats().get("layers") or []}
    inbound = (watched or {}).get("inbound") or {}
    write_json(artifact_dir / "summary.json", {"publisherLayers": layers, "players": sizes, "chromiumViewer": watched,
                                               "apiStream": stream})
    print(f"swift simulcast {codec}: publisher layers {layers}; play-low {sizes['play-low']}, play-high {sizes['play-high']}, "
          f"Chromium layer=mid {inbound.get('frameWidth')}x{inbound.get('frameHeight')} ({inbound.get('framesDecoded')} frames)")
    assert "simulcast, 3 layers: l 320x180, m 640x360, h 1280x720" in publisher.text(), publisher.text()[-2000:]
    assert sorted(layers) == ["h", "l", "m"], f"the publisher's outbound-rtp per rid: {layers}"
    assert [(layers[r]["frameWidth"], layers[r]["frameHeight"]) for r in "lmh"] == [(320, 180), (640, 360), (1280, 720)], layers
    assert all(layers[r]["framesEncoded"] > 100 for r in "lmh"), f"frames encoded per layer: {layers}"
    # Every frame each player decoded was its layer's size.
    assert sizes["play-low"] == [(320, 180)], f"play with layer=low decoded {sizes['play-low']}"
    assert sizes["play-high"] == [(1280, 720)], f"play (the largest by default) decoded {sizes['play-high']}"
    for run_name in ("play-low", "play-high"):
        fps = sorted(r["fps"] for r in rows[run_name])[len(rows[run_name]) // 2]
        assert fps >= 25, f"{run_name} played a median {fps} fps"
    assert [layer["rid"] for layer in stream.get("video", {}).get("layers") or []] == ["l", "m", "h"], stream
    switches = "\n".join(line for line in relay.text().splitlines() if " layer " in line)   # with the estimate that chose
    assert sorted(str(p.get("layer")) for p in stream.get("players", [])) == ["h", "l", "m"], f"{stream.get('players')}\n{switches}"
    assert inbound.get("framesDecoded", 0) > 30 and (inbound.get("frameWidth"), inbound.get("frameHeight")) == (640, 360), \
        f"Chromium on /players/?layer=mid: {inbound}"
