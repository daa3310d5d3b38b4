"""Interop tests: `swiftrtc serve` under the media-path attacks of the hardening issue (18).

- Forged STUN: an attacker with a session of its own spoofs a publisher's address (raw sockets,
  inside the test's network namespace) with checks that carry garbage or even valid
  MESSAGE-INTEGRITY for its own session, spoofed DTLS and RTP. The viewer's video must not stop,
  the publisher must not be replaced, and nothing DTLS is ever sent to an unverified address.
- Candidate floods: trickled PATCHes and offers with more candidates than a connection takes are
  refused with 4xx before they cost the media loop anything; a viewer of another stream keeps
  its frame rate.
Run inside the loopback-only namespace: interop/run.sh interop/test_relay_attacks.py
"""

from __future__ import annotations

import os
import re
import socket
import struct
import threading
import time

import pytest

from interop.conftest import write_json
from interop.relay_helpers import Relay, SwiftRun, http, stun_binding_request, summary


def client_hello() -> bytes:
    """A DTLS 1.2 ClientHello record (epoch 0) as a browser's starts: ECDHE-ECDSA/RSA-AES-GCM
    suites, use_srtp, supported groups. ~100 bytes: what drew 746 in the issue."""
    suites = bytes.fromhex("c02bc02fc00ac014")
    extensions = (bytes.fromhex("000e00050002000100")              # use_srtp: AES_CM_128_HMAC_SHA1_80, no MKI
                  + bytes.fromhex("000a000600040017001d")          # supported_groups: P-256, X25519
                  + bytes.fromhex("000b00020100"))                # ec_point_formats: uncompressed
    body = (b"\xfe\xfd" + os.urandom(32) + b"\x00" + b"\x00" + struct.pack(">H", len(suites)) + suites
            + b"\x01\x00" + struct.pack(">H", len(extensions)) + extensions)
    handshake = b"\x01" + len(body).to_bytes(3, "big") + b"\x00\x00" + b"\x00\x00\x00" + len(body).to_bytes(3, "big") + body
    return b"\x16\xfe\xff" + b"\x00\x00" + b"\x00" * 6 + struct.pack(">H", len(handshake)) + handshake


CLIENT_HELLO = client_hello()


def offer(direction: str, ufrag: str, pwd: str, candidates: int = 0) -> str:
    """A minimal video offer (VP8, H.264) with our own ICE credentials and `candidates` host candidates."""
    lines = ["v=0", "o=- 1 2 IN IP4 127.0.0.1", "s=-", "t=0 0", "a=group:BUNDLE 0",
             "m=video 9 UDP/TLS/RTP/SAVPF 96 97", "c=IN IP4 0.0.0.0", "a=mid:0", f"a={direction}",
             f"a=ice-ufrag:{ufrag}", f"a=ice-pwd:{pwd}", "a=fingerprint:sha-256 " + ":".join(["AB"] * 32),
             "a=setup:actpass", "a=rtcp-mux", "a=rtpmap:96 VP8/90000", "a=rtpmap:97 H264/90000",
             "a=fmtp:97 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"]
    lines += [candidate_line(i) for i in range(candidates)]
    return "\r\n".join(lines) + "\r\n"


def candidate_line(i: int) -> str:
    """A distinct host candidate, short (~45 bytes) so that 1,150 fit a 64 KB body as in the issue."""
    return f"a=candidate:{i} 1 udp 1 10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255} {1024 + i % 60000} typ host"


def answer_ice(sdp: str) -> tuple[str, str, int]:
    ufrag = re.search(r"a=ice-ufrag:(\S+)", sdp).group(1)
    pwd = re.search(r"a=ice-pwd:(\S+)", sdp).group(1)
    port = int(re.search(r"a=candidate:\S+ 1 udp \d+ \S+ (\d+) typ host", sdp).group(1))
    return ufrag, pwd, port


