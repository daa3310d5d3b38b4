import PeerConnection
import SessionSupport
import Synchronization
import Testing

/// Every candidate a peer gathers, from the loop thread (as its delegate).
final class CandidateLog: PeerConnectionDelegate {
    private let items = Mutex<[IceCandidate]>([])
    init(_ pc: PeerConnection) { pc.delegate = self }
    func peerConnection(_ pc: PeerConnection, didGenerate candidate: IceCandidate) { items.withLock { $0.append(candidate) } }
    var all: [IceCandidate] { items.withLock { $0 } }
}

/// The SDP without its candidates, as a trickling peer sends it.
func withoutCandidates(_ sdp: String) -> String {
    sdp.components(separatedBy: "\r\n")
        .filter { !$0.hasPrefix("a=candidate:") && $0 != "a=end-of-candidates" }
        .joined(separator: "\r\n")
}

/// Peers on a simulated loop and a virtual network: gathering, checks and timers run in
/// virtual time as the test moves it.
@Suite("Trickle ICE")
struct TrickleTests {
    @Test("candidates trickled both ways, early ones queued, empty candidate ends them")
    func trickleBothWays() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let fromA = CandidateLog(a), fromB = CandidateLog(b)
        try await a.addTransceiver(.audio)
        try await a.setLocalDescription(try await a.createOffer())
        #expect(sim.run { a.iceGatheringState == .complete })
        let offer = try #require(a.localDescription)
        #expect(!fromA.all.isEmpty)
        #expect(fromA.all.allSatisfy { $0.sdpMid == "0" && $0.sdpMLineIndex == 0 })
        // Before B has any description: queued until its transport starts.
        for c in fromA.all { try await b.addIceCandidate(c) }
        try await b.addIceCandidate(IceCandidate(candidate: "", sdpMid: "0", sdpMLineIndex: 0))
        try await b.setRemoteDescription(SessionDescription(type: .offer, sdp: withoutCandidates(offer.sdp)))
        try await b.setLocalDescription(try await b.createAnswer())
        #expect(sim.run { b.iceGatheringState == .complete })
        let answer = try #require(b.localDescription)
        try await a.setRemoteDescription(SessionDescription(type: .answer, sdp: withoutCandidates(answer.sdp)))
        for c in fromB.all { try await a.addIceCandidate(c) }
        try await a.addIceCandidate(IceCandidate(candidate: "", sdpMid: "0"))
        try sim.connect(a, b)
        // Connected with end-of-candidates from the other side: completed (RFC 8445 §8.1.2).
        #expect(sim.run(within: .seconds(5)) { a.iceConnectionState == .completed && b.iceConnectionState == .completed },
                "ICE \(a.iceConnectionState), \(b.iceConnectionState)")
        await a.close()
        await b.close()
    }

    @Test("a=end-of-candidates in the SDP is honoured; without it the agent stays connected")
    func endOfCandidatesInSDP() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        try await a.addTransceiver(.audio)
        // The answer keeps its candidates but loses a=end-of-candidates.
        try await sim.negotiate(a, b) { $0.replacingOccurrences(of: "a=end-of-candidates\r\n", with: "") }
        try sim.connect(a)
        #expect(sim.run(within: .seconds(5)) { b.iceConnectionState == .completed }, "b: ICE \(b.iceConnectionState)")
        sim.advance(by: .milliseconds(300))
        #expect(a.iceConnectionState == .connected)
        await a.close()
        await b.close()
    }

    @Test("a candidate for an unknown mid or index is an error that says so")
    func unknownMid() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        try await a.addTransceiver(.audio)
        try await sim.negotiate(a, b)
        let line = "candidate:1 1 udp 2130706431 127.0.0.1 9 typ host"
        do {
            try await b.addIceCandidate(IceCandidate(candidate: line, sdpMid: "7"))
            Issue.record("accepted a candidate for mid 7")
        } catch let error as PeerConnectionError {
            #expect(error.description.contains("no m-line with mid \"7\""))
        }
        await #expect(throws: PeerConnectionError.self) {
            try await b.addIceCandidate(IceCandidate(candidate: line, sdpMLineIndex: 3))
        }
        await #expect(throws: PeerConnectionError.self) {
            try await b.addIceCandidate(IceCandidate(candidate: "candidate:garbage", sdpMid: "0"))
        }
        try await b.addIceCandidate(IceCandidate(candidate: line, sdpMid: "0"))
        await a.close()
        await b.close()
    }

    @Test("candidates name the bundle's first m-line, even when it is the application one")
    func applicationFirst() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let fromB = CandidateLog(b)
        try await a.addTransceiver(.audio)
        _ = try await a.createDataChannel("x")
        try await a.setLocalDescription(try await a.createOffer())
        #expect(sim.run { a.iceGatheringState == .complete })
        // Put the application m-line (mid 1) first, as Chromium orders an offer whose channel came first.
        let sdp = try #require(a.localDescription).sdp
        let parts = sdp.components(separatedBy: "\r\nm=")
        try #require(parts.count == 3)
        let trimmed = parts.map { $0.hasSuffix("\r\n") ? String($0.dropLast(2)) : $0 }
        let reordered = [trimmed[0], trimmed[2], trimmed[1]].joined(separator: "\r\nm=") + "\r\n"
        try await b.setRemoteDescription(SessionDescription(type: .offer, sdp: reordered))
        try await b.setLocalDescription(try await b.createAnswer())
        #expect(sim.run { b.iceGatheringState == .complete })
        #expect(!fromB.all.isEmpty)
        #expect(fromB.all.allSatisfy { $0.sdpMid == "1" && $0.sdpMLineIndex == 0 }, "\(fromB.all)")
        await a.close()
        await b.close()
    }
}
