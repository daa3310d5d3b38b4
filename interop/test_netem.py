"""Self-tests of interop/netem.py (the user-space UDP network emulator): real UDP sockets on loopback.

The "server" binds 127.0.0.2:P and the emulator listens on 127.0.0.1:P, as in front of `swiftrtc serve
--udp 127.0.0.2:P --candidate 127.0.0.1`. No peers needed; runs on the host or in interop/run.sh's
namespace:  interop/run.sh -k netem   or   .venv/bin/python -m pytest interop/test_netem.py
"""

from __future__ import annotations

import json
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from interop.netem import NetEm, Impairment, SpecError, parse_schedule, _big_buffers

REPO_ROOT = Path(__file__).resolve().parent.parent
HDR = struct.Struct("!IQ")  # sequence number, send time (time.monotonic_ns)


# ---- helpers ------------------------------------------------------------------------------------

def udp(bind: tuple[str, int] = ("127.0.0.1", 0)) -> socket.socket:
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    _big_buffers(s)
    s.bind(bind)
    return s


class Recorder:
    """Collects (recv time ns, data, source) from a socket in a thread until close()."""

    def __init__(self, sock: socket.socket, reply: bool = False, transform=None):
        self.sock = sock
        self.items: list[tuple[int, bytes, tuple]] = []
        self.reply = reply
        self.transform = transform or (lambda data, addr: data)
        self._stop = threading.Event()
        sock.settimeout(0.05)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                data, addr = self.sock.recvfrom(65536)
            except socket.timeout:
                continue
            except OSError:
                return
            self.items.append((time.monotonic_ns(), data, addr))
            if self.reply:
                try:
                    self.sock.sendto(self.transform(data, addr), addr)
                except OSError as exc:
                    self.items.append((time.monotonic_ns(), f"reply failed: {exc}".encode(), ("error", 0)))

    def wait_count(self, n: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.items) < n and time.monotonic() < deadline:
            time.sleep(0.01)

    def settle(self, quiet: float = 0.3, timeout: float = 10) -> None:
        """Wait until nothing arrived for `quiet` seconds."""
        deadline = time.monotonic() + timeout
        last = -1
        while time.monotonic() < deadline:
            n = len(self.items)
            if n == last:
                return
            last = n
            time.sleep(quiet)

    def close(self):
        self._stop.set()
        self._thread.join(timeout=2)

    def packets(self) -> list[tuple[int, int, int, int]]:
        """(seq, sent ns, received ns, size) of HDR-stamped packets, in arrival order."""
        return [(*HDR.unpack_from(d), t, len(d)) for t, d, _a in self.items if len(d) >= HDR.size]


def send_paced(sock: socket.socket, dest, count: int, pps: float, size: int, start_seq: int = 0) -> None:
    pad = b"\x5a" * (size - HDR.size)
    t0 = time.monotonic()
    for i in range(count):
        due = t0 + i / pps
        delay = due - time.monotonic()
        if delay > 0.0005:
            time.sleep(delay)
        sock.sendto(HDR.pack(start_seq + i, time.monotonic_ns()) + pad, dest)


@pytest.fixture
def server():
    """The upstream 'server' socket on 127.0.0.2:P (P = a free port); the emulator takes 127.0.0.1:P."""
    s = udp(("127.0.0.2", 0))
    yield s
    s.close()


def emulator(server: socket.socket, **kw) -> NetEm:
    port = server.getsockname()[1]
    return NetEm(listen=("127.0.0.1", port), upstream=("127.0.0.2", port), **kw)


def open_flow(net: NetEm, server: socket.socket, client: socket.socket) -> tuple:
    """The client says hello through the emulator; returns the flow's address as the server sees it."""
    server.settimeout(2)
    client.sendto(b"hello", net.listen_addr)
    data, addr = server.recvfrom(65536)
    assert data == b"hello"
    return addr


def loss_bursts(received: set[int], total: int) -> list[int]:
    bursts, run = [], 0
    for i in range(total):
        if i in received:
            if run:
                bursts.append(run)
            run = 0
        else:
            run += 1
    if run:
        bursts.append(run)
    return bursts


def pct(values, q):
    v = sorted(values)
    return v[min(len(v) - 1, int(q * len(v)))]


# ---- tests --------------------------------------------------------------------------------------

