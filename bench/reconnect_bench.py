#!/usr/bin/env python3
"""Reconnect time (issue 21): how long after the path returns a viewer sees video again, over N runs.

`swiftrtc serve` behind interop/netem.py (as interop/test_outages.py sets it up), `swiftrtc publish`
1280x720@30 over SRS's API and, per run, a fresh `swiftrtc play`:
  outage_40s       the publisher's flows black-holed for 40 s (past the 30 s consent expiry; flows it
                   opens meanwhile too), then restored
  address_change   the publisher on 127.0.0.3 (or .4; its 127.0.0.1 flows do not reach the relay), the
                   address deleted and the other added (`ip addr` on lo), nothing from or to the old one
                   passing the proxy any more
  anchor           the shorter events of interop/test_outages.py, each run once per round on the Swift
                   publisher and on Chromium publishing its fake camera over WHIP (the anchor; both
                   at the same moment, each watched by its own `swiftrtc play`): an outage of 3 s, a
                   NAT rebinding after a gap (2 s plus 0-0.6 s from round to round, so no round
                   lines up with the 2 s after which a silent path is probed; the first packet after
                   the gap leaves from the old port), and an outage of 15 s. A single run of either swings by tens of ms,
                   so "ours at least as fast as Chromium" is judged here on p50 over the rounds.
  anchor_long      the 40 s outages of test_outages.py, each round both: the publishers' paths (ours and
                   Chromium over WHIP, each stream watched by a `swiftrtc play`), then the viewers'
                   (`swiftrtc play` and Chromium over WHEP, the anchor, of the Swift stream) cut off
                   at the same moment; all come back on new sessions, and the viewer that joins
                   second may wait out the publisher's 300 ms keyframe window.
  anchor_sessions  a publisher back on a new session: both publishers' paths go for good, 0.3 s later a
                   new `swiftrtc publish` starts and Chromium's page publishes again (the anchor); from
                   the new session's start to video at its stream's `swiftrtc play`.
A run's value is the time from the path's return (the change) to the end of the viewer's freeze
(interop.network_helpers.recovery); a run in which the video is not back within WATCH seconds counts
as "never" (and a publisher that exited is started again for the next run). Prints one JSON object
(the last stdout line; --json: also to that file): per scenario the runs, p50, p95 and how many
never came back; for the anchor per event ours and Chromium's, and whether ours' p50 is at most its.

There is no consent-timeout setting in the product, so the 40 s outage is real: ~45-56 s a run,
~8-9 min for 10 runs; the address changes ~8-17 s a run (a run that never comes back waits WATCH);
the anchor rounds ~35 s each, the long ones ~100 s, the new sessions' ~6 s. Needs a loopback-only network namespace for `ip addr`:
it re-executes itself under `unshare --net` unless already in one (root needed, as for make bench).
  .venv/bin/python bench/reconnect_bench.py --swiftrtc .build/release/swiftrtc --runs 10
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO_ROOT))

from interop.cdp import Browser  # noqa: E402
from interop.network_helpers import page_gaps, percentile, recovery, status_series  # noqa: E402
from interop.test_network import FAKE_CAMERA_FLAGS, Bed  # noqa: E402
from interop.test_outages import chromium_publisher, chromium_viewer, loopback_address, stats_or_empty, stop  # noqa: E402
from interop.relay_helpers import close_page  # noqa: E402
from interop.test_turn import only_loopback_here  # noqa: E402

OUTAGE = 40.0
WATCH = 10.0      # seconds after the path returns before a run counts as "never"
WARM = 2.0        # seconds of video before each event
LONG_WATCH = 8.0   # after a 40 s anchor outage (all come back on new sessions)
ANCHOR_WATCH = 5.0  # seconds after each anchor event's return (a freeze that ends later is not ~0.1 s)
ADDRESSES = ("127.0.0.3", "127.0.0.4")


def log(text: str) -> None:
    print(f"reconnect: {text}", file=sys.stderr, flush=True)


def video_back(run, since_elapsed: float) -> bool:
    """Whether the viewer's status lines show frames again after `since_elapsed` s of its run."""
    return any(r["fps"] > 0 and r["elapsed"] >= since_elapsed for r in status_series(run.text()))


