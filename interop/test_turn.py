"""TURN (RFC 8656) against coturn: Swift connects to aiortc and to Chromium only through relay candidates.

coturn (Debian `coturn`) is started here on 127.0.0.1 with a static user (and, for turns:, a TLS
listener with a server certificate from a throwaway CA made here with the openssl CLI). The direct path is
blocked twice: each peer gathers relay candidates only (`--ice-transport-policy relay` on the
Swift side, RTCIceTransportPolicy "relay" on aiortc's), and, inside the private network
namespace interop/run.sh makes, an nftables table drops every UDP datagram on loopback that
is not to or from the TURN server's listening or relay ports.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from pathlib import Path

import pytest

from interop.conftest import CI, ManagedProcess, require, run_probe, write_json
from interop.peers import AiortcAnswerer, free_port
from interop.test_transport import check_probe_json, growing, load_probe_json

USER, PASSWORD, REALM = "u", "p", "test"
PEER_USER = "peer"   # the other peer's own user, so coturn's log tells the two clients apart
# coturn's relay range, below Linux's ephemeral ports (32768–60999) where the peers' host sockets are.
RELAY_PORTS = (20000, 20999)


def udp_port_free(port: int) -> bool:
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.bind(("127.0.0.1", port))
            return True
        except OSError:
            return False


def tcp_accepts(port: int) -> bool:
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def make_test_pki(directory: Path) -> tuple[Path, Path, Path]:
    """A throwaway CA and a server certificate it signed for localhost and 127.0.0.1: (ca, cert, key)."""
    require(shutil.which("openssl") is not None, "openssl not found (apt-get install -y openssl)")
    ca, ca_key = directory / "turn-ca.pem", directory / "turn-ca.key"
    cert, key, csr = directory / "turn-server.pem", directory / "turn-server.key", directory / "turn-server.csr"
    ext = directory / "turn-server.ext"
    ext.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n")
    ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"]
    for args in (["req", "-x509", *ec, "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=SwiftRTC interop TURN CA",
                  "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"],
                 ["req", *ec, "-keyout", key, "-out", csr, "-subj", "/CN=localhost"],
                 ["x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert, "-days", "2",
                  "-extfile", ext]):
        subprocess.run(["openssl", *map(str, args)], check=True, capture_output=True, timeout=30)
    return ca, cert, key


class TurnServer(tuple):
    """(address, port, process), as the tests unpack it; with TLS also `tls_port` and `ca_file`."""
    tls_port: int | None = None
    ca_file: Path | None = None


#: Indirect parameter of `turn_server`: a TLS listener too (turns:).
TLS = {"tls": True}


@pytest.fixture
def turn_server(request, artifact_dir, logs):
    """coturn on a free port; indirect parametrization adds command-line options (a list), or
    `TLS` (a dict: {"tls": True, "args": [...]}) a TLS listener on a second port."""
    param = getattr(request, "param", [])
    tls = isinstance(param, dict) and param.get("tls", False)
    extra = list(param.get("args", []) if isinstance(param, dict) else param)
    binary = shutil.which("turnserver")
    require(binary is not None, "turnserver not found (apt-get install -y coturn; it is in the Makefile's APT_PACKAGES)")
    port = free_port()
    while not udp_port_free(port):
        port = free_port()
    tls_args, tls_port, ca = ["--no-tls"], None, None
    if tls:
        ca, cert, key = make_test_pki(artifact_dir)
        tls_port = free_port()
        while tls_port == port:
            tls_port = free_port()
        tls_args = ["--tls-listening-port", str(tls_port), "--cert", str(cert), "--pkey", str(key)]
    # -n: not Debian's /etc/turnserver.conf (it logs to syslog); the log goes to turnserver.out.
    # stdbuf: line-buffered, so the session lines are there when the test reads them.
    stdbuf = ["stdbuf", "-oL"] if shutil.which("stdbuf") else []
    args = [*stdbuf, binary, "-n", "-v", "--lt-cred-mech", "--user", f"{USER}:{PASSWORD}",
            "--user", f"{PEER_USER}:{PASSWORD}", "--realm", REALM,
            *tls_args, "--no-dtls", "--listening-ip", "127.0.0.1", "--listening-port", str(port),
            "--relay-ip", "127.0.0.1", "--min-port", str(RELAY_PORTS[0]), "--max-port", str(RELAY_PORTS[1]),
            # Both peers' relayed addresses are on 127.0.0.1: coturn refuses loopback peers otherwise.
            "--allow-loopback-peers", "--no-cli", "--log-file", "stdout",
            "--pidfile", str(artifact_dir / "turn.pid"), *extra]
    proc = ManagedProcess(args, artifact_dir / "turnserver.out")
    logs.append(("turnserver output", proc.text))
    deadline = time.monotonic() + 10
    while udp_port_free(port) or (tls_port is not None and not tcp_accepts(tls_port)):
        if proc.proc.poll() is not None or time.monotonic() > deadline:
            proc.close()
            pytest.fail(f"turnserver did not start on 127.0.0.1:{port} (TLS: {tls_port}):\n{proc.text()[-2000:]}")
        time.sleep(0.05)
    server = TurnServer((f"127.0.0.1:{port}", port, proc))
    server.tls_port, server.ca_file = tls_port, ca
    yield server
    proc.close()


def swift_session_log(proc, want: str, timeout: float = 3.0) -> str:
    """coturn's verbose lines about our user, once `want` is among them (the release comes last)."""
    deadline = time.monotonic() + timeout
    while True:
        lines = [l for l in proc.text().splitlines() if f"username=<{USER}>" in l or f"user <{USER}>" in l]
        text = "\n".join(lines)
        if want in text or time.monotonic() > deadline:
            return text
        time.sleep(0.05)