@pytest.mark.timeout(30)
def test_netem_clean_path_byte_exact_per_flow(server):
    """Two clients through a clean emulator: every datagram (0 B … 65507 B) arrives byte-exact, each
    client has its own upstream socket, and the server's replies reach the right client."""
    # The server answers with the reversed payload prefixed by the source it saw.
    echo = Recorder(server, reply=True, transform=lambda d, a: f"{a[0]}:{a[1]}|".encode() + d[::-1])
    sizes = [0, 1, 2, 100, 1200, 1472, 1500, 9000, 65000]
    with emulator(server) as net:
        a, b = udp(), udp()
        ra, rb = Recorder(a), Recorder(b)
        sent = {"a": [], "b": []}
        for i in range(60):
            for name, sock in (("a", a), ("b", b)):
                size = sizes[i % len(sizes)]
                data = os.urandom(size) if size else b""
                if size >= 1:
                    data = name.encode() + data[1:]
                sent[name].append(data)
                sock.sendto(data, net.listen_addr)
            if i % 10 == 9:
                time.sleep(0.005)
        ra.wait_count(60, 5)
        rb.wait_count(60, 5)
        ra.settle(0.2)
        stats = net.stats()
        ra.close(), rb.close(), echo.close()
        a.close(), b.close()

    # Upstream: byte-exact, from exactly two sources (one per client), both different from the clients.
    by_source: dict[tuple, list[bytes]] = {}
    for _t, d, src in echo.items:
        by_source.setdefault(src, []).append(d)
    assert len(by_source) == 2, f"expected one upstream socket per client, saw sources {list(by_source)}"
    got = sorted(by_source.values(), key=lambda lst: lst[1][:1])  # [0] may be the empty datagram
    assert got[0] == sent["a"], "client a's datagrams were not forwarded byte-exact / in order"
    assert got[1] == sent["b"], "client b's datagrams were not forwarded byte-exact / in order"
    # Downstream: each client got exactly the replies to its own datagrams.
    for name, rec in (("a", ra), ("b", rb)):
        replies = [d for _t, d, _src in rec.items]
        assert len(replies) == len(sent[name]), f"client {name}: {len(replies)} replies for {len(sent[name])}"
        sources = {r.split(b"|", 1)[0] for r in replies}
        assert len(sources) == 1, f"client {name} got replies meant for several flows: {sources}"
        assert [r.split(b"|", 1)[1] for r in replies] == [d[::-1] for d in sent[name]], \
            f"client {name}: replies not byte-exact"
        assert all(src == net.listen_addr for _t, _d, src in rec.items), "replies must come from the listen address"
    assert stats["up"]["forwarded"] == stats["up"]["packets_in"] == 120, stats["up"]
    assert stats["down"]["forwarded"] == 120, stats["down"]
    assert len(stats["flows"]) == 2 and all(f["up"]["forwarded"] == 60 for f in stats["flows"]), stats["flows"]
    assert stats["up"]["delay_ms"]["p50"] < 1.0, stats["up"]["delay_ms"]


@pytest.mark.timeout(30)
def test_netem_random_loss_rate_and_seed(server):
    """loss=5% over 4000 packets: 3.5–6.5% lost; the same seed loses the same packets."""
    def run(seed: int) -> tuple[set[int], dict]:
        sink = Recorder(server)
        with emulator(server, up="loss=5%", seed=seed) as net:
            c = udp()
            send_paced(c, net.listen_addr, 4000, pps=10000, size=200)
            sink.settle(0.2)
            stats = net.stats()
            c.close()
        sink.close()
        return {seq for seq, *_ in sink.packets()}, stats

    got1, stats = run(seed=7)
    lost = 4000 - len(got1)
    assert 0.035 <= lost / 4000 <= 0.065, f"lost {lost}/4000 = {lost / 40:.2f}% (want 3.5–6.5%)"
    assert stats["up"]["dropped_loss"] == lost, ("every loss is counted, no other drops", stats["up"])
    assert stats["up"]["forwarded"] == len(got1), stats["up"]
    got2, _ = run(seed=7)
    assert got2 == got1, "same seed, same packets: the losses must repeat"
    got3, _ = run(seed=8)
    assert got3 != got1, "a different seed should lose different packets"


@pytest.mark.timeout(30)
def test_netem_gilbert_elliott_bursts(server):
    """Gilbert-Elliott (down, p=3%, r=25%): losses come in bursts (mean > 1.5, expected 1/r = 4);
    Bernoulli loss at a similar rate gives mean bursts near 1."""
    results = {}
    for name, spec in (("ge", "ge=3%/25%"), ("bernoulli", "loss=10%")):
        client = udp()
        sink = Recorder(client)
        with emulator(server, down=spec, seed=3) as net:
            flow = open_flow(net, server, client)
            send_paced(server, flow, 4000, pps=10000, size=200)
            sink.settle(0.2)
            stats = net.stats()
        sink.close()
        client.close()
        got = {seq for seq, *_ in sink.packets()}
        bursts = loss_bursts(got, 4000)
        results[name] = {"lost": 4000 - len(got), "bursts": len(bursts),
                         "mean_burst": statistics.mean(bursts) if bursts else 0,
                         "dropped_loss": stats["down"]["dropped_loss"]}
    ge, bern = results["ge"], results["bernoulli"]
    print("netem loss bursts:", results)
    assert ge["dropped_loss"] == ge["lost"] > 0, results
    assert ge["mean_burst"] > 1.5, f"Gilbert-Elliott losses are not bursty: {results}"
    assert 0.05 < ge["lost"] / 4000 < 0.17, f"GE loss rate far from p/(p+r) = 10.7%: {results}"
    assert bern["mean_burst"] < 1.4, f"Bernoulli losses look bursty: {results}"


