import Capture
import Foundation
import Media
import PeerConnection
import Synchronization
import Testing

/// Every event a peer emits (as its delegate, so it can sit beside readers of `events`).
final class EventLog: PeerConnectionDelegate {
    private let items = Mutex<[PeerConnectionEvent]>([])
    init(_ pc: PeerConnection) { pc.delegate = self }
    private func add(_ event: PeerConnectionEvent) { items.withLock { $0.append(event) } }
    func peerConnection(_ pc: PeerConnection, didChange state: SignalingState) { add(.signalingStateChanged(state)) }
    func peerConnection(_ pc: PeerConnection, didChange state: IceConnectionState) { add(.iceConnectionStateChanged(state)) }
    func peerConnection(_ pc: PeerConnection, didChange state: IceGatheringState) { add(.iceGatheringStateChanged(state)) }
    func peerConnection(_ pc: PeerConnection, didChange state: PeerConnectionState) { add(.connectionStateChanged(state)) }
    func peerConnection(_ pc: PeerConnection, didGenerate candidate: IceCandidate) { add(.iceCandidate(candidate)) }
    func peerConnection(_ pc: PeerConnection, didOpen channel: DataChannel) { add(.dataChannel(channel)) }
    func peerConnectionShouldNegotiate(_ pc: PeerConnection) { add(.negotiationNeeded) }
    func peerConnection(_ pc: PeerConnection, didStartReceivingOn transceiver: RtpTransceiver) { add(.track(transceiver)) }
    func peerConnection(_ pc: PeerConnection, didReport error: PeerConnectionError) { add(.error(error)) }

    var all: [PeerConnectionEvent] { items.withLock { $0 } }
    var negotiationNeeded: Int { all.filter { if case .negotiationNeeded = $0 { return true }; return false }.count }
    var tracks: [RtpTransceiver] { all.compactMap { if case .track(let t) = $0 { return t }; return nil } }
    func clear() { items.withLock { $0.removeAll() } }
}

