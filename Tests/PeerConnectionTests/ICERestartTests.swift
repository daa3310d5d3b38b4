import Media
import PeerConnection
import SessionSupport
import Testing
import TestSupport

/// When each decoded frame arrived, on `clock` (a simulation's: `{ sim.loop.now }`).
final class ArrivalLog: VideoRenderer, Sendable {
    private let times = Monitor<[ContinuousClock.Instant]>([])
    private let clock: @Sendable () -> ContinuousClock.Instant

    init(clock: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) { self.clock = clock }

    func render(_ frame: VideoFrame) {
        let now = clock()
        times.withLock { $0.append(now) }
    }
    var all: [ContinuousClock.Instant] { times.value }
    var count: Int { times.value.count }

    /// The longest time without a frame between `start` and `end`.
    func longestGap(from start: ContinuousClock.Instant, to end: ContinuousClock.Instant) -> Duration {
        let inside = [start] + all.filter { $0 > start && $0 < end } + [end]
        return zip(inside, inside.dropFirst()).map { $1 - $0 }.max() ?? .zero
    }

    /// Waits (on real sockets) until `count` frames have arrived, at most `timeout`.
    func wait(forCount count: Int, timeout: Duration = .seconds(10)) async -> Bool {
        await times.wait(until: { $0.count >= count }, timeout: timeout)
    }
}

/// Peers on a simulated loop and a virtual network; video flows as `PatternFeed` moves virtual
/// time, so a freeze is measured in virtual time, exactly.
@Suite("ICE restart")
struct ICERestartTests {
    enum Case: CaseIterable { case offererRestarts, answererRestarts, liteAnswerer }

    @Test("restart mid-call from either side (or against a lite answerer): new credentials, same DTLS, frames keep coming (freeze ≤ 1 s)",
          arguments: Case.allCases)
    func restartMidCall(_ c: Case) async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer { $0.iceLite = c == .liteAnswerer }
        let offererRestarts = c != .answererRestarts
        let source = VideoSource()
        let sender = try await a.addTrack(VideoTrack(id: "v", source: source), codecs: [.vp8])
        try encodeEveryFrame(sender)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let log = ArrivalLog { [loop = sim.loop] in loop.now }
        try #require(b.transceivers.first?.receiver.videoTrack).addRenderer(log)
        let feed = PatternFeed(sim, into: source)
        #expect(feed.run(within: .seconds(5)) { log.count >= 10 })

        let (restarter, other) = offererRestarts ? (a, b) : (b, a)
        let events = EventLog(restarter), otherEvents = EventLog(other)
        let before = (iceUfrag(a), iceUfrag(b))
        let start = sim.loop.now
        restarter.restartIce()
        #expect(feed.run(within: .seconds(1)) { events.negotiationNeeded == 1 })
        try await renegotiate(restarter, other)
        #expect(iceUfrag(a) != before.0, "the offerer took new credentials")
        // A lite agent keeps its own (its shared port finds sessions by ufrag); checks restart anyway.
        #expect((iceUfrag(b) == before.1) == (c == .liteAnswerer))
        let framesAtRestart = log.count
        // Checks with the new credentials select (and nominate) a pair again on both sides.
        for pc in [a, b] { #expect(await feed.run(within: .seconds(5), untilAsync: { await restartedPairSelected(pc) })) }
        feed.run(for: .milliseconds(1500))
        let end = sim.loop.now
        #expect(log.count >= framesAtRestart + 20, "frames decoded after the restart: \(log.count - framesAtRestart)")
        #expect(log.longestGap(from: start, to: end) <= .seconds(1), "freeze \(log.longestGap(from: start, to: end))")
        // DTLS and SRTP ran on: no new handshake, no state change, no SRTP failures.
        for (pc, log) in [(restarter, events), (other, otherEvents)] {
            #expect(pc.connectionState == .connected)
            #expect(!log.all.contains { if case .connectionStateChanged = $0 { return true }; return false })
            #expect(await pc.transportStatistics()["srtpErrors"] == 0)
        }
        await a.close()
        await b.close()
    }

    @Test("restartIce() while a restart offer is out asks for nothing more: its answer completes the restart")
    func restartAskedAgainWhileOffered() async throws {
        let (sim, a, b) = try await connectedAudioPair()
        let events = EventLog(a)
        let before = iceUfrag(a)
        a.restartIce()
        try await a.setLocalDescription()
        let offered = iceUfrag(a)
        #expect(offered != before)
        events.clear()
        // Our session's reconnect logic asks too, while the connection's own restart is out.
        a.restartIce()
        _ = sim.run(within: .milliseconds(100)) { false }
        try await b.setRemoteDescription(try #require(a.localDescription))
        try await b.setLocalDescription()
        try await a.setRemoteDescription(try #require(b.localDescription))
        #expect(a.signalingState == .stable)
        #expect(!sim.run(within: .seconds(1)) { events.negotiationNeeded > 0 }, "a second restart was asked for")
        #expect(iceUfrag(a) == offered)
        for pc in [a, b] { #expect(await sim.run(within: .seconds(5), untilAsync: { await restartedPairSelected(pc) })) }
        await a.close()
        await b.close()
    }

    @Test("a restart offer rolled back is still to negotiate; the next offer completes it")
    func restartRolledBack() async throws {
        let (sim, a, b) = try await connectedAudioPair()
        let events = EventLog(a)
        a.restartIce()
        try await a.setLocalDescription()
        events.clear()
        try await a.setLocalDescription(SessionDescription(type: .rollback, sdp: ""))
        #expect(sim.run(within: .seconds(1)) { events.negotiationNeeded == 1 })
        try await renegotiate(a, b)
        for pc in [a, b] { #expect(await sim.run(within: .seconds(5), untilAsync: { await restartedPairSelected(pc) })) }
        #expect(a.connectionState == .connected && b.connectionState == .connected)
        await a.close()
        await b.close()
    }

    /// Two peers with an audio transceiver, negotiated and connected.
    private func connectedAudioPair() async throws -> (Simulation, PeerConnection, PeerConnection) {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        try await a.addTransceiver(.audio)
        try await sim.negotiate(a, b)
        try sim.connect(a)
        return (sim, a, b)
    }
}