@pytest.mark.timeout(30)
def test_netem_delay_jitter_reorders(server):
    """delay=25ms, jitter=10ms (uniform) on 1 ms-spaced packets: median ≈ 25 ms, spread within
    15–35 ms (+ timer slack), packets reorder; with reorder=no the same jitter keeps the order."""
    sink = Recorder(server)
    with emulator(server, up="delay=25ms,jitter=10ms", seed=5) as net:
        c = udp()
        send_paced(c, net.listen_addr, 1000, pps=1000, size=200)
        sink.settle(0.2)
        stats = net.stats()
        c.close()
    sink.close()
    pk = sink.packets()
    assert len(pk) == 1000, f"{len(pk)} of 1000 delivered (no loss configured)"
    delays = [(rx - tx) / 1e6 for _seq, tx, rx, _n in pk]
    seqs = [seq for seq, *_ in pk]
    reordered = sum(1 for i in range(1, len(seqs)) if seqs[i] < max(seqs[:i][-50:]))
    p50 = statistics.median(delays)
    print(f"netem delay: p50 {p50:.2f} ms, min {min(delays):.2f}, max {max(delays):.2f}, p5 {pct(delays, .05):.2f}, "
          f"p95 {pct(delays, .95):.2f}, reordered {reordered}/1000; emulator timer error "
          f"{stats['up']['timer_error_ms']}")
    assert abs(p50 - 25) <= 2, f"median one-way delay {p50:.2f} ms, want 25 ± 2"
    # Releases may run up to 0.5 ms early (timer slack); a late one is the OS scheduling the emulator
    # late, which it measures itself (timer_error_ms), or this recorder's thread waking late, which
    # nothing measures (seen on a loaded CI machine: one packet 0.9 ms past the emulator's own
    # lateness). So: the 99th percentile within the range, a handful of stragglers at most, none far.
    late_ms = stats["up"]["timer_error_ms"]["max"]
    stragglers = [d for d in delays if d > 36 + late_ms]
    assert min(delays) >= 14.3 and pct(delays, 0.99) <= 36 and len(stragglers) <= 5 and max(delays) <= 45, \
        f"delays outside 15–35 ms: {min(delays):.2f}..{max(delays):.2f}, {len(stragglers)} past 36 ms + the " \
        f"emulator's lateness (timer error {stats['up']['timer_error_ms']})"
    assert pct(delays, 0.05) < 17.5 and pct(delays, 0.95) > 32.5, "jitter is not spread uniformly over ±10 ms"
    assert reordered > 50, f"jitter 10 ms ≫ 1 ms gap must reorder packets (netem does); reordered {reordered}"
    assert stats["up"]["timer_error_ms"]["p95"] < 1.0, stats["up"]["timer_error_ms"]

    sink = Recorder(server)
    with emulator(server, up="delay=25ms,jitter=10ms,reorder=no", seed=5) as net:
        c = udp()
        send_paced(c, net.listen_addr, 300, pps=1000, size=200)
        sink.settle(0.2)
        c.close()
    sink.close()
    seqs = [seq for seq, *_ in sink.packets()]
    assert seqs == list(range(300)), "reorder=no must keep the order"


@pytest.mark.timeout(30)
def test_netem_rate_limit_and_queue(server, artifact_dir):
    """down rate=1mbit,queue=200ms; the server sends 2 Mbit/s for 2 s: ≈ 1 Mbit/s delivered,
    queue delay bounded by ~200 ms, the excess dropped and counted."""
    client = udp()
    sink = Recorder(client)
    with emulator(server, down="rate=1mbit,queue=200ms", seed=1) as net:
        flow = open_flow(net, server, client)
        send_paced(server, flow, 416, pps=2e6 / 9600, size=1200)  # 1200 B at 2 Mbit/s for 2 s
        sink.settle(0.4)
        stats = net.write_json(artifact_dir / "netem-stats.json")
    sink.close()
    client.close()
    pk = sink.packets()
    arrivals = [rx / 1e9 for _s, _tx, rx, _n in pk]
    rate = (len(pk) - 1) * 1200 * 8 / (arrivals[-1] - arrivals[0])
    owd = [(rx - tx) / 1e6 for _s, tx, rx, _n in pk]
    down = stats["down"]
    print(f"netem rate: delivered {rate / 1e6:.3f} Mbit/s, {len(pk)}/416 packets, queue drops "
          f"{down['dropped_queue']}, queue delay {down['queue_delay_ms']}, max one-way {max(owd):.1f} ms")
    assert abs(rate - 1e6) <= 1e5, f"delivered {rate / 1e6:.3f} Mbit/s, want 1 ± 0.1"
    assert down["dropped_queue"] > 100, down
    assert down["dropped_queue"] + len(pk) == 416 == down["packets_in"], down
    assert down["forwarded"] == len(pk), down
    assert down["queue_delay_ms"]["max"] <= 201, down["queue_delay_ms"]
    assert down["queue_delay_ms"]["p95"] >= 150, ("the queue should fill up to ~200 ms", down["queue_delay_ms"])
    assert max(owd) <= 215, f"one-way delay {max(owd):.1f} ms exceeds the 200 ms queue"
    assert down["queue_bytes_max"] <= 25000, down
    assert down["queue_bytes"] == 0, "queue drained"