def only_loopback_here() -> bool:
    """True inside interop/run.sh's `unshare --net` (only lo): rules here touch nothing else."""
    try:
        out = subprocess.run(["ip", "-o", "link"], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.TimeoutExpired):
        return False
    names = [line.split(":")[1].strip() for line in out.splitlines() if ":" in line]
    return names == ["lo"]


@pytest.fixture
def direct_path_blocked(turn_server):
    """An nftables input-hook drop of UDP not to/from coturn; yields a function reading the drop count."""
    _, port, _ = turn_server
    nft = shutil.which("nft")
    if nft is None or not only_loopback_here():
        reason = ("nft not found (apt-get install -y nftables)" if nft is None
                  else "not inside interop/run.sh's private network namespace")
        if CI:
            pytest.fail(f"CI=true and the direct path cannot be blocked: {reason}")
        yield None   # relay-only policies on both sides still keep the peers off the direct path
        return
    lo, hi = RELAY_PORTS
    ruleset = f"""
table inet swiftrtc_turn {{
  chain input {{
    type filter hook input priority 0; policy accept;
    udp sport {{ {port}, {lo}-{hi} }} accept
    udp dport {{ {port}, {lo}-{hi} }} accept
    meta l4proto udp counter drop
  }}
}}
"""
    subprocess.run([nft, "-f", "-"], input=ruleset, text=True, check=True)

    def dropped() -> int:
        out = subprocess.run([nft, "list", "table", "inet", "swiftrtc_turn"], capture_output=True, text=True).stdout
        for line in out.splitlines():
            if "counter packets" in line:
                return int(line.split("counter packets")[1].split()[0])
        return 0
    try:
        # The block itself works: a datagram between two ephemeral loopback sockets is dropped.
        import socket
        with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as a, socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as b:
            a.bind(("127.0.0.1", 0))
            b.bind(("127.0.0.1", 0))
            b.settimeout(0.3)
            before = dropped()
            a.sendto(b"direct", b.getsockname())
            try:
                b.recv(16)
                pytest.fail("nftables did not drop direct UDP between two loopback sockets")
            except socket.timeout:
                pass
            assert dropped() == before + 1
        yield dropped
    finally:
        subprocess.run([nft, "delete", "table", "inet", "swiftrtc_turn"], check=False)


