"""Interop tests: WHIP/WHEP trickle ICE and ICE restart by HTTP PATCH (RFC 9725 §4.3).

- `swiftrtc publish` (WHIP) → `swiftrtc serve` → `swiftrtc play` (WHEP). Both clients also
  gather a relay candidate from coturn (behind a 100 ms delay), which comes after the POST
  (srflx is not gathered on loopback), so it and the end of candidates travel by trickle PATCH;
  the relay logs them. Mid-stream the
  publisher restarts ICE by PATCH (stdin `restart-ice`), then the player: the player's decoded
  test pattern freezes no more than 1 s (its longest gap between decoded frames).
- Chromium as a WHEP player (interop/pages/whep_trickle.js): all its candidates by PATCH, then
  an ICE restart by PATCH mid-stream; its framesDecoded never stalls over 1 s.
- A raw HTTP client PATCHes bad fragments: 400 (malformed, with the reason), 412 (stale
  If-Match), 415 (wrong type), 404 (unknown resource); a good trickle gets 204 and a restart
  200 with the server's fragment.
Run inside the loopback-only namespace: interop/run.sh interop/test_whip_trickle.py -x
"""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from interop.conftest import write_json
from interop.netem import NetEm
from interop.relay_helpers import SwiftRun, close_page, http, poll, summary
from interop.test_relay import fake_offer, publish_args, relay, runs  # noqa: F401  (relay, runs: fixtures)
from interop.test_renegotiation import longest_stall
from interop.test_turn import PASSWORD, USER, turn_server  # noqa: F401  (turn_server: a fixture)

FRAG = "application/trickle-ice-sdpfrag"


@pytest.mark.timeout(90)
def test_trickle_then_restart_ice_mid_stream(relay, turn_server, swift_bin, runs, artifact_dir):
    # coturn behind 100 ms each way: the allocation (two round trips) ends well after the POST,
    # so its relay candidate is trickled whatever the machine's load.
    _, turn_port, _ = turn_server
    with NetEm(listen=("127.0.0.1", 0), upstream=("127.0.0.1", turn_port), up="delay=100ms", down="delay=100ms") as net:
        host, port = net.listen_addr
        run_trickle_and_restarts(relay, f"{host}:{port}", swift_bin, runs, artifact_dir)


def run_trickle_and_restarts(relay, turn_address, swift_bin, runs, artifact_dir):
    app, name = "live", "trickle"
    ice = ["--ice-server", f"turn:{turn_address}?transport=udp", "--ice-username", USER, "--ice-credential", PASSWORD]
    publisher = runs(SwiftRun(swift_bin, "publish", publish_args(relay.whip_url(app, name), duration=12) + ice,
                              artifact_dir, "publish", stdin_pipe=True))
    pub_connected = relay.wait_event(rf"publisher (\S+) connected \({app}/{name}\)", timeout=20)
    pub_id = pub_connected.group(1)
    player = runs(SwiftRun(swift_bin, "play", [relay.whep_url(app, name), "--duration", "8", *ice],
                           artifact_dir, "play", stdin_pipe=True))
    play_id = relay.wait_event(rf"player (\S+) connected \({app}/{name}\)", timeout=20).group(1)
    # Both trickled their relay candidate and then the end of candidates.
    for who in (pub_id, play_id):
        relay.wait_event(rf"\S+ {who} trickled 1 candidate\(s\)", timeout=10)
        relay.wait_event(rf"\S+ {who} trickled \d+ candidate\(s\), end of candidates", timeout=10)
    player.process.wait_for_line(r"play: connected", timeout=10)
    time.sleep(2.0)   # steady playback before the restarts

    restarts = {}
    for run, who, label in ((publisher, pub_id, "publish"), (player, play_id, "play")):
        t0 = time.monotonic()
        run.process.send_line("restart-ice")
        relay.wait_event(rf"\S+ {who} restarted ICE \(ufrag (\S+)\)", timeout=10)
        run.process.wait_for_line(rf"{label}: ICE restarted", timeout=10)
        restarts[label] = round(time.monotonic() - t0, 3)
        time.sleep(1.5)

    play_code = player.wait(timeout=30)
    pub_code = publisher.wait(timeout=30)
    play_stats, pub_stats = player.stats(), publisher.stats()
    s = summary(play_stats)
    write_json(artifact_dir / "summary.json", {"play": s, "publish": summary(pub_stats), "restartSeconds": restarts})
    print(f"trickle: publish trickled {pub_stats.get('trickledCandidates')}, play trickled "
          f"{play_stats.get('trickledCandidates')}; restarts (PATCH round trip) {restarts}; player longest frame "
          f"gap {s.get('longestFrameGapMs'):.0f} ms, {s.get('framesDecoded')} frames, freezes>500ms "
          f"{s.get('freezesOver500Ms')}")
    assert play_code == 0, f"swiftrtc play exited {play_code}:\n{player.text()[-3000:]}"
    assert pub_code == 0, f"swiftrtc publish exited {pub_code}:\n{publisher.text()[-3000:]}"
    assert pub_stats.get("trickledCandidates", 0) >= 1 and play_stats.get("trickledCandidates", 0) >= 1, (
        pub_stats.get("trickledCandidates"), play_stats.get("trickledCandidates"))
    assert s.get("patternVerified") is True, s
    assert s.get("framesDecoded", 0) >= 150, s
    assert s.get("longestFrameGapMs", 1e9) <= 1000, f"video froze {s.get('longestFrameGapMs')} ms: {s}"
    assert "restart" not in (player.text() + publisher.text()).lower().replace("ice restarted", ""), (
        "a client reported a problem with the restart")
    assert relay.alive()


