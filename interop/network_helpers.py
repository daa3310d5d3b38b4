"""Helpers for the network-condition tests (test_network.py): the relay behind interop/netem.py with
one impairment per *role* (publisher's flow, player's flow), a 0.5 s sampler of the emulator's
per-flow counters and queue delay, the CLI status lines as time series, and window arithmetic.

Time base: everything is in seconds on the emulator's clock (`net.now()`, 0 = emulator start).
"""

from __future__ import annotations

import math
import re
import threading
import time
from typing import Any

from interop.netem import DIRECTIONS, Impairment

MBIT = 1e6


# ---- flows by role ------------------------------------------------------------------------------

class RoleFlows:
    """A `flows=` rule for NetEm: a new client flow gets the impairment of the role in force when it
    first appears (`expect("pub")` before starting the publisher, `expect("play")` before the
    player). roles = {"pub": (up_spec, down_spec), "play": (...)}; a role not listed is clean.
    `unreachable(role, ip)`: that role's flows from that address lose everything both ways (an
    interface whose path does not reach the server); they are labelled "ROLE@IP (unreachable)"."""

    def __init__(self, roles: dict[str, tuple[Any, Any]]):
        self.roles = dict(roles)
        self.current = "pub"
        self.assigned: dict[int, str] = {}
        self.addresses: dict[int, tuple] = {}
        self.unreachable_ips: dict[str, set[str]] = {}
        self._lock = threading.Lock()

    def expect(self, role: str) -> None:
        with self._lock:
            self.current = role

    def unreachable(self, role: str, ip: str) -> None:
        with self._lock:
            self.unreachable_ips.setdefault(role, set()).add(ip)

    def __call__(self, index: int, addr) -> tuple[Any, Any]:
        with self._lock:
            role = self.current
            self.addresses[index] = tuple(addr)
            if addr[0] in self.unreachable_ips.get(role, ()):
                self.assigned[index] = f"{role}@{addr[0]} (unreachable)"
                return Impairment(loss=1.0), Impairment(loss=1.0)
            self.assigned[index] = role
        up, down = self.roles.get(role, (None, None))
        # Always give the flow its own links (so net.set(..., flow=i) can change it alone).
        return (up if up is not None else Impairment(), down if down is not None else Impairment())

    def flows_of(self, role: str) -> list[int]:
        with self._lock:
            return sorted(i for i, r in self.assigned.items() if r == role)

    def wait_flow(self, role: str, timeout: float = 15) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            f = self.flows_of(role)
            if f:
                return f[0]
            time.sleep(0.05)
        raise AssertionError(f"no client flow for role {role!r} reached the emulator within {timeout} s "
                             f"(flows so far: {self.assigned})")


# ---- sampling the emulator ------------------------------------------------------------------------

_FLOW_KEYS = ("packets_in", "bytes_in", "forwarded", "bytes_forwarded", "dropped_loss", "dropped_queue",
              "bytes_dropped_queue", "queue_bytes")