def relay_answerer(turn_address: str) -> AiortcAnswerer:
    from aiortc import RTCConfiguration, RTCIceServer
    from aiortc.rtcconfiguration import RTCIceTransportPolicy
    config = RTCConfiguration(iceServers=[RTCIceServer(urls=f"turn:{turn_address}", username=PEER_USER, credential=PASSWORD)],
                              iceTransportPolicy=RTCIceTransportPolicy.RELAY)
    return AiortcAnswerer(configuration=config)


def candidate_types(sdp: str) -> set[str]:
    return {line.split(" typ ")[1].split()[0] for line in sdp.splitlines() if line.startswith("a=candidate:")}


def turn_args(turn_address: str, password: str = PASSWORD, transport: str = "udp", ca_file: Path | None = None) -> list[str]:
    """Relay-only through `turn_address`; `transport` "tls" means a turns: URL (address = the TLS listener)."""
    url = f"turns:{turn_address}?transport=tcp" if transport == "tls" else f"turn:{turn_address}?transport={transport}"
    ca = ["--ice-ca-file", str(ca_file)] if ca_file else []
    return ["--ice-server", url, "--ice-username", USER, "--ice-credential", password, *ca, "--ice-transport-policy", "relay"]


def probe_through_turn(binary, answerer, name: str, turn_address: str, artifact_dir, logs, duration: float = 3,
                       sample=None, **turn) -> tuple[int, str, list]:
    """`swiftrtc probe` relay-only to `answerer` (its log and samples saved as `name`); closes the answerer."""
    logs.append((f"{name} answerer", lambda: "\n".join(answerer.log)))
    try:
        code, output, samples = run_probe(binary, answerer.url, artifact_dir / "probe.json", artifact_dir / "probe.log",
                                          duration=duration, sample=sample or answerer.stats,
                                          extra_args=turn_args(turn_address, **turn))
        logs.append(("swiftrtc probe output", output))
    finally:
        answerer.close()
    write_json(artifact_dir / f"{name}-samples.json", samples)
    (artifact_dir / "answerer.log").write_text("\n".join(answerer.log))
    return code, output, samples


@pytest.mark.swift_offerer
@pytest.mark.timeout(90)
@pytest.mark.parametrize("transport, turn_server", [("udp", []), ("tcp", []), ("tls", TLS)], indirect=["turn_server"],
                         ids=["udp", "tcp", "tls"])