class Scenario:
    """One relay + proxy and one publisher, kept across runs while the publisher lives."""

    def __init__(self, swift_bin: Path, directory: Path, stream: str):
        self.bin, self.dir, self.stream = swift_bin, directory, stream
        self.logs: list = []
        self.bed = Bed(swift_bin, directory, self.logs, {}, seed=31)
        self.pub = None
        self.restarts = 0
        self.browser = None
        self.pages: list = []
        self.extra: tuple[str, ...] = ()   # more `swiftrtc publish` options

    def ensure_publisher(self, role: str) -> None:
        if self.pub is not None and self.pub.process.proc.poll() is None:
            return
        if self.pub is not None:
            self.restarts += 1
            log(f"{self.stream}: the publisher exited ({self.pub.process.proc.returncode}); starting another")
        run = self.start_publisher(role, f"publish-{self.restarts}")
        deadline = time.monotonic() + 20
        while not any(f"connected (live/{self.stream})" in line and "publisher" in line
                      for line in self.bed.relay.text().splitlines()[-20:]):
            if time.monotonic() > deadline or run.process.proc.poll() is not None:
                raise RuntimeError(f"the publisher did not connect:\n{run.text()[-2000:]}")
            time.sleep(0.1)
        self.pub = run

    def start_publisher(self, role: str, name: str):
        """`swiftrtc publish` 1280x720@30 of this stream (and `self.extra`) as `role`, not waited for."""
        self.bed.roles.expect(role)
        return self.bed.swift("publish", [self.bed.relay.webrtc_url("live", self.stream), "--source", "testsrc", "--codec",
                                          "h264", "--size", "1280x720", "--fps", "30", "--duration", "3600", "--audio",
                                          "tone", *self.extra], name)

    def viewer(self, i: int | str, stream: str | None = None, role: str = "play"):
        self.bed.roles.expect(role)
        run = self.bed.swift("play", [self.bed.relay.webrtc_url("live", stream or self.stream), "--duration", "3600"],
                             f"play-{i}")
        deadline = time.monotonic() + 20
        while not video_back(run, 0):
            if time.monotonic() > deadline or run.process.proc.poll() is not None:
                raise RuntimeError(f"the viewer decoded nothing:\n{run.text()[-2000:]}")
            time.sleep(0.1)
        return run

    def watch(self, viewer, back_at: float) -> None:
        """Until the viewer shows frames after back_at (its status lines), at most WATCH s."""
        since = back_at - viewer.started
        while time.monotonic() < back_at + WATCH and not video_back(viewer, since + 0.5):
            time.sleep(0.2)
        time.sleep(1.0)   # the freeze's end lands in the gap list; a second of video after it

    def page(self, opened):
        """A Chromium page made by `opened(browser)` (-> (page, ...)), in the one browser (its fake
        camera at 30 fps), closed with the scenario."""
        if self.browser is None:
            self.browser = Browser.launch(extra_flags=FAKE_CAMERA_FLAGS)
        result = opened(self.browser)
        self.pages.append(result[0])
        return result

    def both_publishers(self, role: str, chromium_role: str) -> None:
        """Ours (as ensure_publisher) and Chromium's fake camera over WHIP as stream "chrome"."""
        self.ensure_publisher(role)
        _, connected = self.page(lambda b: chromium_publisher(b, self.bed, "chrome", chromium_role, self.logs))
        if not connected:
            raise RuntimeError("Chromium did not publish through the proxy")

    def close(self) -> None:
        for page in reversed(self.pages):
            close_page(self.browser, page)
        if self.browser is not None:
            self.browser.close()
        self.bed.close()


