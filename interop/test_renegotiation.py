"""Renegotiation against Chromium mid-call, Swift offering (`swiftrtc probe`; Chromium answers
every re-offer on the same connection with answerReoffer()):
- ICE restart (`--restart-ice-at`): new credentials both ways, DTLS stays, RTP keeps arriving at
  Chromium with no gap over 1 s, on a pair checked with the new credentials;
- a video m-line added (`--add-video-at`): RTP arrives on the new mid while the others go on."""
from __future__ import annotations

import re
import time

import pytest

from interop.conftest import run_probe, write_json
from interop.peers import ChromiumAnswerer
from interop.test_transport import load_probe_json


def ice_ufrags(sdp: str) -> set[str]:
    return set(re.findall(r"^a=ice-ufrag:(\S+)", sdp, re.M))


def longest_stall(samples: list[tuple[float, int]]) -> float:
    """Longest time between two samples where the packet count grew (the probe's end excluded)."""
    grew = [t for (_, n), (t, m) in zip(samples, samples[1:]) if m > n]
    return max((b - a for a, b in zip(grew, grew[1:])), default=float("inf"))


@pytest.mark.swift_offerer
@pytest.mark.timeout(90)
def test_swift_restarts_ice_with_chromium(swift_probe_bin, page, artifact_dir, logs):
    answerer = ChromiumAnswerer(page)
    logs.append(("chromium answerer", lambda: "\n".join(answerer.log)))
    samples: list[tuple[float, int]] = []
    raw: list[dict] = []

    def sample():
        s = answerer.stats()
        raw.append(s)
        if s and s.get("video"):
            samples.append((time.monotonic(), s["video"]["packetsReceived"]))
        return s

    try:
        code, output, _ = run_probe(swift_probe_bin, answerer.url, artifact_dir / "probe.json",
                                    artifact_dir / "probe.log", duration=5, sample=sample, sample_interval=0.1,
                                    extra_args=("--restart-ice-at", "2"))
        logs.append(("swiftrtc probe output", output))
    finally:
        answerer.close()
    write_json(artifact_dir / "chromium-samples.json", raw)
    (artifact_dir / "answerer.log").write_text("\n".join(answerer.log))
    assert code == 0, f"swiftrtc probe exited {code}:\n{output[-3000:]}"
    report = load_probe_json(artifact_dir / "probe.json", output)
    restart = report.get("iceRestart") or {}
    assert restart.get("ok") is True, f"no pair selected after the restart: {restart}"
    assert answerer.offers == 2, f"Chromium saw {answerer.offers} offers, expected the first and the re-offer"
    offers, answers = offers_and_answers(answerer)
    assert len(offers) == 2 and len(answers) == 2, answerer.log
    assert ice_ufrags(offers[0]).isdisjoint(ice_ufrags(offers[1])), "the re-offer must carry new credentials"
    assert ice_ufrags(answers[0]).isdisjoint(ice_ufrags(answers[1])), "Chromium's answer restarts too"
    states = [(s.get("transport") or {}).get("dtlsState") for s in raw if s]
    # Connected from the first sample that is until the last (before and after: the handshake and
    # the probe's own close), with no handshake in between — and across the restart at 2 s.
    assert "connected" in states, f"DTLS never connected: {states}"
    first, last = states.index("connected"), len(states) - 1 - states[::-1].index("connected")
    assert all(s == "connected" for s in states[first:last + 1]) and last - first >= 30, f"DTLS must stay up: {states}"
    stall = longest_stall(samples)
    (artifact_dir / "stall.txt").write_text(f"{stall:.3f} s; restart {restart}\n")
    assert stall <= 1.0, f"Chromium's video packetsReceived stalled {stall:.2f} s around the restart"
    assert samples[-1][1] > samples[0][1]


def offers_and_answers(answerer: ChromiumAnswerer) -> tuple[list[str], list[str]]:
    offers = [entry.split("\n", 1)[1] for entry in answerer.log if entry.startswith("offer:\n")]
    answers = [entry.split("\n", 1)[1] for entry in answerer.log if entry.startswith("answer:\n")]
    return offers, answers


def inbound(sample: dict | None, mid: str) -> int:
    for entry in (sample or {}).get("inbound") or []:
        if entry.get("mid") == mid:
            return entry.get("packetsReceived") or 0
    return 0


@pytest.mark.swift_offerer
@pytest.mark.timeout(90)
def test_swift_adds_video_with_chromium(swift_probe_bin, page, artifact_dir, logs):
    answerer = ChromiumAnswerer(page)
    logs.append(("chromium answerer", lambda: "\n".join(answerer.log)))
    try:
        code, output, samples = run_probe(swift_probe_bin, answerer.url, artifact_dir / "probe.json",
                                          artifact_dir / "probe.log", duration=4, sample=answerer.stats,
                                          sample_interval=0.2, extra_args=("--add-video-at", "1.5"))
        logs.append(("swiftrtc probe output", output))
    finally:
        answerer.close()
    write_json(artifact_dir / "chromium-samples.json", samples)
    assert code == 0, f"swiftrtc probe exited {code}:\n{output[-3000:]}"
    report = load_probe_json(artifact_dir / "probe.json", output)
    added = report.get("addedVideo") or {}
    assert added.get("direction") == "sendonly", f"the added m-line was not accepted: {added}"
    offers, answers = offers_and_answers(answerer)
    assert len(offers) == 2 and len(answers) == 2, answerer.log
    mids = [re.findall(r"^a=mid:(\S+)", sdp, re.M) for sdp in offers]
    assert mids[1][:len(mids[0])] == mids[0] and len(mids[1]) == len(mids[0]) + 1, f"m-lines must stay, one added: {mids}"
    assert mids[1][-1] == added["mid"]
    good = [s for s in samples if s and "error" not in s]
    assert inbound(good[-1], added["mid"]) > 20, f"Chromium got no RTP on the added mid {added['mid']}: {good[-1]}"
    first_video = next(m for m, line in zip(mids[0], re.findall(r"^m=(\w+)", offers[0], re.M)) if line == "video")
    at_add = next(inbound(s, first_video) for s in good if inbound(s, added["mid"]) > 0)
    assert inbound(good[-1], first_video) > at_add, "the first video m-line stopped when the second came"