def udp_ports_of(pid: int) -> list[int]:
    """Local ports of the UDP sockets process `pid` holds (from /proc, in this namespace)."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    ports = []
    with open("/proc/net/udp") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[9] in inodes:
                ports.append(int(fields[1].split(":")[1], 16))
    return ports


class Spoofer:
    """Sends UDP datagrams with any source address (IP_HDRINCL raw socket; root, loopback)."""

    def __init__(self) -> None:
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_RAW, socket.IPPROTO_RAW)
        self.sent = 0

    def send(self, payload: bytes, src: tuple[str, int], dst: tuple[str, int]) -> None:
        udp = struct.pack(">HHHH", src[1], dst[1], 8 + len(payload), 0) + payload   # checksum 0: none (IPv4)
        ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, 20 + len(udp), 0, 0, 64, socket.IPPROTO_UDP, 0,
                         socket.inet_aton(src[0]), socket.inet_aton(dst[0]))
        self.sock.sendto(ip + udp, (dst[0], 0))
        self.sent += 1

    def close(self) -> None:
        self.sock.close()


@pytest.mark.timeout(120)
def test_forged_checks_do_not_redirect_a_publishers_media(swift_bin, artifact_dir, logs):
    """While a viewer plays: an anonymous WHEP session of the attacker's own, then 10 s of
    forged checks from the publisher's address (garbage MESSAGE-INTEGRITY, and valid
    MESSAGE-INTEGRITY for the attacker's session), spoofed ClientHellos and RTP. Then the
    attacker tries to publish the same name. The viewer's longest frame gap stays ≤ 500 ms, the
    publisher keeps its name (409), and the attacker's own unverified socket never gets DTLS."""
    relay = Relay(swift_bin, artifact_dir / "relay.log", extra_args=("--publish-token", "pub-secret"))
    logs.append(("relay output", relay.text))
    pub = SwiftRun(swift_bin, "publish", [relay.whip_url("live", "victim"), "--token", "pub-secret", "--source", "testsrc",
                                          "--size", "640x360", "--duration", "24"], artifact_dir, "publish")
    logs.append(("publish", pub.text))
    spoofer = Spoofer()
    try:
        relay.wait_event(r"publisher \S+ connected \(live/victim\)", timeout=15)
        player = SwiftRun(swift_bin, "play", [relay.whep_url("live", "victim"), "--duration", "18"], artifact_dir, "play")
        logs.append(("play", player.text))
        relay.wait_event(r"player \S+ connected \(live/victim\)", timeout=15)
        ports = [p for p in udp_ports_of(pub.pid) if p != relay.udp_port]
        assert ports, "the publisher holds no UDP socket"
        victim_addr = ("127.0.0.1", ports[0])
        server = (relay.host, relay.udp_port)

        # The attacker's own session: an anonymous WHEP POST (play is open).
        mine_ufrag, mine_pwd = "evil", "evilevilevilevilevilevil"
        reply = http("POST", relay.whep_url("live", "victim"), offer("recvonly", mine_ufrag, mine_pwd), "application/sdp")
        assert reply.status == 201, reply
        ufrag, pwd, port = answer_ice(reply.text)
        assert port == relay.udp_port

        # Amplification: from an address no authenticated check came from, a ClientHello (and a
        # check with garbage integrity before it) draws nothing but, at most, STUN.
        own = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        own.bind(("127.0.0.1", 0))
        own.settimeout(0.2)
        own.sendto(stun_binding_request(f"{ufrag}:{mine_ufrag}", b"garbage-garbage-garbage!"), server)
        for _ in range(5):
            own.sendto(CLIENT_HELLO, server)
        answered = []
        t_end = time.monotonic() + 1.0
        while time.monotonic() < t_end:
            try:
                data, _ = own.recvfrom(4096)
                answered.append(data)
            except TimeoutError:
                pass

        # 10 s of forged traffic from the publisher's address, ~60 datagrams a second.
        t0 = time.monotonic()
        rounds = 0
        while time.monotonic() - t0 < 10:
            spoofer.send(stun_binding_request(f"{ufrag}:{mine_ufrag}", b"garbage-garbage-garbage!"), victim_addr, server)
            spoofer.send(stun_binding_request(f"{ufrag}:{mine_ufrag}", pwd.encode()), victim_addr, server)
            if rounds % 10 == 0:
                spoofer.send(CLIENT_HELLO, victim_addr, server)
            spoofer.send(bytes([0x80, 0x60]) + os.urandom(98), victim_addr, server)
            rounds += 1
            time.sleep(0.05)
        # Now the publisher is far from silent: the attacker cannot take the name (open publish
        # would need the token anyway; with it, a live publisher still keeps its stream).
        takeover = http("POST", relay.whip_url("live", "victim"), offer("sendonly", "evl2", "evilevilevilevilevilevi2"),
                        "application/sdp", headers={"Authorization": "Bearer pub-secret"})
        play_code = player.wait(timeout=40)
        own.close()
    finally:
        spoofer.close()
        pub.close()
        relay.close()
    stats = player.stats()
    non_stun = [d[:16].hex() for d in answered if not d or d[0] > 3]
    doc = {"forgedDatagrams": spoofer.sent, "takeoverStatus": takeover.status, "takeoverReply": takeover.text[:200],
           "nonStunRepliesToUnverified": non_stun, "play": summary(stats)}
    write_json(artifact_dir / "forged-stun.json", doc)
    print(f"{spoofer.sent} forged datagrams: viewer longest gap {stats.get('longestFrameGapMs')} ms, "
          f"{stats.get('framesDecoded')} frames; takeover attempt {takeover.status}; "
          f"non-STUN replies to an unverified address: {len(non_stun)}")
    assert play_code == 0, player.text()[-2000:]
    assert non_stun == [], doc
    assert stats.get("longestFrameGapMs", 1e9) <= 500, doc
    assert takeover.status == 409, doc
    assert "replaced" not in relay.text(), relay.text()[-2000:]