@pytest.mark.timeout(30)
def test_netem_schedule_takes_effect_on_time(server, artifact_dir):
    """down rate 2.5 Mbit/s → 500 kbit/s at t=1 → 2.5 Mbit/s at t=2 under a 3.5 Mbit/s load: the
    packet spacing changes within ±100 ms of the scheduled times, and the rates are right."""
    client = udp()
    sink = Recorder(client)
    schedule = "1:down:rate=500kbit;2:down:rate=2.5mbit"
    with emulator(server, down="rate=2.5mbit,queue=50ms", schedule=schedule, seed=1) as net:
        flow = open_flow(net, server, client)
        t0 = net.t0
        send_paced(server, flow, int(3.0 * 3.5e6 / 9600), pps=3.5e6 / 9600, size=1200)
        sink.settle(0.3)
        stats = net.write_json(artifact_dir / "netem-stats.json")
    sink.close()
    client.close()
    arr = [rx / 1e9 - t0 for _s, _tx, rx, _n in sink.packets()]
    gaps = [(arr[i], arr[i] - arr[i - 1]) for i in range(1, len(arr))]

    def rate_between(a, b):
        n = sum(1 for t in arr if a <= t < b)
        return n * 9600 / (b - a)

    # 2.5 Mbit/s: 3.84 ms per 1200 B packet; 500 kbit/s: 19.2 ms.
    def first(pred, after):
        for i, (t, g) in enumerate(gaps):
            if t > after and pred(g) and all(pred(g2) for _t2, g2 in gaps[i:i + 5]):
                return t
        return None
    t_slow = first(lambda g: g > 12e-3, 0.5)
    t_fast = first(lambda g: g < 8e-3, 1.5)
    rates = {"0.3-0.9": rate_between(0.3, 0.9), "1.2-1.9": rate_between(1.2, 1.9), "2.2-2.9": rate_between(2.2, 2.9)}
    log = stats["schedule"]
    print(f"netem schedule: slow at {t_slow}, fast at {t_fast}, rates {rates}, applied {[e['applied_at'] for e in log]}")
    assert [e["changes"] for e in log] == ["rate=500kbit", "rate=2.5mbit"], log
    assert all(abs(e["applied_at"] - e["t"]) < 0.01 for e in log), log
    assert t_slow is not None and abs(t_slow - 1.0) <= 0.1, f"rate drop seen at {t_slow} s, scheduled at 1 s"
    assert t_fast is not None and abs(t_fast - 2.0) <= 0.1, f"rate rise seen at {t_fast} s, scheduled at 2 s"
    assert abs(rates["0.3-0.9"] - 2.5e6) <= 2.5e5, rates
    assert abs(rates["1.2-1.9"] - 5e5) <= 5e4, rates
    assert abs(rates["2.2-2.9"] - 2.5e6) <= 2.5e5, rates


@pytest.mark.timeout(30)
def test_netem_bad_specs_raise_clear_errors(server):
    cases = {
        "loss=150%": "out of range",
        "loss=5": "% sign",
        "delay=25": "needs a time unit",
        "rate=1mbps": "ambiguous unit",
        "rate=0": "must be > 0",
        "bogus=1": "unknown key 'bogus'",
        "loss": "not KEY=VALUE",
        "ge=5%": "ge=P%/R%",
        "queue=200": "needs a unit",
        "loss=5%,loss=6%": "given twice",
        "dist=pareto": "dist=uniform or dist=normal",
    }
    for spec, words in cases.items():
        with pytest.raises(ValueError, match=words) as info:
            Impairment.parse(spec)
        assert spec in str(info.value), f"the message should quote the spec: {info.value}"
        assert isinstance(info.value, SpecError)
    for sched, words in {"x:up:rate=1mbit": "schedule time", "10:sideways:rate=1mbit": "up, down or both",
                         "10:up": "T:DIR:SPEC", "10:up:rate=fast": "not a rate"}.items():
        with pytest.raises(ValueError, match=words):
            parse_schedule(sched)
    with pytest.raises(ValueError, match="unknown impairment field"):
        Impairment.parse({"latency": 5})
    with pytest.raises(ValueError, match="needs a time unit"):
        emulator(server, up="delay=10")
    with pytest.raises(ValueError, match="HOST:PORT"):
        NetEm(listen="127.0.0.1", upstream="127.0.0.2:1")
    # Round trip of the canonical form.
    imp = Impairment.parse("loss=5%,ge=1%/30%,delay=25ms,jitter=10ms,dist=normal,rate=2.5mbit,queue=30kb,overhead=28")
    assert Impairment.parse(imp.spec()) == imp
    assert Impairment(loss="5%", delay="25ms", rate="1mbit", queue_time="200ms").spec() == \
        "loss=5%,delay=25ms,rate=1mbit,queue=200ms"
    # The CLI: exit status 2 and the message on stderr.
    bad = subprocess.run([sys.executable, "-m", "interop.netem", "--listen", "127.0.0.1:9", "--upstream",
                          "127.0.0.2:9", "--up", "loss=abc"], cwd=REPO_ROOT, capture_output=True, text=True, timeout=20)
    assert bad.returncode == 2 and "loss='abc'" in bad.stderr, (bad.returncode, bad.stderr)