def outage_runs(swift_bin: Path, directory: Path, runs: int) -> list[dict]:
    sc = Scenario(swift_bin, directory, "outage")
    out = []
    try:
        for i in range(runs):
            sc.ensure_publisher("pub")
            viewer = sc.viewer(i)
            # Flows that appear from now on are the publisher's new sessions (its reconnections):
            # they must be labelled "pub" to be black-holed in the next run (they were "play", so
            # from the second run on the outage cut only the publisher's dead first flow: 0 s).
            sc.bed.roles.expect("pub")
            time.sleep(WARM)
            pubs = sc.bed.roles.flows_of("pub")
            rec = sc.bed.net.outage(pubs, OUTAGE, newcomers=True)
            lost, back = sc.bed.net.t0 + rec["start"], sc.bed.net.t0 + rec["end"]
            time.sleep(max(0.0, back - time.monotonic()))
            sc.watch(viewer, back)
            stop(viewer)
            r = recovery(stats_or_empty(viewer), lost, back)
            r["publisherExited"] = sc.pub.process.proc.poll() is not None
            out.append(r)
            log(f"outage 40 s, run {i + 1}/{runs}: " + ("never back" if r["seconds"] is None else f"{r['seconds']:.3f} s"))
    finally:
        sc.close()
    return out


def address_runs(swift_bin: Path, directory: Path, runs: int) -> list[dict]:
    for ip in ADDRESSES:
        loopback_address("del", ip, check=False)
    current = ADDRESSES[0]
    loopback_address("add", current)
    sc = Scenario(swift_bin, directory, "address")
    out = []
    try:
        for i in range(runs):
            role = f"pub{i}"
            other = ADDRESSES[1] if current == ADDRESSES[0] else ADDRESSES[0]
            # This run's publisher flows: only from `current` (127.0.0.1 does not reach the relay),
            # the viewer's only from 127.0.0.1.
            sc.bed.roles.unreachable(role, "127.0.0.1")
            sc.bed.roles.unreachable(role, other)
            sc.bed.roles.unreachable("play", current)
            sc.bed.roles.unreachable("play", other)
            sc.ensure_publisher(role)
            sc.bed.roles.expect(role)
            viewer = sc.viewer(i)
            time.sleep(WARM)
            moved = f"moved{i}"
            sc.bed.roles.unreachable(moved, "127.0.0.1")
            sc.bed.roles.unreachable(moved, current)
            on_old = [k for k, a in sc.bed.roles.addresses.items() if a[0] == current]
            sc.bed.roles.expect(moved)
            t = time.monotonic()
            loopback_address("del", current)
            loopback_address("add", other)
            if on_old:
                sc.bed.net.outage(on_old, float("inf"))
            sc.watch(viewer, t)
            stop(viewer)
            r = recovery(stats_or_empty(viewer), t, t)
            r.update(moved=f"{current} -> {other}", publisherExited=sc.pub.process.proc.poll() is not None)
            out.append(r)
            log(f"address change {current} -> {other}, run {i + 1}/{runs}: "
                + ("never back" if r["seconds"] is None else f"{r['seconds']:.3f} s"))
            if r["publisherExited"] or r["seconds"] is None:
                stop(sc.pub, timeout=5)   # started again on the new address next run
            current = other
    finally:
        sc.close()
        for ip in ADDRESSES:
            loopback_address("del", ip, check=False)
    return out


