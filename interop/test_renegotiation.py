"""Renegotiation against Chromium mid-call, Swift offering (`swiftrtc probe`; Chromium answers
every re-offer on the same connection with answerReoffer()):
- ICE restart (`--restart-ice-at`): new credentials both ways, DTLS stays, RTP keeps arriving at
  Chromium with no gap over 1 s, on a pair checked with the new credentials;
- a video m-line added (`--add-video-at`): RTP arrives on the new mid while the others go on.
And step by step (`swiftrtc jsep`, the test carrying the SDP between the two):
- Swift stops its video transceiver, renegotiates, adds a new video track: its offer recycles the
  rejected m-line (same m-line count, new mid) and Chromium decodes the new track there;
- Chromium stops its video transceiver, renegotiates and adds a new video track: Swift answers the
  offer that recycles the m-line it had (a new transceiver with the new mid) and decodes it;
- Swift calls addTrack, then Chromium offers a new video m-line: Swift's transceiver is matched to
  it (no extra one), and video is decoded both ways on that one m-line."""
from __future__ import annotations

import json
import re
import time

import pytest

from interop.conftest import ManagedProcess, run_probe, write_json
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


# ---- step by step: `swiftrtc jsep` driven from here, SDP carried by the test -----------------

class SwiftJSEP:
    """One Swift PeerConnection (`swiftrtc jsep`): each call is one operation and its reply."""

    def __init__(self, binary, log_path):
        self.proc = ManagedProcess([str(binary), "jsep"], log_path, stdin_pipe=True)
        self.proc.wait_for_line(r"^jsep: ready$", timeout=20)
        self.count = 0

    def __call__(self, op: str, timeout: float = 25, **args) -> dict:
        self.count += 1
        self.proc.send_line(json.dumps({"id": self.count, "op": op, **args}))
        reply = json.loads(self.proc.wait_for_line(rf"^jsep {self.count}: (.*)$", timeout).group(1))
        if "error" in reply:
            raise AssertionError(f"swiftrtc jsep {op}: {reply['error']}")
        return reply

    def transceivers(self) -> list[dict]:
        return self("state")["transceivers"]

    def close(self) -> None:
        self.proc.close()


# Page-side helpers beside webrtc.js's answerOffer/answerReoffer (which answer with the fake camera).
CHROMIUM_JS = r"""
window.videoInbound = async () => {
  const out = {};
  (await window.pc.getStats()).forEach((s) => {
    if (s.type === 'inbound-rtp' && s.kind === 'video') {
      out[s.mid] = { framesDecoded: s.framesDecoded || 0, frameWidth: s.frameWidth || 0 };
    }
  });
  return out;
};
window.sections = () => ({
  local: window.pc.localDescription.sdp.match(/^m=.*$/gm),
  remote: window.pc.remoteDescription.sdp.match(/^m=.*$/gm),
  transceivers: window.pc.getTransceivers().map((t) => ({ mid: t.mid, currentDirection: t.currentDirection })),
});
window.offerAudio = async () => {
  const stream = await navigator.mediaDevices.getUserMedia({ audio: true, video: { width: 640, height: 480 } });
  window.camera = stream;
  const pc = new RTCPeerConnection({ iceServers: [] });
  window.pc = pc;
  watch(pc);
  pc.addTrack(stream.getAudioTracks()[0], stream);
  await pc.setLocalDescription();
  await waitGatheringComplete(pc);
  return pc.localDescription.sdp;
};
window.offerAudioVideo = async () => {
  await window.offerAudio();
  window.pc.addTrack(window.camera.getVideoTracks()[0], window.camera);
  await window.pc.setLocalDescription();
  await waitGatheringComplete(window.pc);
  return window.pc.localDescription.sdp;
};
window.stopVideo = async () => {
  window.pc.getTransceivers().find((t) => t.receiver.track.kind === 'video' && !t.stopped).stop();
  await window.pc.setLocalDescription();
  return window.pc.localDescription.sdp;
};
window.offerVideoToo = async () => {
  // A clone: the camera track may still belong to a sender that was stopped.
  window.pc.addTrack(window.camera.getVideoTracks()[0].clone(), window.camera);
  await window.pc.setLocalDescription();
  await waitGatheringComplete(window.pc);
  return window.pc.localDescription.sdp;
};
window.applyAnswer = async (sdp) => { await window.pc.setRemoteDescription({ type: 'answer', sdp }); return true; };
true
"""