@pytest.mark.timeout(30)
def test_netem_cli_forwards_and_writes_stats(server, tmp_path):
    port = server.getsockname()[1]
    stats_path = tmp_path / "stats.json"
    echo = Recorder(server, reply=True)
    proc = subprocess.Popen([sys.executable, "-m", "interop.netem", "--listen", f"127.0.0.1:{port}",
                             "--upstream", f"127.0.0.2:{port}", "--down", "delay=5ms", "--up", "loss=0%",
                             "--schedule", "0.2:up:loss=100%", "--stats-json", str(stats_path)],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        banner = proc.stdout.readline()
        assert banner.startswith(f"netem: listening on 127.0.0.1:{port} -> 127.0.0.2:{port}"), banner
        c = udp()
        rec = Recorder(c)
        for i in range(20):
            c.sendto(HDR.pack(i, time.monotonic_ns()), ("127.0.0.1", port))
        rec.wait_count(20, 3)
        time.sleep(0.35)  # past the outage scheduled at 0.2 s
        for i in range(20, 30):
            c.sendto(HDR.pack(i, time.monotonic_ns()), ("127.0.0.1", port))
        time.sleep(0.2)
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=10)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    rec.close(), echo.close()
    c.close()
    assert proc.returncode == 0, err
    got = [seq for seq, *_ in rec.packets()]
    assert got == list(range(20)), f"echoes {got}: first 20 pass, the rest hit the 100% loss scheduled at 0.2 s"
    doc = json.loads(stats_path.read_text())
    assert doc["up"]["packets_in"] == 30 and doc["up"]["dropped_loss"] == 10, doc["up"]
    assert doc["down"]["forwarded"] == 20 and doc["down"]["delay_ms"]["p50"] >= 5.0, doc["down"]
    assert doc["schedule"][0]["changes"] == "loss=100%", doc["schedule"]
    assert "up: in 30" in err, err


@pytest.mark.timeout(40)
def test_netem_overhead_clean_path_3000pps(server, artifact_dir):
    """The emulator's own cost on the clean path: 3000 pps of 1200 B each way (echo + probe in child
    processes, the emulator in this one); no loss, and well under 1 ms of added latency."""
    port = server.getsockname()[1]
    server.close()  # the echo child takes 127.0.0.2:port
    echo = subprocess.Popen([sys.executable, "-m", "interop.netem", "--echo", f"127.0.0.2:{port}"],
                            cwd=REPO_ROOT, stdout=subprocess.PIPE, text=True)

    def probe(host: str) -> dict:
        out = subprocess.run([sys.executable, "-m", "interop.netem", "--probe", f"{host}:{port}", "--pps", "3000",
                              "--seconds", "1.5", "--size", "1200"], cwd=REPO_ROOT, capture_output=True,
                             text=True, timeout=20)
        assert out.returncode == 0, out.stderr
        return json.loads(out.stdout)

    try:
        assert echo.stdout.readline().startswith("netem: echo on"), "echo did not start"
        direct = probe("127.0.0.2")
        with NetEm(listen=("127.0.0.1", port), upstream=("127.0.0.2", port)) as net:
            cpu0 = net.stats()["cpu_seconds"]
            proxied = probe("127.0.0.1")
            stats = net.stats()
    finally:
        echo.terminate()
        echo.wait(timeout=5)
    added = {q: round(proxied["rtt_ms"][q] - direct["rtt_ms"][q], 3) for q in ("p50", "p95", "p99")}
    cpu = stats["cpu_seconds"] - cpu0
    report = {"direct": direct, "proxied": proxied, "added_rtt_ms": added,
              "in_emulator_ms": {d: stats[d]["delay_ms"] for d in ("up", "down")},
              "cpu_seconds": cpu, "cpu_us_per_packet": round(cpu / max(1, stats["up"]["forwarded"] +
                                                                      stats["down"]["forwarded"]) * 1e6, 2)}
    (artifact_dir / "overhead.json").write_text(json.dumps(report, indent=2))
    print("netem overhead:", json.dumps(report))
    assert direct["loss"] == 0, direct
    assert proxied["received"] == proxied["sent"] == 4500, f"the emulator lost packets at 3000 pps: {proxied}"
    assert stats["up"]["forwarded"] == stats["down"]["forwarded"] == 4500, stats
    assert added["p50"] < 1.0, f"the emulator adds {added} ms RTT (two traversals) on the clean path"
    for d in ("up", "down"):
        assert stats[d]["delay_ms"]["p50"] < 0.5 and stats[d]["delay_ms"]["p95"] < 1.0, stats[d]["delay_ms"]


