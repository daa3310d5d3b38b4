"""Issue 22's lossy viewer: `swiftrtc publish --simulcast` (H.264 l/m/h) to the relay behind the
impairment emulator, `swiftrtc play` A on a clean path (the high layer) and B on a lossy one
(5% loss + 25±10 ms, both directions; the low layer, `?layer=low`). B's losses are answered with
resends (RTX); what B asks of the publisher (PLIs, when a resend did not come in time) asks for
B's layer only, through that layer's keyframe throttle (one request per 300 ms), so A's layer
gets no keyframes on B's account and A plays on unaffected. The relay's per-layer request
counts (API `keyframe_requests`) are read once both players are on their layers and at the
end. Numbers in network.json."""
from __future__ import annotations

import signal
import statistics
import time

from interop.network_helpers import Checks, status_series
from interop.test_network import LOSSY, finish, make_bed, player_summary  # noqa: F401
from interop.test_simulcast_weak import NAME, SwiftPublisher, rows_between
from interop.relay_helpers import poll

SECONDS = 25.0     # both viewers playing


def layer_stats(stats: dict) -> dict:
    """The publisher's video outbound-rtp per rid: keyframes encoded, PLIs received."""
    report = stats.get("stats") or {}
    items = report if isinstance(report, list) else list(report.values())
    return {s["rid"]: {"keyFramesEncoded": s.get("keyFramesEncoded") or 0, "pliCount": s.get("pliCount") or 0,
                       "nackCount": s.get("nackCount") or 0, "frameWidth": s.get("frameWidth")}
            for s in items if isinstance(s, dict) and s.get("type") == "outbound-rtp" and s.get("kind") == "video" and s.get("rid")}


def requests(bed) -> dict:
    """The relay's keyframe requests to the publisher so far, per rid."""
    layers = ((bed.relay.stream("live", NAME) or {}).get("video") or {}).get("layers") or []
    return {x["rid"]: x.get("keyframe_requests", 0) for x in layers}


def test_a_lossy_viewer_does_not_cost_the_others_keyframes(make_bed, artifact_dir):  # noqa: F811
    bed = make_bed({"b": (LOSSY, LOSSY)}, seed=23)
    pub = SwiftPublisher(bed, SECONDS + 60)
    layers, _ = poll(pub.sent, SwiftPublisher.all_on, timeout=30)
    assert SwiftPublisher.all_on(layers), f"the publisher did not send all three layers: {layers}"
    runs = {}
    for role, query in (("a", ""), ("b", "?layer=low")):
        bed.roles.expect(role)
        runs[role] = bed.swift("play", [bed.relay.webrtc_url("live", NAME) + query, "--duration", str(SECONDS)], f"play-{role}")
        bed.relay.wait_event(rf"player \S+ connected \(live/{NAME}\)", timeout=20)
        bed.roles.wait_flow(role)
    t_both = bed.sampler.mark("both viewers connected")
    api, settled = [], None
    while bed.net.now() < t_both + SECONDS:
        stream = bed.relay.stream("live", NAME) or {}
        api.append({"t": round(bed.net.now() - t_both, 1), "players": stream.get("players"), "requests": requests(bed)})
        if settled is None and bed.net.now() >= t_both + 3:
            settled = api[-1]["requests"]
        time.sleep(1.0)
    final = requests(bed)
    codes = {role: run.wait(timeout=30) for role, run in runs.items()}
    pub.run.kill(signal.SIGTERM)   # it writes its stats and exits
    codes["publish"] = pub.run.wait(timeout=20)
    published = layer_stats(pub.run.stats())
    bed.close()

    a, b = (player_summary(runs[r].stats()) for r in ("a", "b"))
    a_rows = rows_between(runs["a"], t_both + 3, t_both + SECONDS)
    b_rows = rows_between(runs["b"], t_both + 3, t_both + SECONDS)
    freezes_at = lambda rows: rows[-1].get("freezes", 0) - rows[0].get("freezes", 0) if rows else None  # noqa: E731
    b_plis = b["inbound"].get("pliCount") or 0
    a_plis = a["inbound"].get("pliCount") or 0
    since = {rid: final.get(rid, 0) - (settled or {}).get(rid, 0) for rid in final}
    c = Checks()
    c.check("the processes exit 0", all(v == 0 for v in codes.values()), codes, "0")
    c.check("A plays 1280x720 every second from 3 s on", bool(a_rows) and all(x["width"] == 1280 for x in a_rows),
            sorted({x["width"] for x in a_rows}), "1280")
    a_fps = statistics.median(x["fps"] for x in a_rows) if a_rows else 0
    c.check("A's frame rate (median of 1 s lines from 3 s on)", a_fps >= SwiftPublisher.FPS - 2, a_fps, f">= {SwiftPublisher.FPS - 2}")
    c.check("A does not freeze from 3 s on (W3C freezeCount)", freezes_at(a_rows) == 0, freezes_at(a_rows), "0")
    c.check("B plays the low layer from 3 s on", bool(b_rows) and all(x["width"] == 320 for x in b_rows),
            sorted({x["width"] for x in b_rows}), "320")
    c.check("B gets its frames (test pattern: missing)", (b.get("patternFramesMissing") or 0) <= 0.01 * (b.get("patternFrames") or 1),
            b.get("patternFramesMissing"), f"<= 1% of {b.get('patternFrames')}")
    # From 3 s on (both players on their layers) a layer is asked for a keyframe only by its
    # own players: A's high layer by A alone, whatever B asks for.
    c.check("the API counts requests per layer", settled is not None and set(final) == {"l", "m", "h"}, final, "l, m, h")
    c.check("keyframe requests on A's layer (h) from 3 s on", since.get("h", 0) <= a_plis, since.get("h"), f"<= A's PLIs {a_plis}")
    c.check("keyframe requests on B's layer (l) from 3 s on", since.get("l", 0) <= b_plis, since.get("l"), f"<= B's PLIs {b_plis}")
    c.check("keyframe requests on m (no player) from 3 s on", since.get("m", 0) == 0, since.get("m"), "0")
    finish(artifact_dir, c, {
        "scenario": f"swiftrtc simulcast l/m/h through the relay; play A clean (h), play B on l with {LOSSY} both ways, {SECONDS} s",
        "publisherLayers": published, "requestsAt3s": settled, "requestsAtEnd": final,
        "a": a, "b": b, "api": api, "events": bed.sampler.events,
        "aStatus": status_series(runs["a"].text(), runs["a"].t_start),
        "bStatus": status_series(runs["b"].text(), runs["b"].t_start),
    }, f"lossy viewer: A {a_fps} fps, freezes from 3 s on {freezes_at(a_rows)}; B {b['inbound'].get('freezeCount')} freezes / "
       f"{b['inbound'].get('totalFreezesDuration')} s, PLIs A {a_plis} B {b_plis}; relay's requests from 3 s on {since}; "
       "publisher per layer " + ", ".join(f"{rid} {s['keyFramesEncoded']} keyframes / {s['pliCount']} PLIs"
                                          for rid, s in sorted(published.items())))