class NetSampler:
    """Samples net.stats() every `interval` s in a thread: per-flow counters per direction and a copy
    of each direction's queue-delay histogram, so per-interval rates and queue-delay percentiles can be
    computed. The queue-delay histogram is per direction (all rate-limited links of that direction);
    the tests rate-limit one flow only, so it is that flow's.

    Reads the histogram buckets from NetEm internals (`_dir_stats[d].queue_delay.counts`, under the
    engine lock): net.stats() only gives cumulative percentiles."""

    def __init__(self, net, interval: float = 0.5):
        self.net = net
        self.interval = interval
        self.samples: list[dict] = []
        self.events: list[dict] = []  # (t, what) marks: connected, step changes, …
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="net-sampler", daemon=True)

    def start(self) -> "NetSampler":
        self.sample()
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        self.sample()

    def mark(self, what: str, **extra) -> float:
        t = self.net.now()
        self.events.append({"t": round(t, 3), "what": what, **extra})
        return t

    def _run(self) -> None:
        next_t = time.monotonic() + self.interval
        while not self._stop.wait(max(0.0, next_t - time.monotonic())):
            next_t += self.interval
            try:
                self.sample()
            except Exception as exc:  # keep sampling; the gap shows in the series
                self.events.append({"t": self.net.now(), "what": f"sample failed: {exc!r}"})

    def sample(self) -> dict:
        net = self.net
        st = net.stats()
        hists = {}
        try:
            with net._lock:
                hists = {d: dict(net._dir_stats[d].queue_delay.counts) for d in DIRECTIONS}
        except AttributeError:
            pass
        s = {"t": st["elapsed"],
             "flows": {f["index"]: {d: {k: f[d].get(k, 0) for k in _FLOW_KEYS} | {"config": f[d]["config"]}
                                    for d in DIRECTIONS} for f in st["flows"]},
             "qhist": hists}
        self.samples.append(s)
        return s

    # -- derived series --
    def at(self, t: float) -> dict:
        """The last sample taken at or before t (the first one if none)."""
        best = self.samples[0]
        for s in self.samples:
            if s["t"] <= t + 1e-9:
                best = s
            else:
                break
        return best

    def window(self, flow: int, direction: str, t0: float, t1: float) -> dict:
        """Counters of one flow/direction between the samples nearest t0 and t1: rates in bit/s,
        drop counts and the queue-delay percentiles (ms) of the packets that left the queue then."""
        a, b = self.at(t0), self.at(t1)
        dt = b["t"] - a["t"]
        fa = a["flows"].get(flow, {}).get(direction, {})
        fb = b["flows"].get(flow, {}).get(direction, {})
        d = {k: fb.get(k, 0) - fa.get(k, 0) for k in _FLOW_KEYS if k != "queue_bytes"}
        out = {"t0": round(a["t"], 3), "t1": round(b["t"], 3), "seconds": round(dt, 3),
               "in_bps": d["bytes_in"] * 8 / dt if dt > 0 else None,
               "fwd_bps": d["bytes_forwarded"] * 8 / dt if dt > 0 else None,
               "packets_in": d["packets_in"], "dropped_loss": d["dropped_loss"],
               "dropped_queue": d["dropped_queue"],
               "queue_drop_fraction": d["dropped_queue"] / d["packets_in"] if d["packets_in"] else 0.0,
               "queue_bytes_end": fb.get("queue_bytes", 0)}
        ha, hb = a["qhist"].get(direction, {}), b["qhist"].get(direction, {})
        diff = {k: hb.get(k, 0) - ha.get(k, 0) for k in hb if hb.get(k, 0) - ha.get(k, 0) > 0}
        out["queue_delay_ms"] = hist_summary(diff)
        return out

    def series(self, flow: int, direction: str, t_from: float | None = None) -> list[dict]:
        """One row per sampling interval (≈ 0.5 s)."""
        rows = []
        for a, b in zip(self.samples, self.samples[1:]):
            if t_from is not None and b["t"] < t_from:
                continue
            w = self.window(flow, direction, a["t"], b["t"])
            rows.append({"t": round(b["t"], 2), "in_kbps": _k(w["in_bps"]), "fwd_kbps": _k(w["fwd_bps"]),
                         "drop_loss": w["dropped_loss"], "drop_queue": w["dropped_queue"],
                         "queue_bytes": w["queue_bytes_end"],
                         "qdelay_p50": w["queue_delay_ms"]["p50"], "qdelay_p95": w["queue_delay_ms"]["p95"],
                         "qdelay_max": w["queue_delay_ms"]["max"],
                         "config": b["flows"].get(flow, {}).get(direction, {}).get("config")})
        return rows


def _k(bps):
    return None if bps is None else round(bps / 1000, 1)


def hist_summary(counts: dict[int, int]) -> dict:
    """Percentiles (ms) of a netem histogram (keys µs, bucket lower edges)."""
    n = sum(counts.values())
    if not n:
        return {"count": 0, "p50": None, "p95": None, "max": None}

    def pct(q):
        rank = max(1, math.ceil(q * n))
        acc = 0
        for k in sorted(counts):
            acc += counts[k]
            if acc >= rank:
                return round(k / 1000.0, 2)
        return None
    return {"count": n, "p50": pct(0.5), "p95": pct(0.95), "max": round(max(counts) / 1000.0, 2)}