@pytest.mark.timeout(30)
def test_netem_per_flow_impairments(server):
    """flows= gives one client its own impairment; per_flow=True gives every flow its own link, and
    a schedule entry `up@0` changes flow 0 only."""
    sink = Recorder(server)
    with emulator(server, flows={1: ("loss=100%", None)}) as net:
        a, b = udp(), udp()
        for i in range(50):
            a.sendto(HDR.pack(i, 0), net.listen_addr)
            if i == 0:
                time.sleep(0.05)  # a is flow 0, b flow 1
            b.sendto(HDR.pack(1000 + i, 0), net.listen_addr)
        sink.settle(0.2)
        stats = net.stats()
    sink.close()
    got = sorted(seq for seq, *_ in sink.packets())
    assert got == list(range(50)), "flow 0 is clean, flow 1 loses everything"
    f0, f1 = stats["flows"]
    assert (f0["own_links"], f1["own_links"]) == (False, True), stats["flows"]
    assert f1["up"]["config"] == "loss=100%" and f1["up"]["dropped_loss"] == 50, f1
    assert stats["up"]["dropped_loss"] == 50 and stats["up"]["forwarded"] == 50, stats["up"]

    sink = Recorder(server)
    with emulator(server, per_flow=True, schedule="0.3:up@0:loss=100%") as net:
        a, b = udp(), udp()
        a.sendto(HDR.pack(0, 0), net.listen_addr)
        time.sleep(0.05)
        b.sendto(HDR.pack(1000, 0), net.listen_addr)
        time.sleep(0.4)
        for i in range(1, 21):
            a.sendto(HDR.pack(i, 0), net.listen_addr)
            b.sendto(HDR.pack(1000 + i, 0), net.listen_addr)
        sink.settle(0.2)
        stats = net.stats()
        imp0, imp1 = net.impairment("up", flow=0), net.impairment("up", flow=1)
    sink.close()
    got = sorted(seq for seq, *_ in sink.packets())
    assert got == [0] + list(range(1000, 1021)), f"after 0.3 s only flow 0 is cut off: {got}"
    assert (imp0.loss, imp1.loss) == (1.0, 0.0) and stats["schedule"][0]["flow"] == 0, stats["schedule"]


# ---- outages and NAT rebinding (issue 21) --------------------------------------------------------

class Pinger:
    """Sends an HDR-stamped datagram every `interval` s from `sock` to `dest` in a thread and records
    the echoes coming back: (seq, sent monotonic s, received monotonic s)."""

    def __init__(self, sock: socket.socket, dest, interval: float = 0.01):
        self.sock, self.dest, self.interval = sock, dest, interval
        self.sent: list[tuple[int, float]] = []
        self.echoes: list[tuple[int, float, float]] = []
        self.other: list[bytes] = []   # anything that is not an echo
        self._stop = threading.Event()
        sock.settimeout(0.005)
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        seq, next_send = 0, time.monotonic()
        while not self._stop.is_set():
            now = time.monotonic()
            if now >= next_send:
                self.sock.sendto(HDR.pack(seq, time.monotonic_ns()), self.dest)
                self.sent.append((seq, now))
                seq += 1
                next_send += self.interval
            try:
                data = self.sock.recv(65536)
            except (socket.timeout, BlockingIOError):
                continue
            except OSError:
                return
            if len(data) != HDR.size:
                self.other.append(data)
                continue
            s, tx = HDR.unpack_from(data)
            self.echoes.append((s, tx / 1e9, time.monotonic()))

    def close(self):
        self._stop.set()
        self._thread.join(timeout=2)


