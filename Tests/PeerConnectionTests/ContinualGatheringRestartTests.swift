import PeerConnection
import SessionSupport
import Testing
import Transport

/// `Configuration.iceRestartAfter` on simulated time: an outage of both directions of one
/// peer's path (its endpoint's links black-holed), with nobody renegotiating.
extension PeerConnection {
    /// ICE `connected`, or `completed` (the controlling side once it nominated).
    var isIceUp: Bool { [.connected, .completed].contains(iceConnectionState) }
}

@Suite("Continual gathering: restart after a long disconnection")
struct ContinualGatheringRestartTests {
    /// Two connected peers; `a`'s endpoint is returned to cut its path.
    func connectedPair(_ sim: Simulation) async throws -> (PeerConnection, PeerConnection, VirtualEndpoint) {
        let endpoint = Holder<VirtualEndpoint>()
        let a = try sim.peer(endpoint: { endpoint.value = $0 }), b = try sim.peer()
        try await a.addTransceiver(.audio)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        return (a, b, try #require(endpoint.value))
    }

    func cut(_ sim: Simulation, _ io: VirtualEndpoint, for duration: Duration) {
        sim.loop.perform {
            io.uplink.blackHole(for: duration)
            io.downlink.blackHole(for: duration)
        }
    }

    @Test("disconnected shorter than iceRestartAfter: back to connected with no restart asked")
    func shortDisconnectionAsksNothing() async throws {
        let sim = Simulation()
        let (a, b, io) = try await connectedPair(sim)
        let log = GatheringLog(a) { [loop = sim.loop] in loop.now }
        let cutAt = sim.loop.now
        cut(sim, io, for: .seconds(5))
        // Consent: disconnected within 2.5–5 s of silence, connected once packets return.
        #expect(sim.run(within: .seconds(6)) { a.iceConnectionState == .disconnected })
        let disconnectedAfter = try #require(log.entered(.disconnected).first) - cutAt
        #expect(disconnectedAfter >= .milliseconds(2500) && disconnectedAfter <= .seconds(5), "\(disconnectedAfter)")
        #expect(sim.run(within: .seconds(5)) { a.isIceUp })
        sim.advance(by: .seconds(10))
        #expect(log.negotiationNeeded.isEmpty, "disconnected for less than \(String(describing: a.configuration.iceRestartAfter))")
        #expect(log.entered(.failed).isEmpty && a.isIceUp)
        await a.close()
        await b.close()
    }

    @Test("disconnected longer than iceRestartAfter: restartIce() once, and the old path still comes back without it")
    func longDisconnectionRestartsOnce() async throws {
        let sim = Simulation()
        let (a, b, io) = try await connectedPair(sim)
        let log = GatheringLog(a) { [loop = sim.loop] in loop.now }
        cut(sim, io, for: .seconds(15))
        #expect(sim.run(within: .seconds(6)) { a.iceConnectionState == .disconnected })
        let disconnectedAt = try #require(log.entered(.disconnected).first)
        #expect(sim.run(within: .seconds(5)) { !log.negotiationNeeded.isEmpty })
        #expect(log.negotiationNeeded.first.map { $0 - disconnectedAt } == .seconds(3))
        // The app does not renegotiate here: consent brings the old path back when the outage ends.
        #expect(sim.run(within: .seconds(15)) { a.isIceUp })
        sim.advance(by: .seconds(10))
        #expect(log.negotiationNeeded.count == 1, "one restart per disconnection: \(log.negotiationNeeded)")
        #expect(log.entered(.failed).isEmpty)
        await a.close()
        await b.close()
    }

    @Test("iceRestartAfter nil: never")
    func disabled() async throws {
        let sim = Simulation()
        let endpoint = Holder<VirtualEndpoint>()
        let a = try sim.peer({ $0.iceRestartAfter = nil }, endpoint: { endpoint.value = $0 }), b = try sim.peer()
        try await a.addTransceiver(.audio)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let log = GatheringLog(a) { [loop = sim.loop] in loop.now }
        cut(sim, try #require(endpoint.value), for: .seconds(15))
        #expect(sim.run(within: .seconds(25)) { a.isIceUp && !log.entered(.disconnected).isEmpty })
        #expect(log.negotiationNeeded.isEmpty)
        await a.close()
        await b.close()
    }
}