def anchor_runs(swift_bin: Path, directory: Path, runs: int) -> dict:
    """Per event ("outage 3 s", "NAT rebinding", "outage 15 s"): the rows of ours and of Chromium's anchor."""
    sc = Scenario(swift_bin, directory, "swift")
    bed = sc.bed
    try:
        sc.both_publishers("pub", "chpub")
        publishers = [bed.roles.wait_flow("pub"), bed.roles.wait_flow("chpub")]
        viewers = {who: sc.viewer(stream, stream) for who, stream in (("ours", "swift"), ("chromium", "chrome"))}
        time.sleep(WARM)
        events = []
        for i in range(runs):
            gap = 2.0 + 0.1 * (i % 7)
            for name, start in (("outage 3 s", lambda: [bed.net.outage(publishers, 3)]),
                                ("NAT rebinding", lambda: [bed.net.rebind(f, gap=gap, straggler=True) for f in publishers]),
                                ("outage 15 s", lambda: [bed.net.outage(publishers, 15)])):
                rec = start()[0]
                lost, back = bed.net.t0 + rec["start"], bed.net.t0 + rec["end"]
                events.append({"event": name, "round": i, "lostAt": lost, "backAt": back,
                               **({"gap": gap} if name == "NAT rebinding" else {})})
                time.sleep(max(0.0, back + ANCHOR_WATCH - time.monotonic()))
            log(f"anchor round {i + 1}/{runs} done")
        for run in viewers.values():
            stop(run)
        seen = {who: stats_or_empty(run) for who, run in viewers.items()}
        out: dict = {}
        for e in events:
            for who in viewers:
                r = recovery(seen[who], e["lostAt"], e["backAt"])
                r.update(round=e["round"], **({"gap": e["gap"]} if "gap" in e else {}))
                out.setdefault(e["event"], {}).setdefault(who, []).append(r)
        return out
    finally:
        sc.close()


