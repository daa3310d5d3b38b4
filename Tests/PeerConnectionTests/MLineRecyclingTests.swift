import Capture
import Foundation
import Media
import PeerConnection
import SessionSupport
import Testing

/// The m= lines and mids of a peer's current local description.
func sections(_ pc: PeerConnection) -> (lines: [String], mids: [String]) {
    let all = mLines(pc)
    return (all.filter { $0.hasPrefix("m=") }, all.filter { $0.hasPrefix("a=mid:") }.map { String($0.dropFirst(6)) })
}

func bundleGroup(_ pc: PeerConnection) -> String? {
    (pc.localDescription?.sdp ?? "").components(separatedBy: "\r\n").first { $0.hasPrefix("a=group:BUNDLE") }
}

/// A VP8 test-pattern track and the capturer that feeds it.
struct PatternTrack {
    let source = VideoSource()
    let track: VideoTrack
    let capturer: TestPatternCapturer
    init(_ id: String) {
        track = VideoTrack(id: id, source: source)
        capturer = TestPatternCapturer(delegate: source)
    }
}

/// Captures frames at 25 fps of `sim`'s virtual time from each capturer until every log has
/// `count` decoded frames (or 10 s pass); returns whether they all got there.
func feed(_ capturers: [TestPatternCapturer], until logs: [FrameLog], count: Int, on sim: Simulation) -> Bool {
    for i in 0..<250 {
        if logs.allSatisfy({ $0.all.count >= count }) { return true }
        for c in capturers { c.captureFrame(at: Int64(i) * 40_000_000, width: 320, height: 180) }
        sim.advance(by: .milliseconds(40))
    }
    return logs.allSatisfy { $0.all.count >= count }
}

/// Whether a log holds every frame of its capturer from the first, in capture order.
func inCaptureOrder(_ log: FrameLog) -> Bool {
    log.all.compactMap(\.number) == Array(0..<UInt32(log.all.count))
}

func decodedFrames(_ t: RtpTransceiver) throws -> FrameLog {
    let log = FrameLog()
    try #require(t.receiver.videoTrack).addRenderer(log)
    return log
}

@Suite("m-line recycling and addTrack matching (JSEP §5.2.2, §5.10)")
struct MLineRecyclingTests {
    @Test("stop, renegotiate, addTrack: the offer reuses the rejected m-line with a new mid; frames flow on it")
    func recycleInOffer() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let eventsA = EventLog(a), eventsB = EventLog(b)
        try await a.addTransceiver(.audio)
        let first = PatternTrack("v1")
        let firstSender = try await a.addTrack(first.track, codecs: [.vp8])
        try await sim.negotiate(a, b)
        // Both: the answerer (DTLS client) has its SRTP keys only once the offerer's last flight
        // arrives, and virtual time stands still until a test moves it.
        try sim.connect(a, b)
        #expect(sections(a).mids == ["0", "1"])
        let video = try #require(a.transceivers.first { $0.sender === firstSender })

        video.stop()
        #expect(sim.run(within: .seconds(1)) { eventsA.negotiationNeeded == 2 })
        try await renegotiate(a, b)
        #expect(sections(a).lines.map { $0.split(separator: " ").prefix(2).joined(separator: " ") } == ["m=audio 9", "m=video 0"])
        #expect(a.transceivers.count == 1 && !a.transceivers.contains { $0 === video }, "the stopped transceiver is gone")
        #expect(b.transceivers.count == 1 && b.transceivers[0].kind == .audio, "and the peer's, stopped by the answer")
        #expect(a.transceivers[0].mid == "0")
        #expect(bundleGroup(a) == "a=group:BUNDLE 0")