def m_lines(sdp: str) -> list[str]:
    return re.findall(r"^m=.*$", sdp, re.M)


def mids_of(sdp: str) -> list[str]:
    return re.findall(r"^a=mid:(\S+)", sdp, re.M)


def bundle(sdp: str) -> list[str]:
    m = re.search(r"^a=group:BUNDLE (.*)$", sdp, re.M)
    return m.group(1).split() if m else []


def section(sdp: str, mid: str) -> str:
    """The text of the m-section with `mid`."""
    for part in re.split(r"(?=^m=)", sdp, flags=re.M)[1:]:
        if re.search(rf"^a=mid:{re.escape(mid)}\s*$", part, re.M):
            return part
    raise AssertionError(f"no m-section with mid {mid}:\n{sdp}")


def wait_until(condition, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(what)
        time.sleep(0.2)


def decoded(page, mid: str) -> int:
    return ((page.call("videoInbound", timeout=10) or {}).get(mid) or {}).get("framesDecoded", 0)


def chromium_offers(swift: SwiftJSEP, page, function: str) -> tuple[str, str]:
    """The offer page function `function` makes, Swift's answer to it (applied in Chromium)."""
    offer = page.call(function, timeout=30)
    answer = swift("answer", sdp=offer)["sdp"]
    page.call("applyAnswer", answer, timeout=10)
    return offer, answer


def swift_offers(swift: SwiftJSEP, page, function: str = "answerReoffer") -> tuple[str, str]:
    """Swift's offer, Chromium's answer to it from page function `function` (applied in Swift)."""
    offer = swift("offer")["sdp"]
    answer = page.call(function, offer, timeout=30)
    swift("setAnswer", sdp=answer)
    return offer, answer


@pytest.fixture
def swift_jsep(swift_bin, page, artifact_dir, logs):
    page.evaluate(CHROMIUM_JS)
    swift = SwiftJSEP(swift_bin, artifact_dir / "swiftrtc-jsep.log")
    logs.append(("swiftrtc jsep", swift.proc.text))
    yield swift
    swift.close()


@pytest.mark.swift_offerer
@pytest.mark.timeout(90)
def test_swift_recycles_stopped_video_mline_with_chromium(swift_jsep, page):
    swift = swift_jsep
    swift("addTransceiver", kind="audio", direction="sendrecv")
    swift("addTrack", kind="video")
    first, _ = swift_offers(swift, page, "answerOffer")
    swift("waitConnected")
    audio_mid, old_mid = mids_of(first)
    wait_until(lambda: decoded(page, old_mid) > 5, 20, "Chromium decoded no frame of the first video track")

    swift("stop", mid=old_mid)
    stopping, _ = swift_offers(swift, page)
    assert m_lines(stopping)[1].startswith("m=video 0 "), m_lines(stopping)
    assert [t["kind"] for t in swift.transceivers()] == ["audio"], "the stopped transceiver is gone once negotiated"

    track = swift("addTrack", kind="video")["trackId"]
    recycling, answer = swift_offers(swift, page)
    assert len(m_lines(recycling)) == len(m_lines(first)) == 2, m_lines(recycling)
    new_mid = mids_of(recycling)[1]
    assert mids_of(recycling)[0] == audio_mid and new_mid not in (audio_mid, old_mid), mids_of(recycling)
    assert m_lines(recycling)[1].startswith("m=video 9 "), m_lines(recycling)
    assert bundle(recycling) == [audio_mid, new_mid]
    assert f"a=msid:- {track}" in section(recycling, new_mid)
    chromium = page.call("sections", timeout=10)
    assert len(chromium["local"]) == len(chromium["remote"]) == 2, f"Chromium's m-sections: {chromium}"
    assert {"mid": new_mid, "currentDirection": "recvonly"} in chromium["transceivers"], chromium
    assert mids_of(answer) == [audio_mid, new_mid] and not m_lines(answer)[1].startswith("m=video 0 "), answer
    video = [t for t in swift.transceivers() if t["kind"] == "video"]
    assert [(t["mid"], t["currentDirection"], t["trackId"]) for t in video] == [(new_mid, "sendonly", track)]
    frames = wait_until(lambda: decoded(page, new_mid) > 15 and decoded(page, new_mid), 20,
                        f"Chromium decoded no frames on the recycled m-line (mid {new_mid})")
    wait_until(lambda: decoded(page, new_mid) > frames, 5, "Chromium's decoding on the recycled m-line stopped")
    width = page.call("videoInbound", timeout=10)[new_mid]["frameWidth"]
    assert width == 320, f"the new track is the 320x240 pattern, Chromium decodes {width} wide"


@pytest.mark.swift_offerer
@pytest.mark.timeout(90)
def test_chromium_offer_takes_swift_added_track(swift_jsep, page):
    swift = swift_jsep
    first, _ = chromium_offers(swift, page, "offerAudio")
    swift("waitConnected")
    track = swift("addTrack", kind="video")["trackId"]
    before = swift.transceivers()
    assert [(t["kind"], t["mid"]) for t in before] == [("audio", mids_of(first)[0]), ("video", None)], before

    offer, answer = chromium_offers(swift, page, "offerVideoToo")
    video_mid = mids_of(offer)[1]
    after = swift.transceivers()
    assert len(after) == 2, f"Swift's addTrack transceiver must take the offered m-line, not a new one: {after}"
    mine = after[1]
    assert (mine["trackId"], mine["mid"], mine["currentDirection"]) == (track, video_mid, "sendrecv"), mine
    ours = section(answer, video_mid)
    assert "a=sendrecv" in ours and f"a=msid:- {track}" in ours, ours
    wait_until(lambda: decoded(page, video_mid) > 15, 20, f"Chromium decoded no frames of Swift's track (mid {video_mid})")
    wait_until(lambda: swift.transceivers()[1]["framesDecoded"] > 15, 20,
               f"Swift decoded no frames of Chromium's camera on the same m-line: {swift.transceivers()}")
    assert page.call("videoInbound", timeout=10)[video_mid]["frameWidth"] == 320


@pytest.mark.swift_offerer
@pytest.mark.timeout(90)
def test_chromium_recycles_swift_stopped_mline(swift_jsep, page):
    swift = swift_jsep
    first, _ = chromium_offers(swift, page, "offerAudioVideo")
    swift("waitConnected")
    audio_mid, old_mid = mids_of(first)
    stopping, _ = chromium_offers(swift, page, "stopVideo")
    assert m_lines(stopping)[1].startswith("m=video 0 "), m_lines(stopping)
    assert [t["kind"] for t in swift.transceivers()] == ["audio"], "Swift's stopped transceiver is gone once negotiated"

    recycling, answer = chromium_offers(swift, page, "offerVideoToo")
    assert len(m_lines(recycling)) == 2, f"Chromium did not recycle the m-line: {m_lines(recycling)}"
    new_mid = mids_of(recycling)[1]
    assert mids_of(recycling)[0] == audio_mid and new_mid not in (audio_mid, old_mid), mids_of(recycling)
    assert mids_of(answer) == [audio_mid, new_mid] and bundle(answer) == [audio_mid, new_mid], answer
    video = [t for t in swift.transceivers() if t["kind"] == "video"]
    assert [(t["mid"], t["currentDirection"]) for t in video] == [(new_mid, "recvonly")], video
    wait_until(lambda: [t for t in swift.transceivers() if t["mid"] == new_mid][0]["framesDecoded"] > 15, 20,
               f"Swift decoded no frames of Chromium's new track on the recycled m-line: {swift.transceivers()}")