@pytest.mark.timeout(30)
def test_netem_outage_per_flow_and_direction(server):
    """A scheduled both-way outage of flow 0 (`0.3:both@0:outage=400ms`) and an API outage of flow 1's
    down direction only: nothing of flow 0 passes either way for 400 ms, flow 1's packets still reach
    the server but its replies are lost for 300 ms; both paths carry traffic again within one
    packet interval of the end, and stats() records each outage with its first packet after."""
    echo = Recorder(server, reply=True)
    with emulator(server, schedule="0.3:both@0:outage=400ms") as net:
        a, b = udp(), udp()
        pa = Pinger(a, net.listen_addr)
        time.sleep(0.05)   # a is flow 0
        pb = Pinger(b, net.listen_addr)
        time.sleep(max(0.0, 0.3 - net.now()))
        rec = net.outage(1, 0.3, direction="down")
        time.sleep(max(0.0, 0.8 - net.now()))
        pa.close(), pb.close()
        echo.settle(0.1)
        stats = net.stats()
        t0 = net.t0
    echo.close()
    a.close(), b.close()
    flows = {f["index"]: f for f in stats["flows"]}
    ev0 = flows[0]["events"][0]
    # What reached the server, by flow, as the times the client sent it (in the payload).
    sources = {}
    for _t, d, src in echo.items:
        sources.setdefault(src, []).append(HDR.unpack_from(d)[1] / 1e9 - t0)
    (src0, seen0), (src1, seen1) = sorted(sources.items(), key=lambda kv: kv[1][0])
    # Flow 0: nothing sent during its outage reached the server, none of its echoes came back then.
    assert not [t for t in seen0 if ev0["start"] + 0.01 <= t < ev0["end"] - 0.01], "flow 0 reached the server during its outage"
    assert [t for t in seen0 if t >= ev0["end"]], "flow 0 never came back"
    back0 = [rx - t0 for _s, _tx, rx in pa.echoes if rx - t0 >= ev0["start"] + 0.01]
    assert back0 and ev0["end"] <= back0[0] <= ev0["end"] + 0.1, \
        f"flow 0's first echo after the outage at {back0[:1]} s (ends at {ev0['end']} s)"
    # Flow 1, down only: the server kept hearing it; its echoes stopped for 300 ms.
    assert len([t for t in seen1 if rec["start"] + 0.01 <= t < rec["end"] - 0.01]) >= 10, \
        "flow 1's up direction must keep passing during a down-only outage"
    lost = [rx - t0 for _s, _tx, rx in pb.echoes if rec["start"] + 0.005 <= rx - t0 < rec["end"] - 0.005]
    assert not lost, f"flow 1 got echoes during its down outage: {lost[:5]}"
    back1 = [rx - t0 for _s, _tx, rx in pb.echoes if rx - t0 >= rec["end"]]
    assert back1 and back1[0] - rec["end"] <= 0.1, f"flow 1's echoes came back at {back1[:1]}, outage ended {rec['end']}"
    # The records.
    assert (ev0["event"], ev0["direction"], ev0["seconds"]) == ("outage", "both", 0.4), ev0
    assert all(0 <= ev0["first_forwarded_after"][d] - ev0["end"] <= 0.1 for d in ("up", "down")), ev0
    # (down: at most the replies to what passed just before the outage began)
    assert flows[0]["up"]["dropped_outage"] >= 20 and flows[0]["down"]["dropped_outage"] <= 3, flows[0]
    assert flows[1]["up"]["dropped_outage"] == 0 and flows[1]["down"]["dropped_outage"] >= 20, flows[1]
    assert set(rec["first_forwarded_after"]) == {"down"} and rec["first_forwarded_after"]["down"] >= rec["end"], rec
    assert abs(ev0["start"] - 0.3) < 0.1 and abs(ev0["end"] - ev0["start"] - 0.4) < 1e-3, ev0
    assert stats["up"]["dropped_outage"] == flows[0]["up"]["dropped_outage"], stats["up"]
    for f in flows.values():
        assert f["up"]["last_forwarded_s"] >= ev0["end"] and f["down"]["last_in_s"] >= ev0["end"], f
    assert sorted(e["changes"] for e in stats["schedule"]) == ["outage=300ms", "outage=400ms"], stats["schedule"]


@pytest.mark.timeout(30)
def test_netem_nat_rebinding(server):
    """rebind(flow, gap): after the gap the server sees the client from a new port (the same flow, one
    client); what was sent during the gap is lost, the server's datagrams to the old port are
    dropped (counted), replies to the new port reach the client. A scheduled `rebind` (no gap)
    switches at once."""
    echo = Recorder(server, reply=True)
    with emulator(server, schedule="0.9:both@0:rebind") as net:
        c = udp()
        p = Pinger(c, net.listen_addr)
        time.sleep(0.2)
        rec = net.rebind(0, gap=0.25)
        time.sleep(max(0.0, 0.7 - net.now()))
        old = rec["rebinds"][0]["old_local"]
        for _ in range(5):   # the server answers the old port: lost
            server.sendto(b"late reply", (old.split(":")[0], int(old.split(":")[1])))
        time.sleep(max(0.0, 1.1 - net.now()))
        p.close()
        echo.settle(0.1)
        stats = net.stats()
        t0 = net.t0
    echo.close()
    c.close()
    ports = []
    for t, _d, src in echo.items:
        if not ports or ports[-1][0] != src[1]:
            ports.append((src[1], round(t / 1e9 - t0, 3)))
    one = rec["rebinds"][0]
    assert [f"127.0.0.1:{port}" for port, _t in ports][:2] == [old, one["new_local"]] and len(ports) == 3, ports
    # (Bounds leave room for a loaded machine: the emulator's timers and the pinger's sleeps slip.)
    assert rec["end"] - 0.005 <= ports[1][1] <= rec["end"] + 0.1, f"the new port appeared at {ports[1][1]} s, gap until {rec['end']}"
    assert 0.9 <= ports[2][1] <= 1.0, f"the scheduled rebind (0.9 s) appeared at {ports[2][1]} s"
    gap = [s for s, tx in p.sent if rec["start"] + 0.01 <= tx - t0 < rec["end"] - 0.01]
    echoed = {s for s, _tx, _rx in p.echoes}
    assert gap and not echoed & set(gap), "datagrams sent during the gap must be lost"
    assert all(s in echoed for s, tx in p.sent if rec["end"] + 0.02 <= tx - t0 < 0.85), "after the gap everything passes"
    assert not p.other, f"the client got what the server sent to its old port: {p.other}"
    assert len(stats["flows"]) == 1, "a rebind keeps the flow (same client, same index)"
    f = stats["flows"][0]
    # The 5 late replies, and echoes on their way when the scheduled rebind struck.
    assert 5 <= f["down"]["dropped_stale_port"] <= 8 and stats["down"]["dropped_stale_port"] == \
        f["down"]["dropped_stale_port"], f["down"]
    assert f["upstream_local"] == f["events"][1]["rebinds"][0]["new_local"] != one["new_local"], f
    # The record's times are rounded to µs: 0.450445 - 0.200445 is 0.24999999999999997 in binary.
    assert round(one["resumed_at"] - rec["start"], 6) >= 0.25 and rec["first_forwarded_after"]["down"] >= rec["end"], rec
    assert [e["event"] for e in f["events"]] == ["rebind", "rebind"] and f["events"][1]["gap"] == 0.0, f["events"]


