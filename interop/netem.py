"""User-space network emulator: a UDP proxy with netem-style impairments (this kernel has no sch_netem).

The server binds its UDP at 127.0.0.2:P and advertises 127.0.0.1 (``swiftrtc serve --udp 127.0.0.2:P
--candidate 127.0.0.1``; --candidate sets only the IP, the advertised port is P); the proxy listens on
127.0.0.1:P and opens one upstream socket per client address (a *flow*), so the server's replies come
back through that socket and go to the right client. Pure stdlib; one background thread (selectors +
a heap of release times on the monotonic clock).

Per direction ("up" = client→server, "down" = server→client) every packet goes through
    loss (Bernoulli and/or Gilbert-Elliott)  →  bottleneck (rate R bit/s, bounded FIFO, tail drop)
    →  delay ± jitter (packets reorder like netem when the jitter exceeds the gap)  →  send.
All random choices come from streams seeded by (seed, direction, flow, purpose): same seed, same
packets in the same order ⇒ same losses and delays.

    with NetEm(listen=("127.0.0.1", P), upstream=("127.0.0.2", P),
               up=Impairment.parse("loss=5%,delay=25ms,jitter=10ms"),
               down="rate=1mbit,queue=200ms",
               schedule="10:up:rate=500kbit;25:up:rate=2.5mbit", seed=1) as net:
        ...
        print(net.stats()["down"]["dropped_queue"])

    python -m interop.netem --listen 127.0.0.1:P --upstream 127.0.0.2:P \\
        --up "loss=5%,delay=25ms,jitter=10ms" --down "rate=1mbit,queue=200ms" \\
        --schedule "10:up:rate=500kbit;25:up:rate=2.5mbit" --stats-json stats.json

Impairment spec: comma-separated KEY=VALUE (see SPEC_HELP); "" / "clean" / "none" = no impairment.
"""

from __future__ import annotations

import argparse
import dataclasses
import heapq
import itertools
import json
import math
import os
import random
import re
import selectors
import signal
import socket
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterable

SPEC_HELP = """\
impairment spec: comma-separated KEY=VALUE items, e.g. "loss=5%,delay=25ms,jitter=10ms,rate=1mbit,queue=200ms"
  loss=P%              Bernoulli loss (0%..100%)
  ge=P%/R%[/B%[/G%]]   Gilbert-Elliott bursty loss: P = P(good->bad), R = P(bad->good) per packet,
                       B = loss in bad state (default 100%), G = loss in good state (default 0%); ge=off
  delay=T              base one-way delay (units us, ms, s), e.g. 25ms
  jitter=T             per-packet jitter: uniform in [-T, +T] (dist=normal: sigma T); delay clamps at 0
  dist=uniform|normal  jitter distribution (default uniform)
  reorder=yes|no       yes (default): jittered packets may overtake each other, as in netem;
                       no: a packet never leaves before the one ahead of it
  rate=R               bottleneck rate (bit, kbit, mbit, gbit; 1 kbit = 1000 bit/s), rate=off for none
  queue=Q              bottleneck FIFO limit: time at the current rate (200ms), bytes (30000b, 30kb,
                       64kib) or packets (100p); tail drop when full; default 200ms when rate is set
  overhead=N           bytes added to each packet's size for the rate (e.g. 28 for IPv4+UDP); default 0
schedule: "T:DIR:SPEC;T:DIR:SPEC..." with T in seconds from start (10, 10s, 1500ms), DIR up|down|both
  (or up@N / down@N / both@N for flow N, the N-th client seen, 0-based), SPEC only the keys to change,
  e.g. "10:down:rate=500kbit;25:down:rate=2.5mbit"
  events instead of a SPEC (one per entry):
  outage=T             a black hole for T (e.g. 5:both@0:outage=3s): nothing of that flow (every flow
                       without @N) passes in that direction, queued or new, until it ends
  rebind[=GAP]         NAT rebinding (e.g. 5:both@0:rebind=2s): the flow's upstream socket is replaced
                       by a new one, so the server sees the client from a new port; the server's replies
                       to the old port are lost; with GAP nothing passes for GAP first
"""

UP, DOWN = "up", "down"
DIRECTIONS = (UP, DOWN)
DEFAULT_QUEUE_TIME = 0.200  # seconds of the current rate, when rate is set and no queue= is given
TIMER_SLACK = 0.0005  # events due within this are run now: epoll rounds timeouts up to whole ms


class SpecError(ValueError):
    """A bad impairment / schedule / address spec (a ValueError with the offending text)."""


# ---- value parsing ----------------------------------------------------------------------------

