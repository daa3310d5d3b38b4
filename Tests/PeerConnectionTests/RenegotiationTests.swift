import Capture
import Foundation
import Media
import PeerConnection
import SessionSupport
import Synchronization
import Testing
import Transport

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
    func peerConnection(_ pc: PeerConnection, didSelectPairFrom local: String, to remote: String) {
        add(.selectedCandidatePairChanged(local: local, remote: remote))
    }
    func peerConnection(_ pc: PeerConnection, didOpen channel: DataChannel) { add(.dataChannel(channel)) }
    func peerConnectionShouldNegotiate(_ pc: PeerConnection) { add(.negotiationNeeded) }
    func peerConnection(_ pc: PeerConnection, didStartReceivingOn transceiver: RtpTransceiver) { add(.track(transceiver)) }
    func peerConnection(_ pc: PeerConnection, didReport error: PeerConnectionError) { add(.error(error)) }

    var all: [PeerConnectionEvent] { items.withLock { $0 } }
    var negotiationNeeded: Int { all.filter { if case .negotiationNeeded = $0 { return true }; return false }.count }
    var tracks: [RtpTransceiver] { all.compactMap { if case .track(let t) = $0 { return t }; return nil } }
    var channels: [DataChannel] { all.compactMap { if case .dataChannel(let c) = $0 { return c }; return nil } }
    func clear() { items.withLock { $0.removeAll() } }
}