/// A subsequent offer/answer with the argument-less `setLocalDescription()` on both sides.
func renegotiate(_ offerer: PeerConnection, _ answerer: PeerConnection) async throws {
    try await offerer.setLocalDescription()
    try await answerer.setRemoteDescription(try #require(offerer.localDescription))
    try await answerer.setLocalDescription()
    try await offerer.setRemoteDescription(try #require(answerer.localDescription))
}

/// Sends Opus silence on `sender` every 10 ms until cancelled (audio that needs no capturer).
func sendSilence(_ sender: RtpSender, payloadType: UInt8) -> Task<Void, Never> {
    Task {
        var ts: UInt32 = 0
        while !Task.isCancelled {
            sender.send(payloadType: payloadType, payload: [0xF8, 0xFF, 0xFE], timestamp: ts)
            ts &+= 960
            try? await Task.sleep(for: .milliseconds(10))
        }
    }
}

func mLines(_ pc: PeerConnection) -> [String] {
    (pc.localDescription?.sdp ?? "").components(separatedBy: "\r\n").filter { $0.hasPrefix("m=") || $0.hasPrefix("a=mid:") }
}

@Suite("Renegotiation")
struct RenegotiationTests {
    @Test("audio first, then video added: frames flow on the new track, audio continues, same transport")
    func addVideo() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer()
        let eventsA = EventLog(a), eventsB = EventLog(b)
        let audio = try await a.addTransceiver(.audio)
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        try await b.waitConnected(timeout: .seconds(10))
        let address = try advertisedAddress(a)
        let silence = sendSilence(audio.sender, payloadType: try #require(audio.negotiatedCodecs.first).payloadType)
        defer { silence.cancel() }
        let remoteAudio = try #require(b.transceivers.first?.receiver)
        #expect(await eventually { remoteAudio.stats.packets > 10 })
        #expect(eventsA.negotiationNeeded == 1, "the first transceiver asked for the first negotiation")
        eventsA.clear()
        try await Task.sleep(for: .milliseconds(100))
        #expect(eventsA.negotiationNeeded == 0, "nothing to negotiate once stable")

        let source = VideoSource()
        let sender = try await a.addTrack(VideoTrack(id: "v", source: source), codecs: [.vp8])
        try encodeEveryFrame(sender)
        #expect(await eventually { eventsA.negotiationNeeded == 1 })
        try await renegotiate(a, b)
        #expect(a.signalingState == .stable && b.signalingState == .stable)
        #expect(mLines(a).filter { $0.hasPrefix("a=mid") } == ["a=mid:0", "a=mid:1"])
        #expect(try advertisedAddress(a) == address)
        let remote = try #require(eventsB.tracks.first { $0.kind == .video })
        let log = FrameLog()
        try #require(remote.receiver.videoTrack).addRenderer(log)
        let before = remoteAudio.stats.packets
        let capturer = TestPatternCapturer(delegate: source)
        for i in 0..<15 {
            capturer.captureFrame(at: Int64(i) * 33_333_333, width: 320, height: 180)
            try await Task.sleep(for: .milliseconds(40))
        }
        await log.wait(for: 10)
        #expect(log.all.count >= 10, "decoded \(log.all.count) frames on the added track")
        #expect(remoteAudio.stats.packets > before + 20, "audio kept flowing")
        #expect(a.dtlsState == .connected && b.connectionState == .connected)
        #expect(eventsA.negotiationNeeded == 1)
        await a.close()
        await b.close()
    }

    @Test("removeTrack: the peer's transceiver stops receiving; stop(): the m-line is rejected on both sides")
    func removeTrackAndStop() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer { $0.remoteTransceiverDirection = .sendrecv }
        let eventsA = EventLog(a)
        let sender = try await a.addTrack(AudioTrack(id: "a", source: AudioSource()))
        try await a.addTransceiver(.video)
        try await negotiate(a, b)
        let atB = b.transceivers
        #expect(atB.map(\.currentDirection) == [.sendrecv, .sendrecv])
        eventsA.clear()
        try await a.removeTrack(sender)
        #expect(a.transceivers[0].direction == .recvonly)
        #expect(await eventually { eventsA.negotiationNeeded == 1 })
        try await renegotiate(a, b)
        #expect(a.transceivers[0].currentDirection == .recvonly)
        #expect(atB[0].currentDirection == .sendonly)
        #expect(atB[1].currentDirection == .sendrecv)

        a.transceivers[1].stop()
        #expect(await eventually { eventsA.negotiationNeeded == 2 })
        try await renegotiate(a, b)
        #expect(atB[1].currentDirection == .inactive && atB[1].isStopped)
        #expect(mLines(b).contains { $0.hasPrefix("m=video 0 ") })
        #expect(mLines(a).filter { $0.hasPrefix("a=mid") } == ["a=mid:0", "a=mid:1"], "the stopped m-line keeps its place")
        await a.close()
        await b.close()
    }

    @Test("the first data channel, created after connecting, adds the application m-line; messages flow")
    func lateDataChannel() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer()
        let eventsA = EventLog(a)
        try await a.addTransceiver(.audio)
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        eventsA.clear()
        let channel = try await a.createDataChannel("late")
        #expect(await eventually { eventsA.negotiationNeeded == 1 })
        let remote = Task { await remoteChannel(b, label: "late") }
        try await renegotiate(a, b)
        let t0 = ContinuousClock.now
        let atB = try #require(await remote.value)
        _ = await first(channel.events) { $0 == .open }
        // No waiting for a timer or an SCTP retransmission: the answer starts the association.
        #expect(ContinuousClock.now - t0 < .seconds(1))
        let got = Task { await collect(atB, 3) }
        for text in ["one", "two", "three"] { try channel.send(text) }
        #expect(await got.value.count == 3)
        let back = Task { await collect(channel, 1) }
        try atB.send("back")
        #expect(await back.value.count == 1)
        #expect(mLines(a).filter { $0.hasPrefix("m=") }.map { $0.split(separator: " ")[0] } == ["m=audio", "m=application"])
        await a.close()
        await b.close()
    }

    @Test("glare: both offer; the polite side rolls back (explicitly or implicitly), answers, then gets its turn")
    func glare() async throws {
        for implicit in [false, true] {
            let a = try loopbackPeer(), b = try loopbackPeer()
            let eventsB = EventLog(b)
            try await a.addTransceiver(.audio)
            try await negotiate(a, b)
            try await a.waitConnected(timeout: .seconds(10))
            try await a.addTransceiver(.video)
            try await b.addTransceiver(.video)
            #expect(await eventually { eventsB.negotiationNeeded == 1 })
            try await a.setLocalDescription()
            try await b.setLocalDescription()
            #expect(a.signalingState == .haveLocalOffer && b.signalingState == .haveLocalOffer)
            // a (impolite) ignores b's offer; b (polite) yields.
            if !implicit {
                try await b.setLocalDescription(SessionDescription(type: .rollback, sdp: ""))
                #expect(b.signalingState == .stable)
            }
            try await b.setRemoteDescription(try #require(a.localDescription))
            let asked = eventsB.negotiationNeeded
            try await b.setLocalDescription()
            try await a.setRemoteDescription(try #require(b.localDescription))
            #expect(a.signalingState == .stable && b.signalingState == .stable)
            // b's video is still to negotiate: negotiationneeded again once stable, and b offers.
            #expect(await eventually { eventsB.negotiationNeeded == asked + 1 })
            try await renegotiate(b, a)
            let mids = mLines(a).filter { $0.hasPrefix("a=mid") }
            #expect(mids == ["a=mid:0", "a=mid:1", "a=mid:2"])
            #expect(mLines(b).filter { $0.hasPrefix("a=mid") } == mids)
            #expect(b.transceivers.filter { $0.kind == .video }.allSatisfy { $0.currentDirection != nil })
            #expect(a.connectionState == .connected)
            await a.close()
            await b.close()
        }
    }

    @Test("setRemoteDescription(rollback) drops the remote offer and the transceivers it made")
    func remoteRollback() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer()
        try await a.addTransceiver(.audio)
        try await negotiate(a, b)
        try await a.addTransceiver(.video)
        try await a.setLocalDescription()
        try await b.setRemoteDescription(try #require(a.localDescription))
        #expect(b.transceivers.count == 2)
        try await b.setRemoteDescription(SessionDescription(type: .rollback, sdp: ""))
        #expect(b.signalingState == .stable)
        #expect(b.transceivers.count == 1)
        #expect(b.remoteDescription?.sdp.contains("m=video") == false)
        await #expect(throws: PeerConnectionError.self) {
            try await b.setLocalDescription(SessionDescription(type: .rollback, sdp: ""))
        }
        await a.close()
        await b.close()
    }
}