def test_netem_nat_rebinding_straggler(server):
    """rebind(flow, gap, straggler=True): the client's first datagram after the gap still reaches the
    server from the old port (in flight on the old mapping), every later one from the new port; and
    without it the new port takes over exactly at the gap's end, whatever the timers do."""
    for straggler in (True, False):
        echo = Recorder(server, reply=True)
        with emulator(server) as net:
            c = udp()
            p = Pinger(c, net.listen_addr)
            time.sleep(0.2)
            rec = net.rebind(0, gap=0.25, straggler=straggler)
            time.sleep(max(0.0, 0.8 - net.now()))
            p.close()
            echo.settle(0.1)
            t0 = net.t0
        echo.close()
        c.close()
        one = rec["rebinds"][0]
        after = [f"127.0.0.1:{a[1]}" for t, _d, a in echo.items if t / 1e9 - t0 >= rec["end"]]
        expected = ([one["old_local"]] if straggler else []) + [one["new_local"]] * (len(after) - straggler)
        assert len(after) > 5 and after == expected, (straggler, one, after[:5])


def test_netem_event_specs():
    s = parse_schedule("1:both@0:outage=3s;2:up:outage=inf;3:both@1:rebind=2s;4:both@2:rebind")
    assert [c.describe() for c in s] == ["1:both@0:outage=3s", "2:up:outage=inf", "3:both@1:rebind=2s",
                                         "4:both@2:rebind"]
    for sched, words in {"1:both@0:outage": "needs a duration", "1:both:outage=3s,loss=5%": "stands alone",
                         "1:both@0:outage=3": "needs a time unit", "1:both@0:rebind=inf": "finite"}.items():
        with pytest.raises(SpecError, match=words):
            parse_schedule(sched)


@pytest.mark.timeout(30)
def test_netem_outage_of_several_flows_cuts_newcomers(server):
    """outage([0, 1], newcomers=True): both flows and a client that appears during the outage (a cut-off
    client reconnecting from a new socket) are black-holed until the end; another flow is not."""
    echo = Recorder(server, reply=True)
    with emulator(server) as net:
        a, b, other = udp(), udp(), udp()
        pings = []
        for n, s in enumerate((a, b, other)):   # one at a time: flow n is pings[n] (first seen, first numbered)
            pings.append(Pinger(s, net.listen_addr))
            while len(net.flows) <= n:
                time.sleep(0.002)
        rec = net.outage([0, 1], 0.4, newcomers=True)
        time.sleep(0.1)
        late = udp()
        pings.append(Pinger(late, net.listen_addr))
        time.sleep(max(0.0, rec["end"] + 0.2 - net.now()))
        for p in pings:
            p.close()
        stats = net.stats()
        t0 = net.t0
    echo.close()
    for s in (a, b, other, late):
        s.close()
    by_flow = {f["index"]: f for f in stats["flows"]}
    assert rec["flow"] == [0, 1] and rec["newcomers"] == [3], rec
    for i, p in enumerate(pings):
        during = [rx - t0 for _s, _tx, rx in p.echoes if rec["start"] + 0.02 <= rx - t0 < rec["end"] - 0.02]
        after = [rx - t0 for _s, _tx, rx in p.echoes if rx - t0 >= rec["end"]]
        if i == 2:
            assert len(during) >= 10, "the flow not cut off must keep passing"
        else:
            assert not during, f"flow {i} passed during the outage"
        assert after and after[0] - rec["end"] <= 0.1, f"flow {i} after the outage: {after[:1]}"
    assert by_flow[3]["events"][0]["event"] == "outage" and by_flow[3]["up"]["dropped_outage"] >= 5, by_flow[3]
    assert all(rec["first_forwarded_after"][d] >= rec["end"] for d in ("up", "down")), rec