/// A subsequent offer/answer with the argument-less `setLocalDescription()` on both sides.
func renegotiate(_ offerer: PeerConnection, _ answerer: PeerConnection) async throws {
    try await offerer.setLocalDescription()
    try await answerer.setRemoteDescription(try #require(offerer.localDescription))
    try await answerer.setLocalDescription()
    try await offerer.setRemoteDescription(try #require(answerer.localDescription))
}

/// Opus silence on a sender every 10 ms of a simulated loop's time (audio that needs no
/// capturer): a loop timer, until `stop()` or until it is released.
final class SilenceSender: @unchecked Sendable {
    // @unchecked: `timer` and `timestamp` are touched only by the loop's work.
    private let sender: RtpSender
    private let payloadType: UInt8
    private let loop: EventLoop
    private var timer: Int?
    private var timestamp: UInt32 = 0

    init(_ sender: RtpSender, payloadType: UInt8, on loop: EventLoop) {
        self.sender = sender
        self.payloadType = payloadType
        self.loop = loop
        loop.perform { tick() }
    }

    private func tick() {
        sender.send(payloadType: payloadType, payload: [0xF8, 0xFF, 0xFE], timestamp: timestamp)
        timestamp &+= 960
        timer = loop.schedule(at: loop.now + .milliseconds(10)) { [weak self] in self?.tick() }
    }

    func stop() {
        loop.perform {
            if let timer { loop.cancelTimer(timer) }
            timer = nil
        }
    }
}

/// A data channel's messages and state changes, taken as its delegate (on the loop).
private final class ChannelLog: DataChannelDelegate {
    private let texts = Mutex<[String]>([])
    init(_ channel: DataChannel) { channel.delegate = self }
    func dataChannelDidChangeState(_ channel: DataChannel) {}
    func dataChannel(_ channel: DataChannel, didReceiveMessage message: DataChannelMessage) {
        texts.withLock { $0.append(message.text ?? "<binary>") }
    }
    var received: [String] { texts.withLock { $0 } }
}

func mLines(_ pc: PeerConnection) -> [String] {
    (pc.localDescription?.sdp ?? "").components(separatedBy: "\r\n").filter { $0.hasPrefix("m=") || $0.hasPrefix("a=mid:") }
}

@Suite("Renegotiation")
struct RenegotiationTests {
    @Test("audio first, then video added: frames flow on the new track, audio continues, same transport")
    func addVideo() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let eventsA = EventLog(a), eventsB = EventLog(b)
        let audio = try await a.addTransceiver(.audio)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let address = try advertisedAddress(a)
        let silence = SilenceSender(audio.sender, payloadType: try #require(audio.negotiatedCodecs.first).payloadType, on: sim.loop)
        defer { silence.stop() }
        let remoteAudio = try #require(b.transceivers.first?.receiver)
        #expect(sim.run(within: .seconds(1)) { remoteAudio.stats.packets > 10 })
        #expect(eventsA.negotiationNeeded == 1, "the first transceiver asked for the first negotiation")
        eventsA.clear()
        sim.advance(by: .milliseconds(100))
        #expect(eventsA.negotiationNeeded == 0, "nothing to negotiate once stable")

        let source = VideoSource()
        let sender = try await a.addTrack(VideoTrack(id: "v", source: source), codecs: [.vp8])
        try encodeEveryFrame(sender)
        #expect(sim.run(within: .seconds(1)) { eventsA.negotiationNeeded == 1 })
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
            capturer.captureFrame(at: Int64(i) * 40_000_000, width: 320, height: 180)
            sim.advance(by: .milliseconds(40))
        }
        #expect(sim.run(within: .seconds(1)) { log.all.count >= 15 })
        #expect(log.all.count == 15, "decoded \(log.all.count) of 15 frames on the added track")
        #expect(log.all.compactMap(\.number) == Array(0..<15))
        #expect(remoteAudio.stats.packets > before + 20, "audio kept flowing")
        #expect(a.dtlsState == .connected && b.connectionState == .connected)
        #expect(eventsA.negotiationNeeded == 1)
        await a.close()
        await b.close()
    }

    @Test("removeTrack: the peer's transceiver stops receiving; stop(): the m-line is rejected on both sides")
    func removeTrackAndStop() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer { $0.remoteTransceiverDirection = .sendrecv }
        let eventsA = EventLog(a)
        let sender = try await a.addTrack(AudioTrack(id: "a", source: AudioSource()))
        try await a.addTransceiver(.video)
        try await sim.negotiate(a, b)
        let atB = b.transceivers
        #expect(atB.map(\.currentDirection) == [.sendrecv, .sendrecv])
        eventsA.clear()
        try await a.removeTrack(sender)
        #expect(a.transceivers[0].direction == .recvonly)
        #expect(sim.run(within: .seconds(1)) { eventsA.negotiationNeeded == 1 })
        try await renegotiate(a, b)
        #expect(a.transceivers[0].currentDirection == .recvonly)
        #expect(atB[0].currentDirection == .sendonly)
        #expect(atB[1].currentDirection == .sendrecv)

        a.transceivers[1].stop()
        #expect(sim.run(within: .seconds(1)) { eventsA.negotiationNeeded == 2 })
        try await renegotiate(a, b)
        #expect(atB[1].currentDirection == .inactive && atB[1].isStopped)
        #expect(mLines(b).contains { $0.hasPrefix("m=video 0 ") })
        #expect(mLines(a).filter { $0.hasPrefix("a=mid") } == ["a=mid:0", "a=mid:1"], "the stopped m-line keeps its place")
        await a.close()
        await b.close()
    }

    @Test("the first data channel, created after connecting, adds the application m-line; messages flow")
    func lateDataChannel() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let eventsA = EventLog(a), eventsB = EventLog(b)
        try await a.addTransceiver(.audio)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        eventsA.clear()
        let channel = try await a.createDataChannel("late")
        #expect(sim.run(within: .seconds(1)) { eventsA.negotiationNeeded == 1 })
        try await renegotiate(a, b)
        let t0 = sim.loop.now
        #expect(sim.run(within: .seconds(5)) { channel.readyState == .open && eventsB.channels.contains { $0.label == "late" } })
        // No waiting for a timer or an SCTP retransmission: the answer starts the association.
        #expect(sim.loop.now - t0 < .seconds(1), "open after \(sim.loop.now - t0) of virtual time")
        let atB = try #require(eventsB.channels.first { $0.label == "late" })
        let atBLog = ChannelLog(atB), atALog = ChannelLog(channel)
        for text in ["one", "two", "three"] { try channel.send(text) }
        #expect(sim.run(within: .seconds(1)) { atBLog.received.count >= 3 })
        #expect(atBLog.received == ["one", "two", "three"])
        try atB.send("back")
        #expect(sim.run(within: .seconds(1)) { atALog.received.count >= 1 })
        #expect(atALog.received == ["back"])
        #expect(mLines(a).filter { $0.hasPrefix("m=") }.map { $0.split(separator: " ")[0] } == ["m=audio", "m=application"])
        await a.close()
        await b.close()
    }

    @Test("glare: both offer; the polite side rolls back (explicitly or implicitly), answers, then gets its turn")
    func glare() async throws {
        for implicit in [false, true] {
            let sim = Simulation()
            let a = try sim.peer(), b = try sim.peer()
            let eventsB = EventLog(b)
            try await a.addTransceiver(.audio)
            try await sim.negotiate(a, b)
            try sim.connect(a, b)
            try await a.addTransceiver(.video)
            try await b.addTransceiver(.video)
            #expect(sim.run(within: .seconds(1)) { eventsB.negotiationNeeded == 1 })
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
            #expect(sim.run(within: .seconds(1)) { eventsB.negotiationNeeded == asked + 1 })
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
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        try await a.addTransceiver(.audio)
        try await sim.negotiate(a, b)
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