@pytest.mark.timeout(120)
def test_candidate_floods_are_refused_and_viewers_keep_playing(swift_bin, artifact_dir, logs):
    """While a viewer plays: three WHEP sessions of an attacker trickle PATCHes of 1,100 fresh
    candidates each for 8 s, plus offers carrying 1,200 candidates. Every over-cap request gets
    a 4xx that says so; a PATCH within the cap is taken until the connection's cap is reached;
    the viewer's longest frame gap stays ≤ 500 ms."""
    relay = Relay(swift_bin, artifact_dir / "relay.log")
    logs.append(("relay output", lambda: relay.text()[-5000:]))
    pub = SwiftRun(swift_bin, "publish", [relay.whip_url("live", "calm"), "--source", "testsrc", "--size", "640x360",
                                          "--duration", "22"], artifact_dir, "publish")
    logs.append(("publish", pub.text))
    statuses: dict[int, int] = {}
    errors: list[str] = []
    try:
        relay.wait_event(r"publisher \S+ connected \(live/calm\)", timeout=15)
        player = SwiftRun(swift_bin, "play", [relay.whep_url("live", "calm"), "--duration", "16"], artifact_dir, "play")
        logs.append(("play", player.text))
        relay.wait_event(r"player \S+ connected \(live/calm\)", timeout=15)
        sessions = []
        for n in range(3):
            reply = http("POST", relay.whep_url("live", "calm"), offer("recvonly", f"fl{n:02d}", "floodfloodfloodfloodfloo"),
                         "application/sdp")
            assert reply.status == 201, reply
            sessions.append(reply.headers.get("Location"))

        def fragment(ufrag: str, start: int, count: int) -> str:
            return (f"a=ice-ufrag:{ufrag}\r\na=ice-pwd:floodfloodfloodfloodfloo\r\nm=video 9 UDP/TLS/RTP/SAVPF 0\r\na=mid:0\r\n"
                    + "".join(candidate_line(i) + "\r\n" for i in range(start, start + count)))

        def patch(n: int, body: str):
            return http("PATCH", relay.base + sessions[n], body, "application/trickle-ice-sdpfrag")

        # Within the cap: 60 fresh candidates are taken, the next 60 exceed the connection's 64.
        small = [patch(0, fragment("fl00", 0, 60)).status, patch(0, fragment("fl00", 60, 60))]
        assert small[0] == 204, small
        assert 400 <= small[1].status < 500 and "at most 64" in small[1].text, small[1]

        def flood(n: int) -> None:
            start = 100_000 * (n + 1)
            t_end = time.monotonic() + 8
            while time.monotonic() < t_end:
                try:
                    r = patch(n, fragment(f"fl{n:02d}", start, 1100))
                    statuses[r.status] = statuses.get(r.status, 0) + 1
                    if not 400 <= r.status < 500:
                        errors.append(f"PATCH answered {r.status}: {r.text[:100]}")
                    start += 1100
                except Exception as exc:   # noqa: BLE001 - reported below
                    errors.append(repr(exc))
        threads = [threading.Thread(target=flood, args=(n,)) for n in range(3)]
        for t in threads:
            t.start()
        big_offers = []
        for n in range(5):
            t0 = time.monotonic()
            r = http("POST", relay.whep_url("live", "calm"), offer("recvonly", f"bg{n:02d}", "bigbigbigbigbigbigbigbigb", 1200),
                     "application/sdp")
            big_offers.append((r.status, round((time.monotonic() - t0) * 1000), r.text[:120]))
        for t in threads:
            t.join()
        play_code = player.wait(timeout=40)
    finally:
        pub.close()
        relay.close()
    stats = player.stats()
    doc = {"patchStatuses": statuses, "errors": errors[:10], "bigOffers": big_offers, "play": summary(stats)}
    write_json(artifact_dir / "candidate-flood.json", doc)
    print(f"flood PATCHes {statuses}, offers {[(s, ms) for s, ms, _ in big_offers]}; viewer longest gap "
          f"{stats.get('longestFrameGapMs')} ms, {stats.get('framesDecoded')} frames")
    assert play_code == 0, player.text()[-2000:]
    assert errors == [] and sum(statuses.values()) >= 30 and set(statuses) == {400}, doc
    assert all(s == 400 and "at most" in text for s, _, text in big_offers), doc
    assert stats.get("longestFrameGapMs", 1e9) <= 500, doc