def test_swift_and_aiortc_connect_through_coturn(transport, swift_probe_bin, need_aiortc, turn_server,
                                                 direct_path_blocked, artifact_dir, logs):
    """`transport`: how Swift reaches coturn (aiortc always uses UDP); relayed traffic is UDP either way.
    tls: turns:localhost:PORT, the certificate checked against the test CA (--ice-ca-file) and the name."""
    turn_address, _, turn_proc = turn_server
    answerer = relay_answerer(turn_address)
    swift_address = f"localhost:{turn_server.tls_port}" if transport == "tls" else turn_address
    code, output, samples = probe_through_turn(swift_probe_bin, answerer, "aiortc", swift_address, artifact_dir, logs,
                                               transport=transport, ca_file=turn_server.ca_file)
    offer = next((l for l in answerer.log if l.startswith("offer:")), "")
    answer = next((l for l in answerer.log if l.startswith("answer:")), "")
    # Both sides offered relay candidates only: no host path to fall back on.
    assert candidate_types(offer) == {"relay"}, f"Swift's offer:\n{offer}"
    assert candidate_types(answer) == {"relay"}, f"aiortc's answer:\n{answer}"
    assert code == 0, f"swiftrtc probe exited {code}:\n{output[-3000:]}"
    report = load_probe_json(artifact_dir / "probe.json", output)
    assert report["selectedLocalCandidateType"] == "relay", report
    # W3C relayProtocol and url of the selected local (relay) candidate.
    assert report["selectedLocalRelayProtocol"] == transport, report
    expected_url = (f"turns:{swift_address}?transport=tcp" if transport == "tls"
                    else f"turn:{turn_address}?transport={transport}")
    assert report["selectedLocalCandidateUrl"] == expected_url, report
    assert growing(samples, lambda s: s["packetsReceived"].get("audio")), samples
    assert growing(samples, lambda s: s["packetsReceived"].get("video")), samples
    check_probe_json(report)
    # Media went as ChannelData once the channel was bound (Send indications only before).
    assert report["transport"]["turnChannelDataSent"] > 100, report["transport"]
    assert report["transport"]["turnChannelDataReceived"] > 100, report["transport"]
    assert report["transport"]["turnAllocationsOverTCP"] == (1 if transport == "tcp" else 0), report["transport"]
    assert report["transport"]["turnAllocationsOverTLS"] == (1 if transport == "tls" else 0), report["transport"]
    # coturn's side of our allocation: challenged, allocated, permission and channel, released on close.
    released = f"refreshed, realm=<{REALM}>, username=<{USER}>, lifetime=0"
    session = swift_session_log(turn_proc, released)
    for line in ["incoming packet ALLOCATE processed, success", "incoming packet CREATE_PERMISSION processed, success",
                 "incoming packet CHANNEL_BIND processed, success", released]:
        assert line in session, f"coturn did not log {line!r} for our user:\n{session}"
    if transport == "tls":
        # coturn's session line names the TLS version and cipher it negotiated with us.
        assert f"username=<{USER}>, lifetime=600, cipher=" in session and "method=TLSv1." in session, session
    if direct_path_blocked is not None:
        write_json(artifact_dir / "nft.json", {"directUDPDropped": direct_path_blocked()})


@pytest.mark.swift_offerer
@pytest.mark.timeout(60)
def test_wrong_turn_password_fails_clearly(swift_probe_bin, need_aiortc, turn_server, artifact_dir, logs):
    turn_address, _, _ = turn_server
    started = time.monotonic()
    code, output, _ = probe_through_turn(swift_probe_bin, relay_answerer(turn_address), "aiortc", turn_address,
                                         artifact_dir, logs, duration=1, sample=lambda: {}, password="wrong")
    elapsed = time.monotonic() - started
    assert code == 1, f"probe with a wrong TURN password exited {code}:\n{output[-3000:]}"
    expected = f"TURN server {turn_address} rejected the credentials for user {USER} (401 Unauthorized)"
    assert expected in output, f"no clear error in:\n{output[-3000:]}"
    assert elapsed < 15, f"the failure took {elapsed:.1f} s to show: it should not wait for ICE timeouts"


@pytest.mark.swift_offerer
@pytest.mark.timeout(60)
@pytest.mark.parametrize("turn_server", [TLS], indirect=True)
def test_untrusted_turns_certificate_fails_clearly(swift_probe_bin, need_aiortc, turn_server, artifact_dir, logs):
    """Without --ice-ca-file the test CA is not trusted: the handshake fails, there is no relay candidate."""
    turn_address, _, turn_proc = turn_server
    tls_address = f"127.0.0.1:{turn_server.tls_port}"
    answerer = relay_answerer(turn_address)
    started = time.monotonic()
    code, output, _ = probe_through_turn(swift_probe_bin, answerer, "aiortc", tls_address, artifact_dir, logs,
                                         duration=1, sample=lambda: {}, transport="tls")
    elapsed = time.monotonic() - started
    assert code == 1, f"probe with an untrusted turns: certificate exited {code}:\n{output[-3000:]}"
    expected = (f"TURN server {tls_address}: TLS handshake with 127.0.0.1 failed: "
                "certificate verify failed (unable to get local issuer certificate)")
    assert expected in output, f"no clear error in:\n{output[-3000:]}"
    assert elapsed < 15, f"the failure took {elapsed:.1f} s to show: it should not wait for ICE timeouts"
    offer = next((l for l in answerer.log if l.startswith("offer:")), "")
    assert "relay" not in candidate_types(offer), f"a relay candidate without a trusted TURN server:\n{offer}"
    # coturn never saw an Allocate from us: nothing was sent before the certificate was checked.
    assert swift_session_log(turn_proc, "ALLOCATE", timeout=0.5) == "", turn_proc.text()[-3000:]