_NUM = r"([0-9]*\.?[0-9]+(?:e[+-]?[0-9]+)?)"
_TIME_UNITS = {"us": 1e-6, "usec": 1e-6, "ms": 1e-3, "msec": 1e-3, "s": 1.0, "sec": 1.0}
_RATE_UNITS = {"bit": 1.0, "kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
_BYTE_UNITS = {"b": 1, "kb": 1000, "kib": 1024, "mb": 1000_000, "mib": 1 << 20}
_PACKET_UNITS = ("p", "pkt", "pkts", "packets")


def _split_number(key: str, text: str, what: str) -> tuple[float, str]:
    m = re.fullmatch(_NUM + r"\s*([a-z/%]*)", str(text).strip().lower())
    if not m:
        raise SpecError(f"{key}={text!r}: not {what}")
    return float(m.group(1)), m.group(2)


def parse_time(key: str, text: str | float | int) -> float:
    """'25ms' → 0.025 (seconds); a bare 0 is allowed, other bare numbers need a unit."""
    if isinstance(text, (int, float)):
        return float(text)
    value, unit = _split_number(key, text, "a duration (write e.g. 25ms, 1.5s, 500us)")
    if unit == "" and value == 0:
        return 0.0
    if unit not in _TIME_UNITS:
        raise SpecError(f"{key}={text!r}: needs a time unit (us, ms or s), e.g. {key}=25ms")
    return value * _TIME_UNITS[unit]


def parse_percent(key: str, text: str | float | int) -> float:
    """'5%' → 0.05. Strings must carry the % sign (no guessing whether 5 means 5% or 500%)."""
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        number, unit = _split_number(key, text, "a percentage (write e.g. 5%)")
        if unit != "%":
            raise SpecError(f"{key}={text!r}: write a percentage with a % sign, e.g. {key}=5%")
        value = number / 100.0
    if not 0.0 <= value <= 1.0:
        raise SpecError(f"{key}={text!r}: out of range (0%..100%)")
    return value


def parse_rate(key: str, text: str | float | int | None) -> float | None:
    """'2.5mbit' → 2.5e6 bit/s; 'off' / 'none' → None (no bottleneck)."""
    if text is None:
        return None
    if isinstance(text, (int, float)):
        value = float(text)
    else:
        t = str(text).strip().lower()
        if t in ("off", "none", "inf", "unlimited"):
            return None
        number, unit = _split_number(key, t, "a rate (write e.g. 1mbit, 500kbit)")
        unit = unit[:-2] if unit.endswith("/s") else unit
        if number == 0:
            unit = "bit"  # fall through to the "must be > 0" message
        if unit in ("bps", "kbps", "mbps", "gbps"):
            raise SpecError(f"{key}={text!r}: ambiguous unit {unit!r} (tc reads it as bytes/s); "
                            f"write bits: {key}={number:g}{unit[:-3]}bit")
        if unit not in _RATE_UNITS:
            raise SpecError(f"{key}={text!r}: needs a rate unit (bit, kbit, mbit, gbit), e.g. {key}=1mbit")
        value = number * _RATE_UNITS[unit]
    if not value > 0 or math.isinf(value):
        raise SpecError(f"{key}={text!r}: the rate must be > 0 (rate=off for no limit, "
                        "loss=100% for an outage)")
    return value


def parse_queue(key: str, text: str) -> tuple[str, float]:
    """'200ms' → ('time', 0.2); '30kb' → ('bytes', 30000); '100p' → ('packets', 100)."""
    number, unit = _split_number(key, text, "a queue limit (write e.g. 200ms, 30000b, 100p)")
    if unit in _TIME_UNITS:
        kind, value = "time", number * _TIME_UNITS[unit]
    elif unit in _BYTE_UNITS:
        kind, value = "bytes", float(int(number * _BYTE_UNITS[unit]))
    elif unit in _PACKET_UNITS:
        kind, value = "packets", float(int(number))
    else:
        raise SpecError(f"{key}={text!r}: needs a unit: ms / s (time at the current rate), "
                        "b / kb / kib (bytes) or p (packets), e.g. queue=200ms")
    if value <= 0:
        raise SpecError(f"{key}={text!r}: the queue limit must be > 0")
    return kind, value


def parse_bool(key: str, text: str | bool) -> bool:
    if isinstance(text, bool):
        return text
    t = str(text).strip().lower()
    if t in ("yes", "on", "true", "1"):
        return True
    if t in ("no", "off", "false", "0"):
        return False
    raise SpecError(f"{key}={text!r}: write yes or no")


def parse_hostport(text: str, what: str = "address") -> tuple[str, int]:
    """'127.0.0.1:5000' or '[::1]:5000' → (host, port)."""
    m = re.fullmatch(r"\[([0-9a-fA-F:.]+)\]:(\d+)|([^:\s\[\]]+):(\d+)", str(text).strip())
    if not m:
        raise SpecError(f"{what} {text!r}: write HOST:PORT, e.g. 127.0.0.1:8000")
    host = m.group(1) or m.group(3)
    port = int(m.group(2) or m.group(4))
    if not 0 <= port <= 65535:
        raise SpecError(f"{what} {text!r}: port out of range")
    return host, port


def _fmt_time(s: float) -> str:
    if s == 0:
        return "0"
    if s >= 1 and abs(s - round(s, 3)) < 1e-12:
        return f"{s:g}s"
    if s >= 1e-3:
        return f"{round(s * 1e3, 4):g}ms"
    return f"{round(s * 1e6, 3):g}us"


def _fmt_rate(r: float) -> str:
    for unit, mult in (("gbit", 1e9), ("mbit", 1e6), ("kbit", 1e3)):
        if r >= mult:
            return f"{round(r / mult, 6):g}{unit}"
    return f"{r:g}bit"


def _fmt_pct(p: float) -> str:
    return f"{round(p * 100, 6):g}%"


# ---- impairment model ---------------------------------------------------------------------------

@dataclass(frozen=True)
class GilbertElliott:
    """Two-state bursty loss. Per packet: lost with loss_bad / loss_good by the current state, then
    good→bad with probability p, bad→good with r. Mean burst (loss_bad=1, loss_good=0) = 1/r;
    stationary P(bad) = p/(p+r)."""
    p: float
    r: float
    loss_bad: float = 1.0
    loss_good: float = 0.0

    def __post_init__(self):
        for name in ("p", "r", "loss_bad", "loss_good"):
            object.__setattr__(self, name, parse_percent(f"ge.{name}", getattr(self, name)))

    @classmethod
    def parse(cls, text: str) -> "GilbertElliott | None":
        t = str(text).strip().lower()
        if t in ("off", "none", "0"):
            return None
        parts = t.split("/")
        if not 2 <= len(parts) <= 4:
            raise SpecError(f"ge={text!r}: write ge=P%/R% or ge=P%/R%/BAD%/GOOD%, e.g. ge=2%/25%")
        names = ("p", "r", "loss_bad", "loss_good")
        return cls(*[parse_percent(f"ge {names[i]}", v) for i, v in enumerate(parts)])

    def spec(self) -> str:
        s = f"{_fmt_pct(self.p)}/{_fmt_pct(self.r)}"
        if (self.loss_bad, self.loss_good) != (1.0, 0.0):
            s += f"/{_fmt_pct(self.loss_bad)}/{_fmt_pct(self.loss_good)}"
        return s


@dataclass(frozen=True)
class Impairment:
    """One direction's impairment. Times in seconds, rate in bit/s, loss as a fraction; strings in
    the spec syntax are accepted too: Impairment(loss="5%", delay="25ms", rate="1mbit",
    queue_time="200ms")."""
    loss: float = 0.0
    ge: GilbertElliott | None = None
    delay: float = 0.0
    jitter: float = 0.0
    dist: str = "uniform"
    reorder: bool = True
    rate: float | None = None
    queue_time: float | None = None
    queue_bytes: int | None = None
    queue_packets: int | None = None
    overhead: int = 0

    def __post_init__(self):
        set_ = lambda k, v: object.__setattr__(self, k, v)  # noqa: E731 (frozen dataclass)
        set_("loss", parse_percent("loss", self.loss))
        ge = self.ge
        if isinstance(ge, str):
            ge = GilbertElliott.parse(ge)
        elif isinstance(ge, (tuple, list)):
            ge = GilbertElliott(*ge)
        elif ge is not None and not isinstance(ge, GilbertElliott):
            raise SpecError(f"ge={ge!r}: expected GilbertElliott, (p, r[, bad, good]) or 'P%/R%'")
        set_("ge", ge)
        for k in ("delay", "jitter"):
            v = parse_time(k, getattr(self, k))
            if v < 0 or math.isinf(v) or math.isnan(v):
                raise SpecError(f"{k}={getattr(self, k)!r}: must be >= 0")
            set_(k, v)
        if self.dist not in ("uniform", "normal"):
            raise SpecError(f"dist={self.dist!r}: write dist=uniform or dist=normal")
        set_("reorder", parse_bool("reorder", self.reorder))
        set_("rate", parse_rate("rate", self.rate))
        if self.queue_time is not None:
            v = parse_time("queue_time", self.queue_time)
            if v <= 0:
                raise SpecError(f"queue_time={self.queue_time!r}: must be > 0")
            set_("queue_time", v)
        for k in ("queue_bytes", "queue_packets"):
            v = getattr(self, k)
            if v is not None:
                if isinstance(v, str):
                    kind, v = parse_queue(k, v)
                    if kind != k.split("_")[1]:
                        raise SpecError(f"{k}={getattr(self, k)!r}: not a {k.split('_')[1]} count")
                if int(v) <= 0:
                    raise SpecError(f"{k}={v!r}: must be > 0")
                set_(k, int(v))
        try:
            ov = int(self.overhead)
        except (TypeError, ValueError):
            raise SpecError(f"overhead={self.overhead!r}: write a byte count, e.g. overhead=28") from None
        if ov < 0:
            raise SpecError(f"overhead={self.overhead!r}: must be >= 0")
        set_("overhead", ov)

    # -- spec strings --
    @classmethod
    def parse(cls, spec: "str | Impairment | dict | None") -> "Impairment":
        """Impairment.parse("loss=5%,delay=25ms,jitter=10ms") (also accepts an Impairment / a dict
        of fields / None = clean). Raises ValueError (SpecError) with the offending item."""
        if spec is None:
            return cls()
        if isinstance(spec, Impairment):
            return spec
        return cls().with_changes(spec)

    def with_changes(self, changes: "str | dict") -> "Impairment":
        """A copy with some keys changed: a spec string ("rate=500kbit") or a dict of fields."""
        if isinstance(changes, str):
            changes = parse_changes(changes)
        else:
            changes = _normalize_change_dict(changes)
        try:
            return dataclasses.replace(self, **changes)
        except SpecError:
            raise
        except (TypeError, ValueError) as exc:
            raise SpecError(f"bad impairment {changes!r}: {exc}") from None

    def spec(self) -> str:
        """The canonical spec string (round-trips through parse)."""
        items = []
        if self.loss:
            items.append(f"loss={_fmt_pct(self.loss)}")
        if self.ge is not None:
            items.append(f"ge={self.ge.spec()}")
        if self.delay:
            items.append(f"delay={_fmt_time(self.delay)}")
        if self.jitter:
            items.append(f"jitter={_fmt_time(self.jitter)}")
            if self.dist != "uniform":
                items.append(f"dist={self.dist}")
            if not self.reorder:
                items.append("reorder=no")
        if self.rate is not None:
            items.append(f"rate={_fmt_rate(self.rate)}")
            if self.queue_time is not None:
                items.append(f"queue={_fmt_time(self.queue_time)}")
            if self.queue_bytes is not None:
                items.append(f"queue={self.queue_bytes}b")
            if self.queue_packets is not None:
                items.append(f"queue={self.queue_packets}p")
            if self.overhead:
                items.append(f"overhead={self.overhead}")
        return ",".join(items) or "clean"

    def __str__(self) -> str:
        return self.spec()

    @property
    def is_clean(self) -> bool:
        return (not self.loss and self.ge is None and not self.delay and not self.jitter
                and self.rate is None)

    def queue_limit_bytes(self) -> float:
        """The FIFO's byte limit at the current rate (inf with no byte/time limit or no rate)."""
        limits = []
        if self.queue_bytes is not None:
            limits.append(float(self.queue_bytes))
        qt = self.queue_time
        if qt is None and self.queue_bytes is None and self.queue_packets is None:
            qt = DEFAULT_QUEUE_TIME
        if qt is not None and self.rate is not None:
            limits.append(self.rate * qt / 8.0)
        return min(limits) if limits else math.inf


_SPEC_KEYS = ("loss", "ge", "delay", "jitter", "dist", "reorder", "rate", "queue", "overhead")
_FIELDS = tuple(f.name for f in dataclasses.fields(Impairment))


def parse_changes(spec: str) -> dict[str, Any]:
    """'rate=500kbit,queue=100ms' → {'rate': 500000.0, 'queue_time': 0.1, 'queue_bytes': None, ...}.
    Only the keys named are returned (a partial update). Raises SpecError."""
    out: dict[str, Any] = {}
    text = str(spec).strip()
    if text.lower() in ("", "clean", "none"):
        return {}
    seen = set()
    try:
        for item in text.split(","):
            item = item.strip()
            if not item:
                continue
            if "=" not in item:
                raise SpecError(f"{item!r} is not KEY=VALUE (keys: {', '.join(_SPEC_KEYS)})")
            key, value = (s.strip() for s in item.split("=", 1))
            key = key.lower()
            if key not in _SPEC_KEYS:
                raise SpecError(f"unknown key {key!r} (keys: {', '.join(_SPEC_KEYS)})")
            if key in seen:
                raise SpecError(f"{key} is given twice")
            seen.add(key)
            if key == "loss":
                out["loss"] = parse_percent(key, value)
            elif key == "ge":
                out["ge"] = GilbertElliott.parse(value)
            elif key in ("delay", "jitter"):
                out[key] = parse_time(key, value)
            elif key == "dist":
                if value.lower() not in ("uniform", "normal"):
                    raise SpecError(f"dist={value!r}: write dist=uniform or dist=normal")
                out["dist"] = value.lower()
            elif key == "reorder":
                out["reorder"] = parse_bool(key, value)
            elif key == "rate":
                out["rate"] = parse_rate(key, value)
            elif key == "queue":
                kind, v = parse_queue(key, value)
                out.update(queue_time=None, queue_bytes=None, queue_packets=None)
                out[f"queue_{kind}"] = v if kind == "time" else int(v)
            elif key == "overhead":
                if not re.fullmatch(r"\d+", value):
                    raise SpecError(f"overhead={value!r}: write a byte count, e.g. overhead=28")
                out["overhead"] = int(value)
    except SpecError as exc:
        raise SpecError(f"bad impairment spec {text!r}: {exc}") from None
    return out


def _normalize_change_dict(changes: dict) -> dict[str, Any]:
    out = {}
    for k, v in dict(changes).items():
        if k == "queue":
            kind, q = parse_queue("queue", v) if isinstance(v, str) else ("time", float(v))
            out.update(queue_time=None, queue_bytes=None, queue_packets=None)
            out[f"queue_{kind}"] = q if kind == "time" else int(q)
        elif k in _FIELDS:
            out[k] = v
        else:
            raise SpecError(f"unknown impairment field {k!r} (fields: {', '.join(_FIELDS)}, queue)")
    return out


def describe_changes(changes: dict) -> str:
    """{'rate': 5e5, 'queue_time': 0.1, ...} → 'rate=500kbit,queue=100ms' (only the keys given)."""
    items = []
    for k, v in changes.items():
        if k.startswith("queue_"):
            if v is not None:
                items.append("queue=" + (_fmt_time(v) if k == "queue_time" else f"{v}{'b' if k == 'queue_bytes' else 'p'}"))
        elif k == "loss":
            items.append(f"loss={_fmt_pct(parse_percent(k, v))}")
        elif k == "ge":
            ge = v if isinstance(v, GilbertElliott) or v is None else Impairment(ge=v).ge
            items.append(f"ge={ge.spec() if ge else 'off'}")
        elif k in ("delay", "jitter"):
            items.append(f"{k}={_fmt_time(parse_time(k, v))}")
        elif k == "rate":
            r = parse_rate(k, v)
            items.append(f"rate={_fmt_rate(r) if r else 'off'}")
        elif k == "reorder":
            items.append(f"reorder={'yes' if parse_bool(k, v) else 'no'}")
        else:
            items.append(f"{k}={v}")
    return ",".join(items) or "clean"


@dataclass(frozen=True)
class Change:
    """A scheduled change: at t seconds after start, apply `changes` (only the keys given) to
    `direction` (up, down or both) — of every link, or of flow `flow` only."""
    t: float
    direction: str
    changes: dict
    flow: int | tuple[int, ...] | None = None   # a tuple: several flows (events only)
    event: tuple[str, float] | None = None   # ("outage", seconds) or ("rebind", gap seconds)
    newcomers: bool = False                  # an outage also black-holes flows that appear during it

    def describe(self) -> str:
        flow = "+".join(map(str, self.flow)) if isinstance(self.flow, tuple) else self.flow
        target = self.direction + (f"@{flow}" if flow is not None else "")
        return f"{self.t:g}:{target}:{describe_event(self.event) if self.event else describe_changes(self.changes)}"


EVENTS = ("outage", "rebind")


def describe_event(event: tuple[str, float]) -> str:
    kind, seconds = event
    if kind == "rebind" and not seconds:
        return "rebind"
    return f"{kind}={'inf' if math.isinf(seconds) else _fmt_time(seconds)}"


def _parse_event(changes: Any) -> tuple[str, float] | None:
    """'outage=3s' → ('outage', 3.0); 'rebind' / 'rebind=2s' → ('rebind', 0.0 / 2.0); None if the
    spec is an impairment change. An event stands alone in its entry."""
    if isinstance(changes, dict):
        keys = [k for k in changes if k in EVENTS]
        if not keys:
            return None
        items = [(k, changes[k]) for k in changes]
    else:
        items = []
        for item in str(changes).split(","):
            item = item.strip()
            if item:
                key, eq, value = item.partition("=")
                items.append((key.strip().lower(), value.strip() if eq else None))
        if not any(k in EVENTS for k, _v in items):
            return None
    if len(items) != 1:
        raise SpecError(f"schedule spec {changes!r}: an event ({', '.join(EVENTS)}) stands alone in its entry")
    kind, value = items[0]
    if kind == "rebind" and value in (None, "", 0):
        return ("rebind", 0.0)
    if value is None or value == "":
        raise SpecError(f"{kind}: needs a duration, e.g. {kind}=3s")
    if isinstance(value, str) and value.lower() in ("inf", "forever"):
        seconds = math.inf
    else:
        seconds = parse_time(kind, value)
    if not seconds >= 0 or (kind == "rebind" and math.isinf(seconds)):
        raise SpecError(f"{kind}={value!r}: must be >= 0" + (" and finite" if kind == "rebind" else ""))
    return (kind, seconds)


def _change(t: Any, direction: str, changes: Any, flow: int | None = None) -> Change:
    try:
        tt = parse_time("schedule time", t) if isinstance(t, str) and re.search(r"[a-z]", t.lower()) \
            else float(t)
    except (TypeError, ValueError):
        raise SpecError(f"schedule time {t!r}: write seconds, e.g. 10 or 1500ms") from None
    if tt < 0 or math.isnan(tt):
        raise SpecError(f"schedule time {t!r}: must be >= 0")
    d = str(direction).strip().lower()
    if "@" in d and flow is None:
        d, _, f = d.partition("@")
        if not f.isdigit():
            raise SpecError(f"schedule target {direction!r}: write DIR@N with N a flow index, e.g. up@0")
        flow = int(f)
    if d not in ("up", "down", "both"):
        raise SpecError(f"schedule direction {direction!r}: write up, down or both")
    event = _parse_event(changes)
    if event is not None:
        return Change(tt, d, {}, flow, event)
    ch = parse_changes(changes) if isinstance(changes, str) else _normalize_change_dict(changes)
    coerced = Impairment().with_changes(ch)  # validates and converts ("500kbit" → 500000.0)
    return Change(tt, d, {k: getattr(coerced, k) for k in ch}, flow)


def parse_schedule(spec: "str | Iterable | None") -> list[Change]:
    """'10:up:rate=500kbit;25:up:rate=2.5mbit' or a list of (t, direction, changes[, flow]),
    (t, {'up': changes, 'down': changes}), (t, changes) (= both directions) or Change; changes are a
    spec string or a dict of Impairment fields: [(10, 'up', 'rate=500kbit'), (25, 'up', {'rate': 2.5e6}),
    (30, {'up': 'loss=0%', 'down': 'delay=0'}), (40, 'loss=0%')] → Changes sorted by time."""
    if spec is None:
        return []
    out: list[Change] = []
    if isinstance(spec, str):
        for entry in spec.split(";"):
            entry = entry.strip()
            if not entry:
                continue
            parts = entry.split(":", 2)
            if len(parts) != 3:
                raise SpecError(f"schedule entry {entry!r}: write T:DIR:SPEC, e.g. 10:up:rate=500kbit")
            out.append(_change(*parts))
    else:
        for item in spec:
            if isinstance(item, Change):
                out.append(item if item.event else _change(item.t, item.direction, item.changes, item.flow))
            elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[1], dict) \
                    and set(item[1]) <= {"up", "down", "both"} and item[1]:
                for d, ch in item[1].items():
                    out.append(_change(item[0], d, ch))
            elif isinstance(item, (tuple, list)) and len(item) == 2 and isinstance(item[1], (str, dict)):
                out.append(_change(item[0], "both", item[1]))  # (t, changes): both directions
            elif isinstance(item, (tuple, list)) and len(item) in (3, 4):
                out.append(_change(*item))
            else:
                raise SpecError(f"schedule item {item!r}: write (t, direction, changes[, flow]) "
                                "or (t, {'up': changes, 'down': changes})")
    out.sort(key=lambda c: c.t)
    return out


