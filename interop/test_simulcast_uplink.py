"""Simulcast over a narrowing uplink (issue 22, part 1): `swiftrtc publish --simulcast` (1280x720,
H.264, layers l/m/h) through the SRS API behind the impairment emulator, its uplink 4 Mbit/s,
then 700 kbit/s for 15 s, then 4 Mbit/s again; `swiftrtc play` on a clean path asks for the
largest layer. The publisher's estimate no longer carries h (l 150k + m 500k + h's 600k
minimum): h is switched off within seconds, what it offers fits the link, and back on when the
estimate carries it again; the player, moved off the silent layer, keeps its frame rate.
Where the player comes back to 1280x720 is reported, not gated: its estimate is its REMB, and
the publisher's queue (which delays what the relay forwards) reads to its receiver as its own
overuse, so it drops to l with the step and climbs back at REMB's 8%/s (transport-cc towards
players would measure the relay→player leg alone). Numbers in network.json."""
from __future__ import annotations

import re

import pytest

from interop.network_helpers import Checks, status_series
from interop.test_network import finish, make_bed, sliding  # noqa: F401 (fixture)

DOWN, UP, TOTAL = 12.0, 27.0, 44.0
_LAYERS = re.compile(r"^\w+\s+([\d.]+)s .*?  layers (.+)$", re.M)
_LAYER = re.compile(r"(\w+) (\d+)x(\d+) (\d+)k")


def layer_rows(text: str, started_at: float) -> list[dict]:
    """Each status line's layers: {t, rid: target kbit/s} (0: switched off)."""
    rows = []
    for m in _LAYERS.finditer(text.replace("\r", "\n")):
        row = {"t": round(started_at + float(m.group(1)), 2)}
        for rid, _w, _h, k in _LAYER.findall(m.group(2)):
            row[rid] = int(k)
        rows.append(row)
    return rows


@pytest.mark.timeout(120)
def test_simulcast_publisher_switches_its_top_layer_off_and_on_with_the_uplink(make_bed, artifact_dir):  # noqa: F811
    bed = make_bed({"pub": ("rate=4mbit,queue=200ms", None)}, seed=23)
    pub, t_conn, pub_flow = bed.publish("sc-up", duration=TOTAL, extra=("--simulcast",))
    player, _ = bed.play("sc-up", duration=TOTAL - 1)
    bed.step_uplink(pub_flow, t_conn, ((DOWN, "rate=700kbit"), (UP, "rate=4mbit")))
    play_code = player.wait(timeout=TOTAL + 20)
    pub_code = pub.wait(timeout=20)
    bed.close()
    T1, T2 = t_conn + DOWN, t_conn + UP
    layers = layer_rows(pub.text(), pub.t_start)
    play_rows = status_series(player.text(), player.t_start)

    def first(rows, t0, pred):
        return next((r["t"] - t0 for r in rows if r["t"] >= t0 and pred(r)), None)

    h_off = first(layers, T1, lambda r: r.get("h") == 0)
    h_on = first(layers, T2, lambda r: r.get("h", 0) > 0)
    player_down = first(play_rows, T1, lambda r: 0 < r["width"] < 1280)
    player_up = first(play_rows, T2, lambda r: r["width"] == 1280 and r["fps"] > 0)
    before = [r for r in play_rows if t_conn + 8 <= r["t"] < T1]
    # A status line counts the second before it: only lines whose whole second is 3 s after the
    # step (CI: the line ending at 3.4 s held a freeze from 2.5 s, while drops still went on).
    steady = [r for r in play_rows if T1 + 3 <= r["t"] - 1]
    step = bed.sampler.window(pub_flow, "up", T1 + 3, T2)
    windows = sliding(bed, pub_flow, "up", T1 + 3, T2)

    c = Checks()
    c.check("publish exits 0", pub_code == 0, pub_code, "0")
    c.check("play exits 0", play_code == 0, play_code, "0")
    c.check("the player is on 1280x720 before the step", bool(before) and all(r["width"] == 1280 for r in before),
            sorted({r["width"] for r in before}), "1280")
    c.check("h switched off after the uplink narrows", h_off is not None and h_off <= 5, h_off, "<= 5 s")
    c.check("the player moves off the silent layer", player_down is not None and player_down <= 5, player_down, "<= 5 s")
    c.check("the player keeps its frame rate", len(steady) >= 25 and all(r["fps"] >= 25 for r in steady),
            [r["fps"] for r in steady], ">= 25 fps every second from 3 s after the step to the end")
    c.check("the publisher's offered rate after the step fits the link", (step["in_bps"] or 0) <= 700_000,
            f"{(step['in_bps'] or 0) / 1000:.0f} kbps, queue drops {step['dropped_queue']}/{step['packets_in']}", "<= 700 kbps")
    c.check("drops at the bottleneck from 3 s after the step", step["queue_drop_fraction"] <= 0.02,
            step["queue_drop_fraction"], "<= 2%")
    c.check("h back on after the uplink widens", h_on is not None and h_on <= 10, h_on, "<= 10 s")

    finish(artifact_dir, c, {
        "scenario": "swiftrtc publish --simulcast 1280x720 H.264 (l/m/h) over the SRS API; its uplink 4 Mbit/s → "
                    "700 kbit/s at 12 s → 4 Mbit/s at 27 s (200 ms FIFO); swiftrtc play on the largest layer",
        "hOffSeconds": h_off, "hOnSeconds": h_on, "playerDownSeconds": player_down, "playerUpSeconds": player_up,
        "step": step, "worstStepWindowKbps": max(((w["in_bps"] or 0) / 1000 for w in windows), default=None),
        "layers": layers, "playerStatus": play_rows, "events": bed.sampler.events,
        "series": {"publisherUp": bed.sampler.series(pub_flow, "up")},
    }, f"simulcast uplink step: h off {h_off} s after the narrowing, player down {player_down} s; h on {h_on} s "
       f"after the widening, player up {player_up} s; during the step {(step['in_bps'] or 0) / 1000:.0f} kbps offered, "
       f"queue drops {step['dropped_queue']}/{step['packets_in']}")
