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
        // One pair: repeated every 0.1 s (checkInterval), failed at checkTimeout (30 s).
        let sends = network.requests(from: p.aBases[0]).map { $0.time - network.start }
        #expect(sends == (0..<300).map { Duration.milliseconds($0 * 100) })
        let failedAt = try #require(network.time(of: p.a, entering: .failed))
        #expect(failedAt == .seconds(30))
        #expect(p.a.pollTimeout() == nil)
    }

    @Test("a path that appears after 20 s of silence is found by the next check, within 0.1 s")
    func pathAppearingLateIsFoundAtOnce() throws {
        let network = SimulatedNetwork()
        var open = false
        network.filter = { _, _ in open }
        let p = AgentPair(network: network)
        network.run(for: .milliseconds(20_033))
        #expect(p.a.state == .checking)
        open = true
        #expect(network.run(for: .seconds(1)) { p.bothConnected })
        // The next repeat (≤ 0.1 s), then one round trip (2 × 10 ms) and the nomination's.
        #expect(network.elapsed <= .milliseconds(20_033 + 100 + 40))
    }

    @Test("repeats of unanswered checks leave half the pacer's slots: eight dead pairs are each repeated every 0.8 s")
    func repeatsScaleWithThePairsBeingChecked() throws {
        let network = SimulatedNetwork()
        network.filter = { _, _ in false }
        let aBases = (0..<2).map { addr("10.0.0.1", UInt16(1000 + $0)) }
        let bBases = (0..<4).map { addr("10.0.0.2", UInt16(2000 + $0)) }
        let p = AgentPair(network: network, aBases: aBases, bBases: bBases)
        network.run(for: .seconds(10))
        let sends = network.requests(from: aBases[0])
        // Every pair was checked, and no pair more often than once per 2 × 8 × Ta.
        var byRemote: [SocketAddress: [ContinuousClock.Instant]] = [:]
        for sent in sends { byRemote[sent.transmit.remote, default: []].append(sent.time) }
        #expect(byRemote.count == 4)
        for times in byRemote.values {
            // The first check went out when the first remote candidate made 2 pairs: 0.2 s.
            let gaps = zip(times.dropFirst(), times).map { $0 - $1 }.dropFirst(times.first == sends.first?.time ? 1 : 0)
            #expect(gaps.allSatisfy { $0 >= .milliseconds(800) && $0 < .milliseconds(900) }, "\(gaps)")
        }
        _ = p
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