# ---- statistics ---------------------------------------------------------------------------------

class _Hist:
    """Histogram of durations: 1 µs buckets below 1 ms, 3 significant digits above."""
    __slots__ = ("counts", "n", "max")

    def __init__(self):
        self.counts: dict[int, int] = {}
        self.n = 0
        self.max = 0.0

    def add(self, seconds: float) -> None:
        us = int(seconds * 1e6)
        if us < 0:
            us = 0
        if us >= 1000:
            if us < 10_000:
                us -= us % 10
            elif us < 100_000:
                us -= us % 100
            elif us < 1_000_000:
                us -= us % 1000
            else:
                us -= us % 10_000
        c = self.counts
        c[us] = c.get(us, 0) + 1
        self.n += 1
        if seconds > self.max:
            self.max = seconds

    def percentile(self, q: float) -> float | None:
        """q in [0, 1]; milliseconds (bucket lower edge)."""
        if not self.n:
            return None
        rank = max(1, math.ceil(q * self.n))
        acc = 0
        for k in sorted(self.counts):
            acc += self.counts[k]
            if acc >= rank:
                return k / 1000.0
        return self.max * 1e3

    def summary(self) -> dict:
        return {"count": self.n, "p50": self.percentile(0.5), "p95": self.percentile(0.95),
                "p99": self.percentile(0.99), "max": round(self.max * 1e3, 3) if self.n else None}