def anchor_long_runs(swift_bin: Path, directory: Path, runs: int) -> dict:
    """Each round: the publishers' paths cut off for 40 s (`swiftrtc publish` and Chromium over WHIP, both
    watched by a `swiftrtc play`), then the viewers' (`swiftrtc play` and Chromium over WHEP, the anchor,
    of the Swift stream), each pair at the same moment; all come back on new sessions."""
    sc = Scenario(swift_bin, directory, "swift")
    bed = sc.bed
    try:
        sc.both_publishers("pub", "pub")
        ours, theirs = sc.viewer("swift", "swift", role="viewers"), sc.viewer("chrome", "chrome", role="play")
        view_page, offset = sc.page(lambda b: chromium_viewer(b, bed, "swift", "viewers", sc.logs))
        time.sleep(WARM)
        events = []
        for i in range(runs):
            for name, role in (("outage 40 s", "pub"), ("viewer outage 40 s", "viewers")):
                rec = bed.net.outage(bed.roles.flows_of(role), OUTAGE, newcomers=True)
                bed.roles.expect(role)   # their new sessions' flows, cut next round
                events.append((name, bed.net.t0 + rec["start"], bed.net.t0 + rec["end"]))
                time.sleep(max(0.0, events[-1][2] + LONG_WATCH - time.monotonic()))
            log(f"40 s outages, round {i + 1}/{runs} done")
        page_seen = page_gaps(view_page, offset)
        for run in (ours, theirs):
            stop(run)
        # What each side's viewer saw of each event: ours one `swiftrtc play` throughout.
        mine = stats_or_empty(ours)
        seen = {"ours": {"outage 40 s": mine, "viewer outage 40 s": mine},
                "chromium": {"outage 40 s": stats_or_empty(theirs), "viewer outage 40 s": page_seen}}
        out: dict = {}
        for n, (name, lost, back) in enumerate(events):
            for who in seen:
                out.setdefault(name, {}).setdefault(who, []).append(recovery(seen[who][name], lost, back) | {"round": n // 2})
        return out
    finally:
        sc.close()


def anchor_session_runs(swift_bin: Path, directory: Path, runs: int) -> dict:
    """A publisher back on a new session: each round both publishers' paths go for good and 0.3 s later
    a new `swiftrtc publish` (ours) starts and Chromium's page publishes again (the anchor); each stream
    watched by a `swiftrtc play` that stays on its session. From the new session's start to video."""
    sc = Scenario(swift_bin, directory, "swift")
    bed, old = sc.bed, None
    try:
        # Publishers that stand for clients gone for good: they do not reconnect by themselves.
        sc.extra = ("--reconnect", "off")
        sc.both_publishers("round0", "round0")
        old, page = sc.pub, sc.pages[0]
        viewers = {who: sc.viewer(stream, stream) for who, stream in (("ours", "swift"), ("chromium", "chrome"))}
        time.sleep(WARM)
        events = []
        for i in range(runs):
            rec = bed.net.outage(bed.roles.flows_of(f"round{i}"), float("inf"))
            time.sleep(0.3)
            new = sc.start_publisher(f"round{i + 1}", f"publish-{i + 1}")
            t_new = time.monotonic()
            page.evaluate("document.getElementById('publish').onclick(); true")   # a new RTCPeerConnection, WHIP POST
            events.append((bed.net.t0 + rec["start"], t_new))
            time.sleep(ANCHOR_WATCH)
            stop(old, timeout=5)
            old = new
            log(f"publisher back on a new session, round {i + 1}/{runs} done")
        for run in viewers.values():
            stop(run)
        seen = {who: stats_or_empty(run) for who, run in viewers.items()}
        out = {who: [recovery(seen[who], lost, t_new) | {"round": i} for i, (lost, t_new) in enumerate(events)]
               for who in viewers}
        return {"publisher back on a new session": out}
    finally:
        if old is not None:
            stop(old, timeout=5)
        sc.close()


def summary(rows: list[dict]) -> dict:
    values = [r["seconds"] for r in rows if r["seconds"] is not None]
    return {"runs": len(rows), "never": len(rows) - len(values), "seconds": [r["seconds"] for r in rows],
            "p50": percentile(values, 0.5), "p95": percentile(values, 0.95), "details": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--swiftrtc", required=True)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--only", default="outage_40s,address_change,anchor,anchor_long,anchor_sessions")
    ap.add_argument("--json", default=None, help="also write the result there")
    ap.add_argument("--artifacts", default=None, help="per-run logs (default: a temporary directory, removed)")
    args = ap.parse_args()
    if not only_loopback_here():
        if os.environ.get("SWIFTRTC_RECONNECT_NS"):
            print("reconnect: unshare --net gave no loopback-only namespace", file=sys.stderr)
            return 2
        command = " ".join(f"'{a}'" for a in [sys.executable, str(Path(__file__).resolve()), *sys.argv[1:]])
        os.environ["SWIFTRTC_RECONNECT_NS"] = "1"
        os.execvp("unshare", ["unshare", "--net", "bash", "-c", f"ip link set lo up && exec {command}"])
    swift_bin = Path(args.swiftrtc).resolve()
    if not swift_bin.is_file():
        print(f"reconnect: {swift_bin} not found", file=sys.stderr)
        return 2
    keep = args.artifacts is not None
    base = Path(args.artifacts) if keep else Path(tempfile.mkdtemp(prefix="reconnect-bench-"))
    doc, started = {}, time.monotonic()
    try:
        for name, fn in (("outage_40s", outage_runs), ("address_change", address_runs)):
            if name not in args.only.split(","):
                continue
            d = base / name
            d.mkdir(parents=True, exist_ok=True)
            t = time.monotonic()
            doc[name] = summary(fn(swift_bin, d, args.runs))
            doc[name]["wallSeconds"] = round(time.monotonic() - t, 1)
        for name, fn in (("anchor", anchor_runs), ("anchor_long", anchor_long_runs), ("anchor_sessions", anchor_session_runs)):
            if name not in args.only.split(","):
                continue
            d = base / name
            d.mkdir(parents=True, exist_ok=True)
            t = time.monotonic()
            doc[name] = {event: {who: summary(r) for who, r in by.items()} for event, by in fn(swift_bin, d, args.runs).items()}
            for event, by in doc[name].items():
                ours, theirs = by["ours"]["p50"], by["chromium"]["p50"]
                by["oursAtLeastAsFast"] = ours is not None and (theirs is None or ours <= theirs)
                log(f"{event}: ours p50 {ours}, Chromium p50 {theirs}")
            doc[name]["wallSeconds"] = round(time.monotonic() - t, 1)
    finally:
        if not keep:
            shutil.rmtree(base, ignore_errors=True)
    doc["wallSeconds"] = round(time.monotonic() - started, 1)
    text = json.dumps(doc, default=str)
    if args.json:
        Path(args.json).write_text(text + "\n")
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
