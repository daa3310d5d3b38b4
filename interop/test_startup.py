"""Start-up into a narrow uplink (issue 20 part 1): Swift and Chromium publishing 1280x720@30 through
the same bottleneck (HTB-like rate, FIFO of 25 packets, on the publisher's uplink only) in one run,
the relay as the server, `swiftrtc play` as the viewer from the first second.

Per publisher, measured outside it: the viewer's frame rate over the run and over its first 5 s
(play's once-a-second status lines), and the share of the publisher's packets the bottleneck
dropped (the emulator's counters). Chromium is the anchor: Swift's viewer fps ≥ Chromium's
(−1 fps for the one-second status granularity), Swift drops ≤ 2 % of its packets, its first 5 s
are at ≥ 20 fps. Numbers go to artifacts/interop/<test>/startup.json.
Run: CI=true interop/run.sh -k startup
"""

from __future__ import annotations

import time

import pytest

from interop.conftest import write_json
from interop.network_helpers import MBIT, NET_STATS_JS, Checks, status_series
from interop.relay_helpers import close_page
from interop.test_network import FAKE_CAMERA_FLAGS, browser, make_bed, player_summary, publisher_summary  # noqa: F401

SECONDS = 15
FIFO = "25p"


def viewer_numbers(player, t_conn: float) -> dict:
    """fps over the whole run and the first 5 s after the publisher connected, from play's status lines."""
    rows = [r for r in status_series(player.text(), player.t_start) if r.get("t", 0) >= t_conn]
    first = [r["fps"] for r in rows if r["t"] < t_conn + 5.5]
    full = [r["fps"] for r in rows]
    mean = lambda xs: round(sum(xs) / len(xs), 1) if xs else None  # noqa: E731
    return {"fpsMean": mean(full), "fpsFirst5s": mean(first), "seconds": len(full),
            "widths": sorted({r["width"] for r in rows}), "rows": rows}


def uplink_numbers(bed, flow: int, t0: float, t1: float) -> dict:
    w = bed.sampler.window(flow, "up", t0, t1)
    first = bed.sampler.window(flow, "up", t0, t0 + 3)
    return {"packetsIn": w["packets_in"], "droppedQueue": w["dropped_queue"],
            "dropFraction": round(w["queue_drop_fraction"], 4), "offeredKbps": round((w["in_bps"] or 0) / 1000),
            "forwardedKbps": round((w["fwd_bps"] or 0) / 1000), "droppedQueueFirst3s": first["dropped_queue"],
            "queueDelayMs": w["queue_delay_ms"]}


def run_swift(make_bed, spec: str, seed: int) -> dict:
    bed = make_bed({"pub": (spec, None)}, seed=seed)
    pub, t_conn, pub_flow = bed.publish("swift", duration=SECONDS + 2)
    player, _ = bed.play("swift", duration=SECONDS)
    player.wait(timeout=SECONDS + 20)
    pub.wait(timeout=20)
    bed.close()
    # Where a rare start-up overshoot's drops fall, for the failure message (CI keeps no artifacts).
    drops = [bed.sampler.window(pub_flow, "up", t_conn + i, t_conn + i + 1)["dropped_queue"] for i in range(5)]
    first = [line.strip() for line in pub.text().splitlines() if line.startswith("connected")][:5]
    return {"viewer": viewer_numbers(player, t_conn), "uplink": uplink_numbers(bed, pub_flow, t_conn, t_conn + SECONDS),
            "publisher": publisher_summary(pub.stats()), "player": player_summary(player.stats()),
            "publisherStatus": status_series(pub.text(), pub.t_start), "dropsFirst5s": drops, "statusFirst5s": first,
            "connectedAfter": round(t_conn - pub.t_start, 2)}


def run_chromium(make_bed, browser, spec: str, seed: int) -> dict:
    bed = make_bed({"pub": (spec, None)}, seed=seed)
    page, t_conn, pub_flow = bed.publish_chromium(browser, "chromium")
    samples = []
    try:
        player, _ = bed.play("chromium", duration=SECONDS)
        while player.process.proc.poll() is None:
            s = page.evaluate(NET_STATS_JS, timeout=10)
            if s:
                samples.append(dict(s, tNet=bed.net.now()))
            time.sleep(0.5)
        player.wait(timeout=10)
    finally:
        close_page(browser, page)
    bed.close()
    last = next((s["outbound"] for s in reversed(samples) if s.get("outbound")), {}) or {}
    return {"viewer": viewer_numbers(player, t_conn), "uplink": uplink_numbers(bed, pub_flow, t_conn, t_conn + SECONDS),
            "chromiumLast": last, "player": player_summary(player.stats()),
            "chromiumTargets": [((s.get("outbound") or {}).get("targetBitrate"), s["tNet"] - t_conn) for s in samples]}


@pytest.mark.timeout(150)
@pytest.mark.parametrize("kbit", [500, 300, 1000])
def test_startup_narrow_uplink(kbit, make_bed, browser, artifact_dir):
    spec = f"rate={kbit}kbit,queue={FIFO}"
    swift = run_swift(make_bed, spec, seed=40 + kbit)
    chromium = run_chromium(make_bed, browser, spec, seed=41 + kbit)
    sv, cv, su = swift["viewer"], chromium["viewer"], swift["uplink"]

    c = Checks()
    c.check("Swift viewer fps ≥ Chromium viewer fps (same link, −1 fps for 1 s status granularity)",
            sv["fpsMean"] is not None and cv["fpsMean"] is not None and sv["fpsMean"] >= cv["fpsMean"] - 1,
            f"Swift {sv['fpsMean']} / Chromium {cv['fpsMean']}", "Swift ≥ Chromium − 1")
    c.check("Swift packets dropped at the bottleneck", su["dropFraction"] <= 0.02,
            f"{su['droppedQueue']}/{su['packetsIn']} = {100 * su['dropFraction']:.1f}%", "≤ 2%")
    c.check("Swift viewer fps over the first 5 s", (sv["fpsFirst5s"] or 0) >= 20, sv["fpsFirst5s"], "≥ 20")
    doc = {"scenario": f"1280x720@30 publish through {kbit} kbit/s, FIFO {FIFO}, relay → swiftrtc play, {SECONDS} s",
           "swift": swift, "chromium": chromium, "checks": c.items}
    write_json(artifact_dir / "startup.json", doc)
    print(f"{kbit} kbit/s: Swift {sv['fpsMean']} fps (first 5 s {sv['fpsFirst5s']}), drops {su['droppedQueue']}/"
          f"{su['packetsIn']}, widths {sv['widths']}; Chromium {cv['fpsMean']} fps (first 5 s {cv['fpsFirst5s']}), "
          f"drops {chromium['uplink']['droppedQueue']}/{chromium['uplink']['packetsIn']}, widths {cv['widths']}\n"
          f"{c.summary()}")
    assert not c.failed, (f"{len(c.failed)} check(s) failed:\n{c.summary()}\nSwift publisher connected "
                          f"{swift['connectedAfter']} s after its start; drops in its first 5 s {swift['dropsFirst5s']}; "
                          f"its first status lines:\n" + "\n".join(swift["statusFirst5s"]))