class _Counters:
    __slots__ = ("packets_in", "bytes_in", "forwarded", "bytes_forwarded", "dropped_loss",
                 "dropped_queue", "bytes_dropped_queue", "send_errors", "dropped_outage", "dropped_stale_port")

    def __init__(self):
        for k in _Counters.__slots__:
            setattr(self, k, 0)

    def as_dict(self) -> dict:
        return {k: getattr(self, k) for k in _Counters.__slots__}


class _DirStats(_Counters):
    __slots__ = ("queue_delay", "delay", "timer_error", "queue_bytes_max")

    def __init__(self):
        super().__init__()
        self.queue_delay = _Hist()   # arrival at the bottleneck → end of its serialization
        self.delay = _Hist()         # in → out of the emulator (what the packet experienced)
        self.timer_error = _Hist()   # |actual send − scheduled send|: the emulator's own error
        self.queue_bytes_max = 0


# ---- the engine ---------------------------------------------------------------------------------

class _Flow:
    __slots__ = ("index", "addr", "sock", "links", "stats", "own_links", "created", "outage_until",
                 "last_in", "last_forwarded", "events", "watching", "stale", "rebind_due")

    def __init__(self, index: int, addr: tuple, sock: socket.socket, created: float):
        self.index = index
        self.addr = addr
        self.sock = sock
        self.links: dict[str, _Link] = {}
        self.stats = {UP: _Counters(), DOWN: _Counters()}
        self.own_links = False
        self.created = created
        self.outage_until = {UP: 0.0, DOWN: 0.0}       # monotonic: black hole until then
        self.last_in = {UP: None, DOWN: None}           # monotonic, last packet that reached the link
        self.last_forwarded = {UP: None, DOWN: None}    # monotonic, last packet sent on
        self.events: list[dict] = []                    # outages and rebinds of this flow (stats)
        self.watching: list[dict] = []                  # events still waiting for their first packet after
        self.stale: list[socket.socket] = []            # upstream sockets replaced by rebinds
        self.rebind_due: tuple | None = None            # (monotonic end of gap, finish arg, straggler)


class _Link:
    """One direction's pipeline (shared by all flows, or one flow's own): loss → FIFO → delay."""

    def __init__(self, engine: "NetEm", direction: str, imp: Impairment, seed_key: str):
        self.engine = engine
        self.direction = direction
        self.stats = engine._dir_stats[direction]
        self.rng_loss = random.Random(f"{seed_key}:loss")
        self.rng_ge = random.Random(f"{seed_key}:ge")
        self.rng_jitter = random.Random(f"{seed_key}:jitter")
        self.ge_bad = False
        self.q: deque = deque()      # (flow, data, t_enqueue); q[0] is being serialized when busy
        self.backlog = 0             # bytes in q
        self.busy = False
        self.last_release = 0.0      # for reorder=no
        self.in_flight = 0           # packets in the delay stage
        self.set_impairment(imp)

    def set_impairment(self, imp: Impairment) -> None:
        self.imp = imp
        self.limit_bytes = imp.queue_limit_bytes()
        self.limit_packets = imp.queue_packets if imp.rate is not None else None
        self.has_queue = imp.rate is not None
        self.has_delay = bool(imp.delay or imp.jitter)

    def submit(self, flow: _Flow, data: bytes, now: float) -> None:
        n = len(data)
        st = self.stats
        fs = flow.stats[self.direction]
        st.packets_in += 1
        st.bytes_in += n
        fs.packets_in += 1
        fs.bytes_in += n
        flow.last_in[self.direction] = now
        if flow.outage_until[self.direction] > now or self.engine._outage_until[self.direction] > now:
            st.dropped_outage += 1
            fs.dropped_outage += 1
            return
        imp = self.imp
        lost = False
        ge = imp.ge
        if ge is not None:  # advance the channel state for every packet, lost or not
            rnd = self.rng_ge.random
            lost = rnd() < (ge.loss_bad if self.ge_bad else ge.loss_good)
            if self.ge_bad:
                if rnd() < ge.r:
                    self.ge_bad = False
            elif rnd() < ge.p:
                self.ge_bad = True
        if imp.loss and self.rng_loss.random() < imp.loss:
            lost = True
        if lost:
            st.dropped_loss += 1
            fs.dropped_loss += 1
            return
        if self.has_queue or self.q:
            q = self.q
            if q and (self.backlog + n > self.limit_bytes
                      or (self.limit_packets is not None and len(q) >= self.limit_packets)):
                st.dropped_queue += 1
                st.bytes_dropped_queue += n
                fs.dropped_queue += 1
                fs.bytes_dropped_queue += n
                return
            q.append((flow, data, now))
            self.backlog += n
            if self.backlog > st.queue_bytes_max:
                st.queue_bytes_max = self.backlog
            if not self.busy:
                self._start(now)
            return
        self._after_queue(flow, data, now, now)

    def _start(self, t: float) -> None:
        _flow, data, _t = self.q[0]
        rate = self.imp.rate
        tx = (len(data) + self.imp.overhead) * 8.0 / rate if rate else 0.0
        self.busy = True
        self.engine._at(t + tx, self._depart, None)

    def _depart(self, t: float, _arg) -> None:
        flow, data, t_in = self.q.popleft()
        self.backlog -= len(data)
        self.stats.queue_delay.add(t - t_in)
        if self.q:
            self._start(t)  # back to back, in virtual time: timer lateness never accumulates
        else:
            self.busy = False
        self._after_queue(flow, data, t, t_in)

    def _after_queue(self, flow: _Flow, data: bytes, t: float, t_in: float) -> None:
        if not self.has_delay:
            self.engine._send(self, flow, data, t_in, t)
            return
        imp = self.imp
        d = imp.delay
        if imp.jitter:
            if imp.dist == "uniform":
                d += self.rng_jitter.uniform(-imp.jitter, imp.jitter)
            else:
                d += self.rng_jitter.gauss(0.0, imp.jitter)
            if d < 0:
                d = 0.0
        release = t + d
        if not imp.reorder:
            if release < self.last_release:
                release = self.last_release
            self.last_release = release
        self.in_flight += 1
        self.engine._at(release, self._release, (flow, data, t_in))

    def _release(self, t: float, arg) -> None:
        self.in_flight -= 1
        flow, data, t_in = arg
        self.engine._send(self, flow, data, t_in, t)


_SWITCH_LOCK = threading.Lock()
_SWITCH_USERS = [0, None]  # [active NetEms that lowered the GIL switch interval, previous value]