        let second = PatternTrack("v2")
        let sender = try await a.addTrack(second.track, codecs: [.vp8])
        try encodeEveryFrame(sender)
        #expect(sim.run(within: .seconds(1)) { eventsA.negotiationNeeded == 3 })
        eventsB.clear()
        try await renegotiate(a, b)
        let (lines, mids) = sections(a)
        #expect(lines.count == 2, "the m-line count did not change: \(lines)")
        #expect(lines[1].hasPrefix("m=video 9 "), "the rejected slot carries the new transceiver: \(lines)")
        #expect(mids == ["0", "2"], "a new mid; the old one is never reused")
        #expect(bundleGroup(a) == "a=group:BUNDLE 0 2")
        #expect(sections(b).mids == ["0", "2"])
        let added = try #require(a.transceivers.first { $0.sender === sender })
        #expect(added.mid == "2" && added.currentDirection == .sendonly, "the peer made a recvonly transceiver for it")
        let remote = try #require(eventsB.tracks.first { $0.kind == .video })
        #expect(remote.mid == "2")
        let log = try decodedFrames(remote)
        #expect(feed([second.capturer], until: [log], count: 8, on: sim), "decoded \(log.all.count) frames on the recycled m-line")
        #expect(inCaptureOrder(log), "\(log.all.map(\.number))")
        #expect(a.connectionState == .connected && b.connectionState == .connected)
        await a.close()
        await b.close()
    }

    @Test("a remote offer that recycles our stopped m-line: a new transceiver with the new mid takes the slot")
    func recycleInRemoteOffer() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let eventsA = EventLog(a)
        try await a.addTransceiver(.audio)
        try await a.addTransceiver(.video)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let oldVideo = try #require(a.transceivers.first { $0.kind == .video })
        oldVideo.stop()
        try await renegotiate(a, b)
        #expect(a.transceivers.map(\.kind) == [.audio])

        // b offers now; its new track takes the m-line both sides rejected.
        let pattern = PatternTrack("b")
        let sender = try await b.addTrack(pattern.track, codecs: [.vp8])
        try encodeEveryFrame(sender)
        eventsA.clear()
        try await renegotiate(b, a)
        #expect(sections(b).mids == ["0", "2"] && sections(a).mids == ["0", "2"])
        #expect(sections(a).lines.count == 2 && sections(a).lines[1].hasPrefix("m=video 9 "))
        let taken = try #require(a.transceivers.first { $0.mid == "2" })
        #expect(taken !== oldVideo && taken.kind == .video && taken.currentDirection == .recvonly)
        #expect(a.transceivers.count == 2)
        #expect(eventsA.tracks.contains { $0 === taken })
        let log = try decodedFrames(taken)
        #expect(feed([pattern.capturer], until: [log], count: 8, on: sim), "decoded \(log.all.count) frames")
        #expect(inCaptureOrder(log), "\(log.all.map(\.number))")
        await a.close()
        await b.close()
    }

    @Test("the answerer's addTrack before the offer: the offer's new m-line takes that transceiver; video both ways")
    func answererTrackMatched() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let eventsB = EventLog(b)
        try await a.addTransceiver(.audio)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)

        let atB = PatternTrack("b"), atA = PatternTrack("a")
        let senderB = try await b.addTrack(atB.track, codecs: [.vp8])
        let senderA = try await a.addTrack(atA.track, codecs: [.vp8])
        try encodeEveryFrame(senderA)
        try encodeEveryFrame(senderB)
        try await a.setLocalDescription()
        try await b.setRemoteDescription(try #require(a.localDescription))
        let ours = try #require(b.transceivers.first { $0.sender === senderB })
        #expect(ours.mid == "1", "matched to the offer's new m-line")
        #expect(b.transceivers.count == 2, "no extra recvonly transceiver: \(b.transceivers.map(\.kind))")

        // Rolled back, the match is undone; offered again, it is made again.
        try await b.setRemoteDescription(SessionDescription(type: .rollback, sdp: ""))
        #expect(ours.mid == nil && b.transceivers.count == 2)
        try await b.setRemoteDescription(try #require(a.localDescription))
        #expect(ours.mid == "1")
        try await b.setLocalDescription()
        #expect(eventsB.tracks.contains { $0 === ours }, "the track event names our transceiver")
        eventsB.clear()
        try await a.setRemoteDescription(try #require(b.localDescription))
        #expect(b.localDescription?.sdp.contains("a=msid:- \(senderB.trackId)") == true, "our track is in the answer")
        #expect(ours.currentDirection == .sendrecv)
        let theirs = try #require(a.transceivers.first { $0.sender === senderA })
        #expect(theirs.currentDirection == .sendrecv)
        let logA = try decodedFrames(theirs), logB = try decodedFrames(ours)
        #expect(feed([atA.capturer, atB.capturer], until: [logA, logB], count: 8, on: sim),
                "decoded at a: \(logA.all.count), at b: \(logB.all.count)")
        #expect(inCaptureOrder(logA) && inCaptureOrder(logB), "\(logA.all.map(\.number)), \(logB.all.map(\.number))")
        #expect(sim.run(within: .milliseconds(300)) { eventsB.negotiationNeeded > 0 } == false,
                "nothing left to negotiate for b once its track went out in the answer")
        await a.close()
        await b.close()
    }

    @Test("a transceiver from addTransceiver is not matched to a remote offer's m-line")
    func addTransceiverNotMatched() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let mine = try await b.addTransceiver(.video)
        try await a.addTransceiver(.video)
        try await sim.negotiate(a, b)
        #expect(mine.mid == nil && mine.currentDirection == nil)
        #expect(b.transceivers.count == 2)
        let made = try #require(b.transceivers.first { $0 !== mine })
        #expect(made.mid == "0" && made.currentDirection == .recvonly)
        // Ours still asks for its own m-line, which b's next offer adds.
        try await renegotiate(b, a)
        #expect(mine.mid == "1" && mine.currentDirection == .sendonly)
        #expect(sections(b).mids == ["0", "1"])
        await a.close()
        await b.close()
    }

    @Test("a re-offer that moves a live m-line's mid, or repeats a mid, is refused with the reason")
    func badRecycling() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        try await a.addTransceiver(.audio)
        try await a.addTransceiver(.video)
        try await sim.negotiate(a, b)
        try await a.setLocalDescription()
        let offer = try #require(a.localDescription).sdp
        let moved = offer.replacingOccurrences(of: "a=mid:1", with: "a=mid:7")
            .replacingOccurrences(of: "BUNDLE 0 1", with: "BUNDLE 0 7")
        do {
            try await b.setRemoteDescription(SessionDescription(type: .offer, sdp: moved))
            Issue.record("a live m-line with a new mid was accepted")
        } catch {
            #expect("\(error)".contains("m-line 1 has mid 7 in the offer but 1"), "\(error)")
        }
        let repeated = offer.replacingOccurrences(of: "a=mid:1", with: "a=mid:0")
        do {
            try await b.setRemoteDescription(SessionDescription(type: .offer, sdp: repeated))
            Issue.record("a repeated mid was accepted")
        } catch {
            #expect("\(error)".contains("mid 0 is on more than one m-line"), "\(error)")
        }
        let fewer = offer.components(separatedBy: "m=video").first ?? offer
        await #expect(throws: PeerConnectionError.self) {
            try await b.setRemoteDescription(SessionDescription(type: .offer, sdp: fewer))
        }
        #expect(b.signalingState == .stable && b.transceivers.count == 2, "nothing changed")
        try await b.setRemoteDescription(SessionDescription(type: .offer, sdp: offer))
        #expect(b.signalingState == .haveRemoteOffer)
        await a.close()
        await b.close()
    }
}