# ---- CLI status lines ------------------------------------------------------------------------------

_STATUS = re.compile(r"^(?:peer )?(\w+)\s+([\d.]+)s\s+([\d.]+) fps\s+(\d+)x(\d+)\s+(-?\d+) kbps\s+rtt (-|\d+ ms)\s+"
                     r"loss (-|[\d.]+%)(?:\s+target (\d+) kbps)?(?:[^\n]*?\s+freezes (\d+) \()?", re.M)


def status_series(text: str, started_at: float | None = None) -> list[dict]:
    """The once-a-second status lines of `swiftrtc publish|play` (stderr, not a terminal) as rows.
    With started_at (the emulator-clock time the process was started) each row also gets `t` on the
    emulator's clock (the line's elapsed time counts from the process's own start, ~ms later)."""
    rows = []
    for m in _STATUS.finditer(text.replace("\r", "\n")):
        elapsed = float(m.group(2))
        row = {"state": m.group(1), "elapsed": elapsed, "fps": float(m.group(3)), "width": int(m.group(4)),
               "height": int(m.group(5)), "kbps": int(m.group(6)),
               "rtt_ms": None if m.group(7) == "-" else int(m.group(7).split()[0]),
               "loss_pct": None if m.group(8) == "-" else float(m.group(8)[:-1]),
               "target_kbps": None if m.group(9) is None else int(m.group(9)),
               "freezes": int(m.group(10) or 0)}   # W3C freezeCount so far (play shows it once > 0)
        if started_at is not None:
            row["t"] = round(started_at + elapsed, 2)
        rows.append(row)
    return rows


# ---- Chromium getStats for these tests ---------------------------------------------------------

# outbound/inbound video and the selected pair; the player page keeps `pc` at script level.
NET_STATS_JS = r"""
(async () => {
  if (typeof pc === 'undefined' || !pc) return null;
  const r = await pc.getStats();
  const o = {t: performance.now(), connectionState: pc.connectionState, outbound: null, inbound: null, pair: null};
  r.forEach((s) => {
    if (s.type === 'outbound-rtp' && s.kind === 'video') {
      o.outbound = {framesSent: s.framesSent, framesEncoded: s.framesEncoded, bytesSent: s.bytesSent,
        headerBytesSent: s.headerBytesSent, retransmittedBytesSent: s.retransmittedBytesSent,
        packetsSent: s.packetsSent, retransmittedPacketsSent: s.retransmittedPacketsSent, nackCount: s.nackCount,
        targetBitrate: s.targetBitrate, frameWidth: s.frameWidth, frameHeight: s.frameHeight,
        framesPerSecond: s.framesPerSecond, qualityLimitationReason: s.qualityLimitationReason,
        qualityLimitationResolutionChanges: s.qualityLimitationResolutionChanges};
    } else if (s.type === 'inbound-rtp' && s.kind === 'video') {
      o.inbound = {framesDecoded: s.framesDecoded, framesReceived: s.framesReceived, framesDropped: s.framesDropped,
        freezeCount: s.freezeCount, totalFreezesDuration: s.totalFreezesDuration, pauseCount: s.pauseCount,
        totalPausesDuration: s.totalPausesDuration, packetsLost: s.packetsLost, packetsReceived: s.packetsReceived,
        nackCount: s.nackCount, pliCount: s.pliCount, frameWidth: s.frameWidth, frameHeight: s.frameHeight,
        jitterBufferDelay: s.jitterBufferDelay, jitterBufferEmittedCount: s.jitterBufferEmittedCount,
        keyFramesDecoded: s.keyFramesDecoded, bytesReceived: s.bytesReceived};
    } else if (s.type === 'candidate-pair' && s.nominated && s.state === 'succeeded') {
      o.pair = {availableOutgoingBitrate: s.availableOutgoingBitrate, currentRoundTripTime: s.currentRoundTripTime,
        bytesSent: s.bytesSent, bytesReceived: s.bytesReceived};
    }
  });
  return o;
})()
"""