class NetEm:
    """The emulator: a UDP proxy in a background thread. Use as a context manager (or start()/close()).

    listen / upstream   (host, port) or "host:port"; listen port 0 picks a free port (see .listen_addr)
    up / down           Impairment, spec string, dict of fields or None (clean)
    schedule            spec string or list (see parse_schedule); times are seconds after start()
    seed                base seed of every random stream
    per_flow            each client flow gets its own links (own bottleneck queue and random streams)
                        built from the current up/down impairments; default: one shared link per
                        direction (all flows share the bottleneck, like one access link)
    flows               callable (index, client_addr) → None | (up, down) giving a flow its own
                        impairments (each Impairment / spec / None for the default), or a dict
                        {index: (up, down)}
    upstream_bind       local host for the upstream sockets (default 127.0.0.1 for a loopback
                        upstream, else 0.0.0.0)
    stats_json          path: the stats are written there at close()
    gil_switch_interval while running, lower sys.setswitchinterval to this (seconds; None: leave it)
                        so the engine thread is not held up ~5 ms by busy Python threads
    nice                the engine thread's nice value (best effort, needs root/CAP_SYS_NICE for < 0;
                        None: leave it) so CPU-bound neighbours (a build, Chromium) delay it less
    """

    def __init__(self, listen: tuple[str, int] | str, upstream: tuple[str, int] | str,
                 up: Impairment | str | dict | None = None, down: Impairment | str | dict | None = None,
                 schedule: str | Iterable | None = None, seed: int = 0, per_flow: bool = False,
                 flows: Callable[[int, tuple], Any] | dict | None = None,
                 upstream_bind: str | None = None, stats_json: str | os.PathLike | None = None,
                 max_flows: int = 512, gil_switch_interval: float | None = 0.001,
                 nice: int | None = -10, name: str = "netem"):
        self.listen = parse_hostport(listen, "listen") if isinstance(listen, str) else (listen[0], int(listen[1]))
        self.upstream = (parse_hostport(upstream, "upstream") if isinstance(upstream, str)
                         else (upstream[0], int(upstream[1])))
        self._template = {UP: Impairment.parse(up), DOWN: Impairment.parse(down)}
        self.initial = dict(self._template)
        self.schedule = parse_schedule(schedule)
        self.seed = seed
        self.per_flow = per_flow
        if isinstance(flows, dict):
            table = dict(flows)
            flows = lambda index, addr: table.get(index)  # noqa: E731
        self._flow_rule = flows
        self.upstream_bind = upstream_bind or ("127.0.0.1" if self.upstream[0].startswith("127.")
                                               else ("::" if ":" in self.upstream[0] else "0.0.0.0"))
        self.stats_json = Path(stats_json) if stats_json else None
        self.max_flows = max_flows
        self.gil_switch_interval = gil_switch_interval
        self.nice = nice
        self.name = name
        self._family = socket.AF_INET6 if ":" in self.listen[0] else socket.AF_INET
        self._lock = threading.Lock()
        self._heap: list = []
        self._seq = itertools.count()
        self._dir_stats = {UP: _DirStats(), DOWN: _DirStats()}
        self._shared: dict[str, _Link] = {}
        self._flows: dict[tuple, _Flow] = {}
        self._flow_list: list[_Flow] = []
        self._schedule_log: list[dict] = []
        self._extra = {"flows_refused": 0, "stray_packets": 0, "upstream_unreachable": 0, "loops": 0}
        self._outage_until = {UP: 0.0, DOWN: 0.0}  # monotonic: every flow's black hole (outage without @N)
        self._newcomer_outages: list[tuple[float, tuple, dict]] = []   # (until, directions, record)
        self._events: list[dict] = []               # outages of every flow (not of one flow)
        self._thread: threading.Thread | None = None
        self._stopping = False
        self._error: BaseException | None = None
        self._cpu = 0.0
        self.t0: float | None = None  # time.monotonic() at start(); schedule times count from here
        self._lsock: socket.socket | None = None
        self._sel: selectors.BaseSelector | None = None
        self._switch_set = False

    # -- lifecycle --
    def __enter__(self) -> "NetEm":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.close()

    def start(self) -> "NetEm":
        if self._thread is not None:
            raise RuntimeError("NetEm already started")
        s = socket.socket(self._family, socket.SOCK_DGRAM)
        try:
            s.bind(self.listen)
        except OSError as exc:
            s.close()
            raise OSError(exc.errno, f"netem: cannot bind {self.listen[0]}:{self.listen[1]}: {exc.strerror}") from None
        s.setblocking(False)
        _big_buffers(s)
        self._lsock = s
        self.listen_addr = s.getsockname()[:2]
        self._wake_r, self._wake_w = socket.socketpair()
        self._wake_r.setblocking(False)
        self._sel = selectors.DefaultSelector()
        self._sel.register(s, selectors.EVENT_READ, self._on_listen)
        self._sel.register(self._wake_r, selectors.EVENT_READ, self._on_wake)
        for d in DIRECTIONS:
            self._shared[d] = _Link(self, d, self._template[d], f"{self.seed}:{d}:shared")
        self.t0 = time.monotonic()
        for c in self.schedule:
            self._at(self.t0 + c.t, self._apply_scheduled, c)
        if self.gil_switch_interval is not None:
            with _SWITCH_LOCK:
                if _SWITCH_USERS[0] == 0:
                    _SWITCH_USERS[1] = sys.getswitchinterval()
                if sys.getswitchinterval() > self.gil_switch_interval:
                    sys.setswitchinterval(self.gil_switch_interval)
                _SWITCH_USERS[0] += 1
                self._switch_set = True
        self._thread = threading.Thread(target=self._run, name=f"{self.name}-engine", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        """Stops the engine (packets still queued are discarded), writes stats_json, closes sockets.
        Raises RuntimeError if the engine thread had died with an exception."""
        if self._thread is None:
            return
        self._stopping = True
        try:
            self._wake_w.send(b"x")
        except OSError:
            pass
        self._thread.join(timeout=5)
        if self.stats_json is not None:
            self.write_json(self.stats_json)
        for f in self._flow_list:
            f.sock.close()
            for s in f.stale:
                s.close()
        self._lsock.close()
        self._wake_r.close()
        self._wake_w.close()
        self._sel.close()
        self._thread = None
        if self._switch_set:
            with _SWITCH_LOCK:
                _SWITCH_USERS[0] -= 1
                if _SWITCH_USERS[0] == 0 and _SWITCH_USERS[1] is not None:
                    sys.setswitchinterval(_SWITCH_USERS[1])
            self._switch_set = False
        if self._error is not None:
            raise RuntimeError(f"netem engine thread failed: {self._error!r}") from self._error

    # -- public API --
    def now(self) -> float:
        """Seconds since start() (the schedule's clock)."""
        return time.monotonic() - (self.t0 or time.monotonic())

    @property
    def flows(self) -> list[tuple]:
        """Client addresses in the order first seen (flow index = position)."""
        with self._lock:
            return [f.addr for f in self._flow_list]

    def set(self, direction: str, changes: str | dict, flow: int | None = None) -> None:
        """Apply changes now (thread-safe): net.set("down", "rate=500kbit"); direction up/down/both."""
        c = _change(0, direction, changes, flow)
        with self._lock:
            if self._thread is None:  # not running: change the starting impairments
                for d in (DIRECTIONS if c.direction == "both" else (c.direction,)):
                    self._template[d] = self._template[d].with_changes(c.changes)
                return
            self._apply(c, self.now(), manual=True)

    def impairment(self, direction: str, flow: int | None = None) -> Impairment:
        """The impairment in force now (of flow `flow` if it has its own links)."""
        with self._lock:
            if flow is not None and flow < len(self._flow_list):
                return self._flow_list[flow].links[direction].imp
            return self._template[direction]

    def outage(self, flow: int | Iterable[int] | None, seconds: float, direction: str = "both",
               at: float | None = None, newcomers: bool = False) -> dict:
        """A black hole for `seconds` (math.inf: until the emulator closes) of flow `flow` (a list:
        those flows; None: every flow, also those that appear meanwhile) in `direction` (up, down,
        both), starting now or at emulator time `at`. Packets queued or delayed in the emulator when
        it starts are lost too. `newcomers`: flows that appear during the outage are cut off until
        its end as well (a cut-off client that opens new sockets, e.g. to reconnect, stays cut off).
        Returns the event's record (filled in as it happens: start, end, per direction the first
        packet of these flows forwarded after the end, all in emulator seconds, and the newcomers),
        also listed in stats()."""
        return self._event(flow, ("outage", parse_time("outage", seconds)), direction, at, newcomers)

    def rebind(self, flow: int | None, gap: float = 0.0, at: float | None = None, straggler: bool = False) -> dict:
        """NAT rebinding of flow `flow` (None: every flow): its upstream socket is replaced by a new one,
        so the server sees the client from a new port; whatever the server sends to the old port
        is lost (counted as dropped_stale_port). With `gap` > 0 nothing of the flow passes for `gap`
        seconds first, and the new socket takes over exactly when the gap ends — or, with
        `straggler`, right after the first client packet after the gap, which still leaves from the
        old port (a packet in flight on the old mapping as the new one takes over: a real NAT may do
        this, and our timers once did it by chance, which kept the relay's path on the old port for
        a second). Returns the event's record."""
        gap = parse_time("rebind gap", gap)
        if not 0 <= gap < math.inf:
            raise SpecError(f"rebind gap {gap!r}: must be >= 0 and finite")
        return self._event(flow, ("rebind", gap), "both", at, straggler=straggler)

    def _event(self, flow, event: tuple[str, float], direction: str, at: float | None, newcomers: bool = False,
               straggler: bool = False) -> dict:
        d = _change(0, direction, "clean").direction   # validates the direction
        if flow is not None and not isinstance(flow, int):
            flow = tuple(sorted(set(int(f) for f in flow)))
        c = Change(0.0 if at is None else float(at), d, {}, flow, event, newcomers)
        record: dict = {"straggler": True} if straggler else {}
        with self._lock:
            if self._thread is None:
                raise RuntimeError("NetEm is not running: start() it first (or give the event in schedule=)")
            if at is None or self.t0 + at <= time.monotonic():
                self._apply(c, self.now(), manual=True, record=record)
            else:
                self._at(self.t0 + at, lambda _t, arg: self._apply(arg, self.now(), manual=True, record=record), c)
                self._wake_w.send(b"x")
        return record

    def stats(self) -> dict:
        """Counters per direction and per flow, queue delay / total delay / timer error percentiles (ms)."""
        with self._lock:
            out: dict[str, Any] = {
                "listen": _fmt_addr(getattr(self, "listen_addr", self.listen)),
                "upstream": _fmt_addr(self.upstream),
                "seed": self.seed, "per_flow": self.per_flow,
                "elapsed": round(self.now(), 6) if self.t0 else 0.0,
                "cpu_seconds": round(self._cpu, 4),
                "error": repr(self._error) if self._error else None,
            }
            links = list(self._shared.values()) + [l for f in self._flow_list if f.own_links
                                                   for l in f.links.values()]
            for d in DIRECTIONS:
                st = self._dir_stats[d]
                mine = [l for l in links if l.direction == d]
                doc = {"config": self._template[d].spec(), **st.as_dict()}
                doc["queue_bytes"] = sum(l.backlog for l in mine)
                doc["queue_packets"] = sum(len(l.q) for l in mine)
                doc["queue_bytes_max"] = st.queue_bytes_max
                doc["in_flight"] = sum(l.in_flight for l in mine)
                doc["queue_delay_ms"] = st.queue_delay.summary()
                doc["delay_ms"] = st.delay.summary()
                doc["timer_error_ms"] = st.timer_error.summary()
                out[d] = doc
            rel = self._rel
            out["flows"] = [{
                "index": f.index, "client": _fmt_addr(f.addr), "upstream_local": _fmt_addr(_sockname(f.sock)),
                "own_links": f.own_links, "created_s": rel(f.created),
                "events": [dict(e) for e in f.events],
                **{d: {"config": f.links[d].imp.spec(), **f.stats[d].as_dict(),
                       "last_in_s": rel(f.last_in[d]), "last_forwarded_s": rel(f.last_forwarded[d]),
                       **({"queue_bytes": f.links[d].backlog} if f.own_links else {})}
                   for d in DIRECTIONS}} for f in self._flow_list]
            out["events"] = [dict(e) for e in self._events]
            out["schedule"] = list(self._schedule_log)
            out["engine"] = dict(self._extra, timers_pending=len(self._heap))
            return out

    def _rel(self, t: float | None) -> float | None:
        """A monotonic time as emulator seconds (None stays None)."""
        return None if t is None or self.t0 is None else round(t - self.t0, 6)

    def write_json(self, path: str | os.PathLike) -> dict:
        doc = self.stats()
        Path(path).write_text(json.dumps(doc, indent=2))
        return doc

    # -- engine internals (engine thread, under self._lock) --
    def _at(self, t: float, fn, arg) -> None:
        heapq.heappush(self._heap, (t, next(self._seq), fn, arg))

    def _run(self) -> None:
        heap, lock, sel = self._heap, self._lock, self._sel
        mono, pop = time.monotonic, heapq.heappop
        cpu0 = time.thread_time()
        if self.nice is not None:  # best effort: this thread only (Linux nice is per thread)
            try:
                os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), self.nice)
                self._extra["nice"] = self.nice
            except (OSError, AttributeError) as exc:
                self._extra["nice"] = f"not set: {exc}"
        try:
            while not self._stopping:
                with lock:
                    now = mono()
                    while heap and heap[0][0] <= now + TIMER_SLACK:
                        t, _, fn, arg = pop(heap)
                        fn(t, arg)
                    timeout = (heap[0][0] - mono() - TIMER_SLACK) if heap else 0.25
                    self._extra["loops"] += 1
                    self._cpu = time.thread_time() - cpu0
                events = sel.select(timeout if timeout > 0 else 0)
                if events:
                    with lock:
                        for key, _mask in events:
                            key.data()
        except BaseException as exc:  # keep the failure for close()/stats(); never die silently
            self._error = exc
            import traceback
            traceback.print_exc()

    def _on_wake(self) -> None:
        try:
            while self._wake_r.recv(512):
                pass
        except BlockingIOError:
            pass

    def _on_listen(self) -> None:
        sock, flows, mono = self._lsock, self._flows, time.monotonic
        for _ in range(256):
            try:
                data, addr = sock.recvfrom(65536)
            except BlockingIOError:
                return
            except OSError:
                continue
            now = mono()
            flow = flows.get(addr)
            if flow is None:
                flow = self._new_flow(addr, now)
                if flow is None:
                    continue
            flow.links[UP].submit(flow, data, now)

    def _on_upstream(self, flow: _Flow, sock: socket.socket) -> None:
        mono = time.monotonic
        if flow.rebind_due is not None:
            self._due_rebind(flow, mono())
        stale = sock is not flow.sock   # replaced by a rebind: what the server sends to the old port is lost
        for _ in range(256):
            try:
                data = sock.recv(65536)
            except BlockingIOError:
                return
            except ConnectionRefusedError:  # ICMP port unreachable for an earlier send: server not there
                self._extra["upstream_unreachable"] += 1
                continue
            except OSError:
                return
            if stale:
                self._dir_stats[DOWN].dropped_stale_port += 1
                flow.stats[DOWN].dropped_stale_port += 1
                continue
            flow.links[DOWN].submit(flow, data, mono())

    def _upstream_socket(self) -> socket.socket | None:
        """A new upstream socket (its own local port) connected to the server; None on failure."""
        fam = socket.AF_INET6 if ":" in self.upstream[0] else socket.AF_INET
        s = socket.socket(fam, socket.SOCK_DGRAM)
        try:
            s.setblocking(False)
            _big_buffers(s)
            s.bind((self.upstream_bind, 0))
            s.connect(self.upstream)
        except OSError:
            s.close()
            return None
        return s

    def _watch(self, sock: socket.socket, flow: _Flow) -> None:
        self._sel.register(sock, selectors.EVENT_READ, lambda: self._on_upstream(flow, sock))

    def _new_flow(self, addr: tuple, now: float) -> _Flow | None:
        if addr[:2] == tuple(self.upstream):
            self._extra["stray_packets"] += 1
            return None
        if len(self._flow_list) >= self.max_flows:
            self._extra["flows_refused"] += 1
            return None
        s = self._upstream_socket()
        if s is None:
            self._extra["flows_refused"] += 1
            return None
        flow = _Flow(len(self._flow_list), addr, s, now)
        rule = self._flow_rule(flow.index, addr) if self._flow_rule else None
        if rule is not None or self.per_flow:
            up, down = rule if rule is not None else (None, None)
            flow.own_links = True
            for d, override in ((UP, up), (DOWN, down)):
                imp = self._template[d] if override is None else Impairment.parse(override)
                flow.links[d] = _Link(self, d, imp, f"{self.seed}:{d}:flow{flow.index}")
        else:
            flow.links = dict(self._shared)
        self._flows[addr] = flow
        self._flow_list.append(flow)
        self._watch(s, flow)
        if self._newcomer_outages:
            self._newcomer_outages = [o for o in self._newcomer_outages if o[0] > now]
            for until, dirs, record in self._newcomer_outages:
                for d in dirs:
                    flow.outage_until[d] = max(flow.outage_until[d], until)
                record["newcomers"].append(flow.index)
                flow.events.append(record)
                if not math.isinf(until):
                    flow.watching.append(record)
        return flow

    def _send(self, link: _Link, flow: _Flow, data: bytes, t_in: float, t_sched: float) -> None:
        d = link.direction
        now = time.monotonic()
        if flow.outage_until[d] > now or self._outage_until[d] > now:  # in flight when the path went
            link.stats.dropped_outage += 1
            flow.stats[d].dropped_outage += 1
            return
        try:
            if link.direction == UP:
                self._due_rebind(flow, now)
                flow.sock.send(data)
                if flow.rebind_due is not None and flow.rebind_due[2] and now >= flow.rebind_due[0]:
                    self._finish_rebind(now, flow.rebind_due[1])   # the straggler has left
            else:
                self._lsock.sendto(data, flow.addr)
        except OSError:
            link.stats.send_errors += 1
            flow.stats[link.direction].send_errors += 1
            return
        flow.last_forwarded[d] = now
        if flow.watching:
            self._first_after(flow, d, now)
        st = link.stats
        fs = flow.stats[link.direction]
        n = len(data)
        st.forwarded += 1
        st.bytes_forwarded += n
        fs.forwarded += 1
        fs.bytes_forwarded += n
        st.delay.add(now - t_in)
        st.timer_error.add(abs(now - t_sched))

    def _apply_scheduled(self, t: float, change: Change) -> None:
        self._apply(change, time.monotonic() - self.t0, manual=False)

    def _apply(self, c: Change, at: float, manual: bool, record: dict | None = None) -> None:
        if c.event is not None:
            self._apply_event(c, at, manual, record if record is not None else {})
            return
        dirs = DIRECTIONS if c.direction == "both" else (c.direction,)
        note = None
        for d in dirs:
            if c.flow is None:
                self._template[d] = self._template[d].with_changes(c.changes)
                self._shared[d].set_impairment(self._template[d])
                for f in self._flow_list:
                    if f.own_links:
                        f.links[d].set_impairment(f.links[d].imp.with_changes(c.changes))
            elif c.flow < len(self._flow_list) and self._flow_list[c.flow].own_links:
                link = self._flow_list[c.flow].links[d]
                link.set_impairment(link.imp.with_changes(c.changes))
            elif c.flow < len(self._flow_list):
                note = f"flow {c.flow} shares the link (use per_flow=True); not applied"
            else:
                note = f"flow {c.flow} not seen yet; not applied"
        entry = {"t": c.t, "applied_at": round(at, 6), "direction": c.direction, "flow": c.flow,
                 "changes": describe_changes(c.changes),
                 "manual": manual,
                 "now": {d: (self._template[d].spec() if c.flow is None or c.flow >= len(self._flow_list)
                             else self._flow_list[c.flow].links[d].imp.spec()) for d in dirs}}
        if note:
            entry["note"] = note
        self._schedule_log.append(entry)

    def _apply_event(self, c: Change, at: float, manual: bool, record: dict) -> None:
        """An outage or a rebind, now (engine thread or under the lock). `record` is filled in and
        kept in the flow's (or the emulator's) events, so the caller sees it completed later."""
        kind, seconds = c.event
        now = time.monotonic()
        dirs = DIRECTIONS if c.direction == "both" else (c.direction,)
        entry = {"t": c.t, "applied_at": round(at, 6), "direction": c.direction, "flow": c.flow,
                 "changes": describe_event(c.event), "manual": manual}
        indices = [] if c.flow is None else [c.flow] if isinstance(c.flow, int) else list(c.flow)
        if any(i >= len(self._flow_list) for i in indices):
            entry["note"] = f"flow {max(indices)} not seen yet; not applied"
            record.update(entry)
            self._schedule_log.append(entry)
            return
        flows = [self._flow_list[i] for i in indices] if c.flow is not None else list(self._flow_list)
        record.update(event=kind, flow=c.flow if not isinstance(c.flow, tuple) else list(c.flow),
                      direction=c.direction, start=self._rel(now))
        if kind == "outage":
            end = now + seconds
            record.update(seconds=None if math.isinf(seconds) else seconds,
                          end=None if math.isinf(seconds) else self._rel(end),
                          first_forwarded_after={d: None for d in dirs})
            if c.flow is None:
                for d in dirs:
                    self._outage_until[d] = max(self._outage_until[d], end)
                self._events.append(record)
            elif c.newcomers:
                record["newcomers"] = []
                self._newcomer_outages.append((end, dirs, record))
            for f in flows:
                for d in dirs:
                    f.outage_until[d] = max(f.outage_until[d], end)
                if c.flow is not None:
                    f.events.append(record)
                if not math.isinf(seconds) and record not in f.watching:
                    f.watching.append(record)
        else:  # rebind
            record.update(gap=seconds, rebinds=[])
            if c.flow is None:
                self._events.append(record)
            for f in flows:
                one = {"flow": f.index, "old_local": _fmt_addr(_sockname(f.sock)), "new_local": None,
                       "resumed_at": None}
                record["rebinds"].append(one)
                if c.flow is not None:
                    f.events.append(record)
                if f.sock not in f.stale:
                    f.stale.append(f.sock)   # stays registered: its traffic is counted and dropped
                if seconds > 0:
                    for d in DIRECTIONS:
                        f.outage_until[d] = max(f.outage_until[d], now + seconds)
                    # Exactly at the gap's end: the first packet after it finishes the rebind
                    # (`_due_rebind`); the timer is for a flow that sends nothing then (a late
                    # one, for a straggler that never comes).
                    straggler = bool(record.get("straggler"))
                    f.rebind_due = (now + seconds, (f, one, record), straggler)
                    self._at(now + seconds + (0.5 if straggler else 0.0), self._finish_rebind, (f, one, record))
                else:
                    self._finish_rebind(now, (f, one, record))
            record["end"] = self._rel(now + seconds)
            record["first_forwarded_after"] = {d: None for d in DIRECTIONS}
            for f in flows:
                f.watching.append(record)
        self._schedule_log.append(entry)

    def _due_rebind(self, flow: _Flow, now: float) -> None:
        """Finishes a rebind whose gap has ended, before `flow` forwards anything more — unless it waits
        for its straggler (the client's first packet after the gap leaves from the old port first)."""
        due = flow.rebind_due
        if due is not None and now >= due[0] and not due[2]:
            self._finish_rebind(now, due[1])

    def _finish_rebind(self, t: float, arg) -> None:
        flow, one, record = arg
        if flow.rebind_due is not None and flow.rebind_due[1][1] is one:
            flow.rebind_due = None
        if one["new_local"] is not None or "error" in one:
            return   # finished already (by the first packet after the gap)
        s = self._upstream_socket()
        if s is None:
            one["error"] = "no new upstream socket (bind/connect failed); the flow keeps its old one"
            flow.stale.remove(flow.sock)
            return
        flow.sock = s
        self._watch(s, flow)
        one["new_local"] = _fmt_addr(_sockname(s))
        # Timers fire up to TIMER_SLACK early, but the flow's outage lasts until t: that is when
        # its traffic can pass again (CI once read the 0.25 s gap as 0.2497 s).
        one["resumed_at"] = self._rel(max(time.monotonic(), t))

    def _first_after(self, flow: _Flow, direction: str, now: float) -> None:
        """Notes the first packet forwarded after each watched event ended, per direction."""
        keep = []
        for rec in flow.watching:
            end = rec.get("end")
            firsts = rec["first_forwarded_after"]
            if end is not None and direction in firsts and firsts[direction] is None and now - self.t0 >= end:
                firsts[direction] = self._rel(now)
            if any(v is None for v in firsts.values()):
                keep.append(rec)
        flow.watching = keep