@pytest.mark.swift_offerer
@pytest.mark.timeout(90)
def test_swift_and_chromium_connect_through_coturn(swift_probe_bin, page, turn_server, direct_path_blocked,
                                                   artifact_dir, logs):
    from interop.peers import ChromiumAnswerer
    turn_address, _, _ = turn_server
    answerer = ChromiumAnswerer(page, configuration={
        "iceServers": [{"urls": f"turn:{turn_address}?transport=udp", "username": PEER_USER, "credential": PASSWORD}],
        "iceTransportPolicy": "relay"})
    code, output, samples = probe_through_turn(swift_probe_bin, answerer, "chromium", turn_address, artifact_dir, logs)
    offer = next((l for l in answerer.log if l.startswith("offer:")), "")
    assert candidate_types(offer) == {"relay"}, f"Swift's offer:\n{offer}"
    assert code == 0, f"swiftrtc probe exited {code}:\n{output[-3000:]}"
    report = load_probe_json(artifact_dir / "probe.json", output)
    assert report["selectedLocalCandidateType"] == "relay", report
    pairs = [s.get("pair") for s in samples if s and "error" not in s and s.get("pair")]
    assert pairs, f"Chromium never selected a pair: {samples[-3:]}"
    assert all(p["local"].startswith("relay ") and p["remote"].startswith("relay ") for p in pairs), pairs
    answer = next((l for l in answerer.log if l.startswith("answer:")), "")
    assert candidate_types(answer) == {"relay"}, f"Chromium's answer:\n{answer}"

    def inbound(kind):
        return lambda s: (s.get(kind) or {}).get("packetsReceived") if s else None
    assert growing(samples, inbound("audio")), f"Chromium audio packetsReceived not growing: {samples}"
    assert growing(samples, inbound("video")), f"Chromium video packetsReceived not growing: {samples}"
    check_probe_json(report)
    assert report["transport"]["turnChannelDataSent"] > 100, report["transport"]
    write_json(artifact_dir / "chromium-pair.json", pairs[-1])
    if direct_path_blocked is not None:
        write_json(artifact_dir / "nft.json", {"directUDPDropped": direct_path_blocked()})


@pytest.mark.swift_offerer
@pytest.mark.timeout(90)
@pytest.mark.parametrize("turn_server", [["--max-allocate-lifetime=6", "--stale-nonce=2"]], indirect=True)
def test_refresh_and_stale_nonce_against_coturn(swift_probe_bin, need_aiortc, turn_server, artifact_dir, logs):
    """coturn grants 6 s and lets nonces go stale after 2 s: our Refresh (due at 3 s) meets 438
    Stale Nonce, is retried with the new nonce, the call goes on, and close releases it."""
    turn_address, _, turn_proc = turn_server
    code, output, _ = probe_through_turn(swift_probe_bin, relay_answerer(turn_address), "aiortc", turn_address,
                                         artifact_dir, logs, duration=5)
    assert code == 0, f"swiftrtc probe exited {code}:\n{output[-3000:]}"
    report = load_probe_json(artifact_dir / "probe.json", output)
    check_probe_json(report)
    refreshed = f"refreshed, realm=<{REALM}>, username=<{USER}>, lifetime=6"
    released = f"refreshed, realm=<{REALM}>, username=<{USER}>, lifetime=0"
    session = swift_session_log(turn_proc, released)
    # coturn logs a 438 without the method; the Refresh due at 3 s is the only request then.
    stale = session.find("error 438: Stale nonce")
    assert stale >= 0, f"coturn never answered 438 Stale Nonce:\n{session}"
    assert session.find(refreshed, stale) > stale, f"the retried Refresh did not succeed:\n{session}"
    assert released in session, f"the allocation was not released on close:\n{session}"