# Gaps between frames the page's <video> presents (requestVideoFrameCallback), as swiftrtc play counts
# them: a gap > 500 ms is a freeze (the definition; W3C freezeCount uses max(3 × mean frame
# interval, mean + 150 ms), which at 30 fps is ~180 ms).
GAP_MONITOR_JS = r"""
(() => {
  const v = document.getElementById('video');
  if (!v || !v.requestVideoFrameCallback) return false;
  const g = window.__gaps = {frames: 0, over500: 0, over500Ms: 0, longestMs: 0, last: null};
  const cb = (now) => {
    if (g.last !== null) {
      const d = now - g.last;
      if (d > g.longestMs) g.longestMs = d;
      if (d > 500) { g.over500 += 1; g.over500Ms += d; }
    }
    g.last = now; g.frames += 1;
    v.requestVideoFrameCallback(cb);
  };
  v.requestVideoFrameCallback(cb);
  return true;
})()
"""


def with_pattern(pattern_js: str) -> str:
    """NET_STATS_JS plus a test-pattern read of the page's <video> (taken first, same JS turn)."""
    return f"(async () => {{ const p = {pattern_js}; const s = await {NET_STATS_JS}; if (s) {{ s.pattern = p; s.gaps = window.__gaps ? Object.assign({{}}, window.__gaps) : null; }} return s; }})()"


# ---- small arithmetic ------------------------------------------------------------------------------

def percentile(values: list[float], q: float):
    v = sorted(x for x in values if x is not None)
    if not v:
        return None
    return v[min(len(v) - 1, int(q * len(v)))]


def interpolate(points: list[tuple[float, float]], t: float) -> float | None:
    """Linear interpolation of (t, value) points (clamped at the ends)."""
    pts = sorted(p for p in points if p[1] is not None)
    if not pts:
        return None
    if t <= pts[0][0]:
        return pts[0][1]
    for (t0, v0), (t1, v1) in zip(pts, pts[1:]):
        if t0 <= t <= t1:
            return v0 if t1 == t0 else v0 + (v1 - v0) * (t - t0) / (t1 - t0)
    return pts[-1][1]


class Checks:
    """Named pass/fail results with the measured value and the threshold, for network.json; `fail()`
    lists every failed one in one assertion message."""

    def __init__(self):
        self.items: list[dict] = []

    def check(self, name: str, ok: bool, measured, threshold: str) -> bool:
        self.items.append({"check": name, "pass": bool(ok), "measured": measured, "threshold": threshold})
        return bool(ok)

    @property
    def failed(self) -> list[dict]:
        return [c for c in self.items if not c["pass"]]

    def summary(self) -> str:
        return "\n".join(f"  {'PASS' if c['pass'] else 'FAIL'} {c['check']}: {c['measured']} (want {c['threshold']})"
                         for c in self.items)


# ---- outages: when the video came back (test_outages.py) ---------------------------------------------

# Presented frames of the page's <video> (requestVideoFrameCallback, so the page must be in front), every
# gap > 500 ms with its ends on the page's performance.now() clock and the test pattern read off the frame
# that ended it (null on a picture without the pattern).
GAP_LIST_JS = r"""
(() => {
  const v = document.getElementById('video');
  if (!v || !v.requestVideoFrameCallback) return false;
  if (window.__gapList) return true;
  const g = window.__gapList = {frames: 0, last: null, gaps: [], visibility: []};
  // A hidden page presents no frames: its changes are kept so a freeze can be told from one.
  document.addEventListener('visibilitychange', () =>
    g.visibility.push({at: performance.now(), state: document.visibilityState}));
  const read = () => { try { return PATTERN; } catch (e) { return null; } };
  const cb = (now) => {
    if (g.last !== null && now - g.last > 500 && g.gaps.length < 100) {
      const p = read();
      g.gaps.push({start: g.last, end: now, frameAfter: p && p.valid ? p.frame : null,
                   latencyAfterMs: p && p.valid ? p.latencyMs : null});
    }
    g.last = now; g.frames += 1;
    v.requestVideoFrameCallback(cb);
  };
  v.requestVideoFrameCallback(cb);
  return true;
})()
"""