def _big_buffers(s: socket.socket, size: int = 4 << 20) -> None:
    for opt_force, opt in ((getattr(socket, "SO_RCVBUFFORCE", None), socket.SO_RCVBUF),
                           (getattr(socket, "SO_SNDBUFFORCE", None), socket.SO_SNDBUF)):
        try:
            if opt_force is None:
                raise OSError
            s.setsockopt(socket.SOL_SOCKET, opt_force, size)
        except OSError:
            try:
                s.setsockopt(socket.SOL_SOCKET, opt, size)
            except OSError:
                pass


def _sockname(s: socket.socket):
    try:
        return s.getsockname()
    except OSError:
        return ("?", 0)


def _fmt_addr(a) -> str:
    host, port = a[0], a[1]
    return f"[{host}]:{port}" if ":" in str(host) else f"{host}:{port}"


# ---- a relay behind the emulator (for interop tests) ----------------------------------------------

def impaired_relay(binary, log_path, up=None, down=None, startup_timeout: float = 20, **netem_kwargs):
    """`swiftrtc serve` with its media UDP behind a NetEm: the relay binds 127.0.0.2:P and advertises
    127.0.0.1:P (--candidate 127.0.0.1), the proxy listens on 127.0.0.1:P. HTTP stays direct on
    127.0.0.1. Returns (relay, net): an interop.relay_helpers.Relay (with .netem set) and the running
    NetEm; close both (relay.close(); net.close())."""
    from interop.conftest import ManagedProcess
    from interop.peers import free_port
    from interop.relay_helpers import Relay, free_udp_port

    relay = Relay.__new__(Relay)
    relay.host = "127.0.0.1"
    relay.log_path = Path(log_path)
    relay.http_port = free_port()
    relay.udp_port = free_udp_port()
    net = NetEm(listen=("127.0.0.1", relay.udp_port), upstream=("127.0.0.2", relay.udp_port),
                up=up, down=down, **netem_kwargs).start()
    try:
        relay.process = ManagedProcess(
            [str(binary), "serve", "--http", f"{relay.host}:{relay.http_port}",
             "--udp", f"127.0.0.2:{relay.udp_port}", "--candidate", "127.0.0.1"], Path(log_path))
        try:
            relay.banner = relay.process.wait_for_line(r"^serve: API on .*$", startup_timeout).group(0)
        except Exception:
            relay.process.close()
            raise
    except Exception:
        net.close()
        raise
    relay.base = f"http://{relay.host}:{relay.http_port}"
    relay.netem = net
    return relay, net


