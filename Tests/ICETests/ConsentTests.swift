import Testing
import STUN
@testable import ICE

@Suite struct ConsentTests {
    @Test func consentRequestsKeepTheConnectionUp() {
        let p = AgentPair()
        p.network.run(for: .seconds(2)) { p.bothConnected }
        let before = p.network.requests(from: p.aBases[0]).count
        p.network.run(for: .seconds(60))
        #expect(p.a.state == .completed && p.b.state == .completed)
        // An idle path (no media): each side probes after 2 s without hearing anything, and
        // each probe also refreshes the other side, so each sends about one request per 4 s
        // (and no more than one per 2 s); never disconnected.
        let consent = p.network.requests(from: p.aBases[0]).count - before
        #expect(consent >= 12 && consent <= 30, "\(consent) requests in 60 s")
        #expect(p.network.requests(from: p.bBases[0]).count >= 10)
        #expect(!p.network.states(of: p.a).contains(.disconnected))
    }

    @Test func peerStopsAnsweringDisconnectedThenFailed() throws {
        let network = SimulatedNetwork()
        let p = AgentPair(network: network)
        network.run(for: .seconds(2)) { p.bothConnected }
        network.run(for: .seconds(10))
        // b goes silent: nothing from b reaches a any more.
        let silentAt = network.elapsed
        network.filter = { from, _ in from != addr("10.0.0.2", 2000) }
        let lastAnswer = network.sent.last { $0.transmit.local == p.bBases[0] && $0.message?.messageClass == .successResponse }
        let lastAnswerAt = try #require(lastAnswer).time - network.start
        #expect(network.run(for: .seconds(60)) { p.a.state == .failed })
        let disconnectedAt = try #require(network.time(of: p.a, entering: .disconnected))
        let failedAt = try #require(network.time(of: p.a, entering: .failed))
        // Disconnected 3 s after the last thing heard from b (the receiving timeout), which is
        // at most one probe interval before b went silent.
        #expect(disconnectedAt >= lastAnswerAt + .seconds(3) && disconnectedAt <= silentAt + .seconds(3) + .milliseconds(100),
                "disconnected \(disconnectedAt - silentAt) after b went silent")
        // Meanwhile a probes every `probeInterval` (0.1 s: 100 in 10 s), so a path that comes back
        // is found within that.
        let interval = ICEConfiguration().probeInterval
        let expected = Int((Duration.seconds(10) / interval).rounded())
        let probes = network.requests(from: p.aBases[0]).filter { $0.time - network.start > silentAt + .seconds(3) &&
                                                                     $0.time - network.start < silentAt + .seconds(13) }
        #expect(probes.count >= expected - 2 && probes.count <= expected + 2, "\(probes.count) probes in 10 s of silence")
        // Failed 30 s after the last answer arrived (one-way latency 10 ms).
        #expect(failedAt == lastAnswerAt + .milliseconds(10) + .seconds(30))
        #expect(network.states(of: p.a).suffix(2) == [.disconnected, .failed])
    }

    @Test func recoversFromDisconnectedWhenResponsesResume() throws {
        let network = SimulatedNetwork()
        let p = AgentPair(network: network)
        network.run(for: .seconds(2)) { p.bothConnected }
        network.filter = { from, _ in from != addr("10.0.0.2", 2000) }
        #expect(network.run(for: .seconds(20)) { p.a.state == .disconnected })
        network.filter = { _, _ in true }
        #expect(network.run(for: .seconds(10)) { p.a.state == .completed })
        #expect(network.states(of: p.a).suffix(2) == [.disconnected, .completed])
        network.run(for: .seconds(40))
        #expect(p.a.state == .completed)
    }

    @Test func liteAgentFailsThirtySecondsAfterLastRequest() throws {
        var lite = ICEConfiguration()
        lite.lite = true
        let network = SimulatedNetwork()
        let p = AgentPair(network: network, bConfig: lite)
        network.run(for: .seconds(2)) { p.bothConnected }
        network.run(for: .seconds(12))
        #expect(p.b.state == .completed || p.b.state == .connected)
        // The full agent vanishes: no more requests reach the lite agent.
        network.filter = { from, _ in from != addr("10.0.0.1", 1000) }
        let lastRequest = network.requests(from: p.aBases[0]).last
        let lastRequestArrived = try #require(lastRequest).time - network.start + .milliseconds(10)
        #expect(network.run(for: .seconds(60)) { p.b.state == .failed })
        let failedAt = try #require(network.time(of: p.b, entering: .failed))
        #expect(failedAt == lastRequestArrived + .seconds(30))
        #expect(!network.states(of: p.b).contains(.disconnected))
    }

    @Test func liteAgentFailsWhenNobodyEverChecks() throws {
        var lite = ICEConfiguration()
        lite.lite = true
        let network = SimulatedNetwork()
        network.filter = { _, _ in false }
        let p = AgentPair(network: network, bConfig: lite)
        #expect(network.run(for: .seconds(40)) { p.b.state == .failed })
        #expect(network.states(of: p.b) == [.checking, .failed])
        #expect(try #require(network.time(of: p.b, entering: .failed)) == .seconds(30))
    }
}
