import Testing
import STUN
@testable import ICE

@Suite struct RobustnessTests {
    @Test func badIntegrityIsIgnoredAndCounted() {
        let p = AgentPair()
        let forged = STUNMessage(messageClass: .request, attributes: [
            .username("aaaa:bbbb"), .iceControlled(5), .priority(1), .useCandidate,
        ]).encode(integrityKey: Array("not-the-password-at-all".utf8))
        let attacker = addr("10.0.0.66", 6666)
        p.network.inject(forged, from: attacker, to: p.aBases[0])
        p.network.run(for: .milliseconds(30))
        #expect(p.a.stats.droppedBadIntegrity == 1)
        #expect(!p.network.sent.contains { $0.transmit.remote == attacker })
        #expect(!p.a.remoteCandidates.contains { $0.socketAddress == attacker })
        // Garbage and non-STUN bytes are counted too, never trap.
        p.network.inject([0x80, 0x60, 0, 1, 2, 3], from: attacker, to: p.aBases[0])
        var truncated = forged
        truncated.removeLast(5)
        p.network.inject(truncated, from: attacker, to: p.aBases[0])
        p.network.run(for: .milliseconds(30))
        #expect(p.a.stats.droppedGarbage == 2)
        // The real peer still connects.
        #expect(p.network.run(for: .seconds(5)) { p.bothConnected })
        #expect(p.a.selectedPair?.remote == p.bBases[0])
    }

    @Test func forgedResponseDoesNotCompleteACheck() throws {
        let network = SimulatedNetwork()
        network.filter = { _, to in to != addr("10.0.0.2", 2000) }   // b never hears a
        let p = AgentPair(network: network)
        network.run(for: .milliseconds(20))
        let request = try #require(network.requests(from: p.aBases[0]).first?.message)
        let forged = STUNMessage(messageClass: .successResponse, transactionID: request.transactionID,
                                 attributes: [.xorMappedAddress(p.aBases[0])]).encode(integrityKey: Array("wrong".utf8))
        network.inject(forged, from: p.bBases[0], to: p.aBases[0])
        network.run(for: .milliseconds(30))
        #expect(p.a.stats.droppedBadIntegrity == 1)
        #expect(p.a.selectedPair == nil)
        #expect(p.a.stats.pairs.allSatisfy { $0.state != .succeeded })
    }

    @Test func wrongUsernameGets401() throws {
        let p = AgentPair()
        let stranger = addr("10.0.0.77", 7777)
        let request = STUNMessage(messageClass: .request, attributes: [.username("zzzz:bbbb"), .priority(1)])
            .encode(integrityKey: Array("aaaaaaaaaaaaaaaaaaaaaaaa".utf8))
        p.network.inject(request, from: stranger, to: p.aBases[0])
        p.network.run(for: .milliseconds(15))
        let reply = try #require(p.network.sent.first { $0.transmit.remote == stranger }?.message)
        #expect(reply.errorCode?.code == 401)
        #expect(p.a.stats.droppedUnauthorized == 1)
    }

    @Test func unusableRemoteCandidatesIgnored() throws {
        let agent = ICEAgent(role: .controlling, local: .random())
        let now = ContinuousClock.now
        agent.addRemoteCandidate(try Candidate(parsing: "candidate:1 1 tcp 5 10.0.0.1 9 typ host tcptype active"), now: now)
        agent.addRemoteCandidate(try Candidate(parsing: "candidate:1 1 udp 5 abc.local 9 typ host"), now: now)
        agent.addRemoteCandidate(try Candidate(parsing: "candidate:1 2 udp 5 10.0.0.1 9 typ host"), now: now)
        #expect(agent.stats.ignoredRemoteCandidates == 3)
        #expect(agent.remoteCandidates.isEmpty)
    }

    @Test func allPairsFailedAfterEndOfCandidates() throws {
        let network = SimulatedNetwork()
        network.filter = { _, _ in false }
        var config = ICEConfiguration()
        config.checkingTimeout = .seconds(120)   // isolate pair failure from the checking timeout
        let p = AgentPair(network: network, aConfig: config, bConfig: config)
        #expect(network.run(for: .seconds(60)) { p.a.state == .failed })
        // 7 tries: 0, .5, 1.5, 3.5, 7.5, 15.5, 23.5 s, failed 8 s after the last.
        let sends = network.requests(from: p.aBases[0]).map { $0.time - network.start }
        #expect(sends == [0, 500, 1500, 3500, 7500, 15500, 23500].map { Duration.milliseconds($0) })
        let failedAt = try #require(network.time(of: p.a, entering: .failed))
        #expect(failedAt >= .milliseconds(31_500) && failedAt < .milliseconds(31_600))
        #expect(p.a.pollTimeout() == nil)
    }

    @Test func checkingTimeoutWithoutAnyCandidates() throws {
        let p = AgentPair(exchangeCandidates: false, endOfCandidates: false)
        #expect(p.network.run(for: .seconds(40)) { p.a.state == .failed })
        let failedAt = try #require(p.network.time(of: p.a, entering: .failed))
        #expect(failedAt == .seconds(30))
    }

    @Test func closeStopsEverything() {
        let p = AgentPair()
        p.network.run(for: .seconds(2)) { p.bothConnected }
        p.a.close()
        #expect(p.a.state == .closed)
        #expect(p.a.pollTimeout() == nil)
        #expect(p.a.pollTransmit() == nil)
        p.a.handleTimeout(now: p.network.now + .seconds(10))
        #expect(p.a.pollTransmit() == nil)
    }
}