@pytest.mark.timeout(45)
def test_bad_patches_are_refused_with_reasons(relay, artifact_dir):
    """A raw HTTP client: the session of a POSTed offer (whose peer never connects) gets PATCHes."""
    created = http("POST", relay.whip_url("live", "raw"), fake_offer(), "application/sdp")
    assert created.status == 201, created
    location, etag = created.headers.get("Location"), created.headers.get("ETag")
    assert created.headers.get("Accept-Patch") == FRAG, dict(created.headers)
    answer_ufrag = re.search(r"^a=ice-ufrag:(\S+)", created.text, re.M).group(1)
    assert etag == f'"{answer_ufrag}"', etag
    url = relay.base + location
    creds = "a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n"
    good = creds + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\na=candidate:1 1 udp 2130706431 127.0.0.1 9999 typ host\r\n"
    results = []

    def expect(label, reply, status, why=""):
        results.append({"case": label, "status": reply.status, "body": reply.text[:300]})
        assert reply.status == status, f"{label}: expected {status}: {reply}"
        assert why in reply.text, f"{label}: the reason should say {why!r}: {reply.text!r}"
        return reply

    expect("wrong type", http("PATCH", url, good, "application/sdp", headers={"If-Match": etag}), 415,
           "Content-Type must be application/trickle-ice-sdpfrag")
    expect("stale If-Match", http("PATCH", url, good, FRAG, headers={"If-Match": '"gone"'}), 412, "If-Match")
    expect("unknown resource", http("PATCH", relay.base + "/rtc/v1/whip/?token=" + "0" * 32, good, FRAG), 404)
    for label, body, why in (
            ("SDP, not a fragment", fake_offer(), "v= lines do not belong in a trickle-ice-sdpfrag"),
            ("m= without a=mid", creds + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=candidate:1 1 udp 1 1.2.3.4 5 typ host\r\n",
             "has no a=mid"),
            ("garbage line", creds + "hello\r\n", "SDP line 3"),
            ("bad candidate", creds + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:0\r\na=candidate:1 2 3\r\n", "candidate 1:"),
            ("unknown mid", creds + "m=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:5\r\na=candidate:1 1 udp 1 1.2.3.4 5 typ host\r\n",
             'no m-line with mid "5"'),
            ("password without ufrag", "a=ice-pwd:abcdefghijklmnopqrstuvwx\r\n", "a=ice-pwd without a=ice-ufrag"),
            ("same ufrag, other password", "a=ice-ufrag:abcd\r\na=ice-pwd:somethingElseEntirely00\r\n", "changes both"),
            ("empty", "", "empty trickle-ice-sdpfrag"),
    ):
        expect(label, http("PATCH", url, body, FRAG, headers={"If-Match": etag}), 400, why)
    ok = expect("trickle", http("PATCH", url, good + "a=end-of-candidates\r\n", FRAG, headers={"If-Match": etag}), 204)
    assert ok.headers.get("ETag") == etag
    relay.wait_event(r"trickled 1 candidate\(s\), end of candidates", timeout=5)
    restart = expect("restart", http("PATCH", url, "a=ice-ufrag:efgh\r\na=ice-pwd:zyxwvutsrqponmlkjihgfedc\r\n", FRAG,
                                     headers={"If-Match": "*"}), 200)
    assert restart.headers.get("Content-Type") == FRAG, dict(restart.headers)
    new_ufrag = re.search(r"^a=ice-ufrag:(\S+)", restart.text, re.M).group(1)
    assert new_ufrag != answer_ufrag and restart.headers.get("ETag") == f'"{new_ufrag}"', restart.text
    assert re.search(r"^a=candidate:.* typ host", restart.text, re.M), restart.text
    expect("old ETag after the restart", http("PATCH", url, good, FRAG, headers={"If-Match": etag}), 412)
    write_json(artifact_dir / "patches.json", results)
    assert relay.alive()


@pytest.mark.timeout(90)
def test_chromium_whep_player_trickles_and_restarts(relay, browser, swift_bin, runs, artifact_dir, logs):
    """Chromium as a WHEP player (interop/pages/whep_trickle.js on the relay's own origin): its
    offer carries no candidates, they all come by PATCH; then it restarts ICE by PATCH mid-stream
    against the relay's new credentials, and trickles the new generation's candidates."""
    app, name = "live", "chromium-trickle"
    runs(SwiftRun(swift_bin, "publish", publish_args(relay.whip_url(app, name), duration=40), artifact_dir, "publish"))
    relay.wait_event(rf"publisher \S+ connected \({app}/{name}\)", timeout=15)
    page = browser.new_page(relay.base + "/players/")
    logs.append(("chromium console", lambda: "\n".join(page.console)))
    logs.append(("whep_trickle.js log", lambda: json.dumps(page.evaluate("whepTrickle.log", timeout=5))))
    samples: list[tuple[float, int]] = []

    def sample(seconds: float):
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            samples.append((time.monotonic(), page.evaluate("whepTrickle.stats()", timeout=10)["frames"]))
            time.sleep(0.1)

    try:
        page.evaluate((Path(__file__).parent / "pages" / "whep_trickle.js").read_text())
        info = page.evaluate(f"whepTrickle.play({json.dumps(relay.whep_url(app, name))})", timeout=20)
        assert info["offerHadCandidates"] is False and info["acceptPatch"] == FRAG and info["etag"], info
        play_id = relay.wait_event(rf"player (\S+) connected \({app}/{name}\)", timeout=15).group(1)
        relay.wait_event(rf"player {play_id} trickled \d+ candidate\(s\)", timeout=10)
        relay.wait_event(rf"player {play_id} trickled \d+ candidate\(s\), end of candidates", timeout=10)
        _, waited = poll(lambda: page.evaluate("whepTrickle.stats()", timeout=10)["frames"], lambda f: f >= 30, timeout=15)
        sample(2.0)
        restart = page.evaluate("whepTrickle.restart()", timeout=20)
        relay.wait_event(rf"player {play_id} restarted ICE \(ufrag {re.escape(restart['serverUfrag'])}\)", timeout=10)
        sample(3.0)
        after = page.evaluate("whepTrickle.stats()", timeout=10)
        patches = page.evaluate("whepTrickle.patches", timeout=10)
        page.screenshot(str(artifact_dir / "chromium.png"))
    finally:
        close_page(browser, page)
    stall = longest_stall(samples)
    write_json(artifact_dir / "chromium.json", {"patches": patches, "restart": restart, "after": after,
                                                 "stallSeconds": stall, "samples": samples})
    print(f"Chromium WHEP trickle: {len(patches)} PATCHes {[p['status'] for p in patches]}; restart {restart}; "
          f"framesDecoded {after['frames']}, longest stall around the restart {stall:.2f} s (sampled every 0.1 s)")
    trickles = [p for p in patches if not p.get("restart")]
    restarts = [p for p in patches if p.get("restart")]
    assert trickles and all(p["status"] == 204 for p in trickles), patches
    assert len(restarts) == 1 and restarts[0]["status"] == 200 and restarts[0]["etag"] == f'"{restart["serverUfrag"]}"', patches
    assert restart["serverUfrag"] != info["etag"].strip('"'), "the relay restarted with new credentials"
    # Chromium gathered again after its restart and trickled that generation with the new ETag.
    assert any(p["etag"] == f'"{restart["serverUfrag"]}"' and p["status"] == 204 for p in trickles), patches
    assert after["state"] == "connected" and after["pairResponses"] > 0, after
    assert stall <= 1.0, f"Chromium's framesDecoded stalled {stall:.2f} s around the ICE restart"