# ---- load tools for measuring the emulator (used by test_netem.py and benchmarks) ------------------

def udp_echo(bind: tuple[str, int], stop: threading.Event | None = None, ready: Callable | None = None) -> None:
    """Echo every datagram back to its sender until stop is set (or forever)."""
    fam = socket.AF_INET6 if ":" in bind[0] else socket.AF_INET
    with socket.socket(fam, socket.SOCK_DGRAM) as s:
        _big_buffers(s)
        s.bind(bind)
        s.settimeout(0.1)
        if ready:
            ready(s.getsockname()[:2])
        while stop is None or not stop.is_set():
            try:
                data, addr = s.recvfrom(65536)
            except socket.timeout:
                continue
            try:
                s.sendto(data, addr)
            except OSError:
                pass


def rtt_probe(target: tuple[str, int], pps: float = 1000, seconds: float = 2.0, size: int = 200,
              drain: float = 0.5) -> dict:
    """Send `size`-byte datagrams at `pps` to an echo at `target` from one socket, one thread;
    returns RTT percentiles (ms), loss and reordering of the echoes."""
    fam = socket.AF_INET6 if ":" in target[0] else socket.AF_INET
    s = socket.socket(fam, socket.SOCK_DGRAM)
    _big_buffers(s)
    s.connect(target)
    s.setblocking(False)
    sel = selectors.DefaultSelector()
    sel.register(s, selectors.EVENT_READ)
    pad = b"\0" * max(0, size - 16)
    rtts, seen, reordered, highest = [], set(), 0, -1
    start = time.monotonic()
    interval = 1.0 / pps
    sent = 0
    total = int(pps * seconds)
    end = start + seconds + drain
    while True:
        now = time.monotonic()
        while sent < total and start + sent * interval <= now:
            try:
                s.send(sent.to_bytes(8, "big") + time.monotonic_ns().to_bytes(8, "big") + pad)
            except BlockingIOError:
                pass
            sent += 1
        if now > end or (sent >= total and len(seen) >= total):
            break
        next_send = start + sent * interval if sent < total else end
        for _key, _m in sel.select(max(0.0, min(next_send, end) - time.monotonic())):
            while True:
                try:
                    data = s.recv(65536)
                except (BlockingIOError, ConnectionRefusedError):
                    break
                t = time.monotonic_ns()
                seq = int.from_bytes(data[:8], "big")
                rtts.append((t - int.from_bytes(data[8:16], "big")) / 1e6)
                if seq < highest:
                    reordered += 1
                highest = max(highest, seq)
                seen.add(seq)
    sel.close()
    s.close()
    rtts.sort()
    pct = (lambda q: round(rtts[min(len(rtts) - 1, int(q * len(rtts)))], 3) if rtts else None)
    return {"sent": sent, "received": len(seen), "loss": 1 - len(seen) / sent if sent else None,
            "reordered": reordered, "pps": pps, "size": size,
            "rtt_ms": {"p50": pct(0.5), "p95": pct(0.95), "p99": pct(0.99), "max": rtts[-1] if rtts else None,
                       "min": rtts[0] if rtts else None}}