def gap_list_js(pattern_js: str) -> str:
    """GAP_LIST_JS reading the test pattern with `pattern_js` (relay_helpers.READ_PATTERN_JS)."""
    return GAP_LIST_JS.replace("PATTERN", pattern_js.strip())


def page_clock_offset(page, samples: int = 5) -> float:
    """time.monotonic() − performance.now()/1000 of a page: the round trip with the smallest delay of a
    few, its midpoint taken (error ≤ half of it, a few ms)."""
    best = None
    for _ in range(samples):
        before = time.monotonic()
        perf = page.evaluate("performance.now()", timeout=10)
        after = time.monotonic()
        if best is None or after - before < best[0]:
            best = (after - before, (before + after) / 2 - perf / 1000)
    return best[1]


def page_gaps(page, offset: float) -> dict:
    """The page's gap list (GAP_LIST_JS) with times as time.monotonic() seconds, in play's
    --stats-json shape: {"frameGapsOver500Ms": [{startMonotonic, endMonotonic, ms, ...}],
    "lastFrameMonotonic", "frames", "readAt": when they were read}."""
    g = page.evaluate("window.__gapList ? JSON.parse(JSON.stringify(window.__gapList)) : null", timeout=10) or {}
    read_at = time.monotonic()
    gaps = [{"startMonotonic": x["start"] / 1000 + offset, "endMonotonic": x["end"] / 1000 + offset,
             "ms": x["end"] - x["start"], "frameAfter": x.get("frameAfter"), "latencyAfterMs": x.get("latencyAfterMs")}
            for x in g.get("gaps", [])]
    last = g.get("last")
    visibility = [{"atMonotonic": v["at"] / 1000 + offset, "state": v["state"]} for v in g.get("visibility", [])]
    return {"frameGapsOver500Ms": gaps, "lastFrameMonotonic": None if last is None else last / 1000 + offset,
            "frames": g.get("frames", 0), "readAt": read_at, "visibilityChanges": visibility}


def recovery(viewer: dict, lost_at: float, back_at: float, until: float | None = None, settle: float = 2.0) -> dict:
    """How long after the path returned (`back_at`, time.monotonic()) the video was back at a viewer,
    from its gaps > 500 ms between decoded frames (`viewer`: play's --stats-json or page_gaps(), read
    at `until`, default its "readAt"). Back = the end of the last freeze that overlaps the outage [lost_at, back_at] or
    begins within `settle` s after it (video that stutters back counts from when it stopped
    stuttering); with no such freeze the video never stopped (0 s). Never back (None) if the video
    stopped then and nothing came until `until` (its last frame before back_at + settle and more
    than 500 ms before `until`)."""
    gaps = viewer.get("frameGapsOver500Ms") or []
    last = viewer.get("lastFrameMonotonic")
    until = viewer.get("readAt") if until is None else until
    if until is None:
        raise ValueError("recovery() needs the time the viewer's frames were read (until=, or readAt in viewer)")
    out = {"lostAt": round(lost_at, 3), "backAt": round(back_at, 3), "lastFrame": last and round(last, 3),
           "until": round(until, 3)}
    relevant = [g for g in gaps if g["endMonotonic"] > lost_at and g["startMonotonic"] < back_at + settle]
    if last is None or (last < back_at + settle and until - last > 0.5):
        return {**out, "seconds": None, "freezes": len(relevant) + 1}
    if not relevant:
        return {**out, "seconds": 0.0, "freezes": 0}
    g = max(relevant, key=lambda x: x["endMonotonic"])
    return {**out, "seconds": round(g["endMonotonic"] - back_at, 3), "freezes": len(relevant),
            "freezeMs": round(g["ms"]), "frameAfter": g.get("frameAfter"), "latencyAfterMs": g.get("latencyAfterMs")}