# ---- CLI ------------------------------------------------------------------------------------------

def _summary_line(doc: dict) -> str:
    parts = [f"t={doc['elapsed']:.1f}s"]
    for d in DIRECTIONS:
        s = doc[d]
        qd = s["queue_delay_ms"]["p95"]
        parts.append(f"{d}: in {s['packets_in']} fwd {s['forwarded']} loss {s['dropped_loss']} "
                     f"qdrop {s['dropped_queue']} q {s['queue_bytes']}B"
                     + (f" qdelay95 {qd:.1f}ms" if qd is not None else ""))
    parts.append(f"flows {len(doc['flows'])} cpu {doc['cpu_seconds']:.2f}s")
    return " | ".join(parts)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m interop.netem", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="UDP proxy with netem-style impairments (loss, Gilbert-Elliott, delay/jitter, "
                    "rate + bounded FIFO, schedules).", epilog=SPEC_HELP +
        "\nalso: --echo HOST:PORT (a UDP echo server), --probe HOST:PORT [--pps N --seconds S --size B]"
        " (RTT probe against an echo; prints JSON)")
    ap.add_argument("--listen", help="HOST:PORT the clients send to (e.g. 127.0.0.1:8000)")
    ap.add_argument("--upstream", help="HOST:PORT of the server (e.g. 127.0.0.2:8000)")
    ap.add_argument("--up", default="", help="client→server impairment spec")
    ap.add_argument("--down", default="", help="server→client impairment spec")
    ap.add_argument("--both", default="", help="spec applied to both directions (before --up/--down)")
    ap.add_argument("--schedule", action="append", default=[], help="T:DIR:SPEC;… (repeatable)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--per-flow", action="store_true", help="every client flow gets its own links")
    ap.add_argument("--stats-json", help="write the stats here (at exit and every --stats-interval)")
    ap.add_argument("--stats-interval", type=float, default=0, help="seconds between stats lines (0: none)")
    ap.add_argument("--duration", type=float, default=0, help="exit after this many seconds (0: run until signalled)")
    ap.add_argument("--nice", type=int, default=-10, help="nice value of the engine thread (best effort; default -10)")
    ap.add_argument("--quiet", action="store_true")
    ap.add_argument("--echo", metavar="HOST:PORT", help="run a UDP echo server instead")
    ap.add_argument("--probe", metavar="HOST:PORT", help="run an RTT probe against an echo instead")
    ap.add_argument("--pps", type=float, default=1000)
    ap.add_argument("--seconds", type=float, default=2)
    ap.add_argument("--size", type=int, default=200)
    args = ap.parse_args(argv)

    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        if args.echo:
            host, port = parse_hostport(args.echo, "--echo")
            udp_echo((host, port), stop, ready=lambda a: print(f"netem: echo on {_fmt_addr(a)}", flush=True))
            return 0
        if args.probe:
            print(json.dumps(rtt_probe(parse_hostport(args.probe, "--probe"), args.pps, args.seconds, args.size)),
                  flush=True)
            return 0
        if not args.listen or not args.upstream:
            ap.error("--listen and --upstream are required (or --echo / --probe)")
        both = parse_changes(args.both) if args.both else {}
        up = Impairment().with_changes(both).with_changes(args.up)
        down = Impairment().with_changes(both).with_changes(args.down)
        net = NetEm(listen=parse_hostport(args.listen, "--listen"), upstream=parse_hostport(args.upstream, "--upstream"),
                    up=up, down=down, schedule=";".join(args.schedule) or None, seed=args.seed,
                    per_flow=args.per_flow, stats_json=args.stats_json, gil_switch_interval=None,
                    nice=args.nice)
    except ValueError as exc:
        print(f"netem: error: {exc}\n(python -m interop.netem --help shows the spec syntax)", file=sys.stderr)
        return 2
    try:
        net.start()
    except OSError as exc:
        print(f"netem: error: {exc}", file=sys.stderr)
        return 1
    print(f"netem: listening on {_fmt_addr(net.listen_addr)} -> {_fmt_addr(net.upstream)} "
          f"(up: {up.spec()}; down: {down.spec()}; schedule: {len(net.schedule)} changes; seed {args.seed})",
          flush=True)
    deadline = time.monotonic() + args.duration if args.duration > 0 else None
    next_report = time.monotonic() + args.stats_interval if args.stats_interval > 0 else None
    while not stop.is_set():
        waits = [0.5]
        if deadline is not None:
            waits.append(deadline - time.monotonic())
        if next_report is not None:
            waits.append(next_report - time.monotonic())
        stop.wait(max(0.0, min(waits)))
        if deadline is not None and time.monotonic() >= deadline:
            break
        if next_report is not None and time.monotonic() >= next_report:
            next_report += args.stats_interval
            doc = net.write_json(args.stats_json) if args.stats_json else net.stats()
            if not args.quiet:
                print("netem: " + _summary_line(doc), file=sys.stderr, flush=True)
    doc = net.stats()
    try:
        net.close()
    except RuntimeError as exc:
        print(f"netem: error: {exc}", file=sys.stderr)
        return 1
    if not args.quiet:
        print("netem: " + _summary_line(doc), file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
