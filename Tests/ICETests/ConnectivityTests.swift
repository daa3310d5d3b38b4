import Testing
import STUN
@testable import ICE

@Suite struct ConnectivityTests {
    @Test func controllingAndControlledConnect() throws {
        let p = AgentPair()
        #expect(p.network.run(for: .seconds(5)) { p.a.state == .completed && p.b.state == .completed })
        #expect(p.selectionsMatch)
        #expect(p.a.selectedPair?.local == addr("10.0.0.1", 1000))
        #expect(p.a.selectedPair?.remote == addr("10.0.0.2", 2000))
        #expect(p.network.states(of: p.a) == [.checking, .connected, .completed])
        #expect(p.network.states(of: p.b) == [.checking, .connected, .completed])
        #expect(p.a.role == .controlling && p.b.role == .controlled)
        // A loss-free LAN connects in a few round trips.
        #expect(try #require(p.network.time(of: p.b, entering: .connected)) < .milliseconds(300))
        let stats = p.a.stats
        #expect(stats.selectedPairRTT == .milliseconds(20))
        #expect(stats.pairs.first { $0.selected }?.nominated == true)
        #expect(stats.requestsSent >= 2 && stats.responsesReceived >= 2 && stats.requestsReceived >= 1)
        #expect(stats.droppedBadIntegrity == 0 && stats.droppedGarbage == 0)
        #expect(p.network.events(of: p.a).contains(.gatheringComplete))
    }

    @Test func controlledSideStartedFirstAlsoConnects() {
        // Roles swapped relative to which side's candidates arrive first.
        let p = AgentPair(aRole: .controlled, bRole: .controlling)
        #expect(p.network.run(for: .seconds(5)) { p.bothConnected })
        #expect(p.selectionsMatch)
        #expect(p.b.role == .controlling)
    }

    @Test func withoutEndOfCandidatesStaysConnected() {
        let p = AgentPair(endOfCandidates: false)
        p.network.run(for: .seconds(3))
        #expect(p.a.state == .connected && p.b.state == .connected)
        p.a.endOfRemoteCandidates(now: p.network.now)
        p.network.run(for: .milliseconds(1))
        #expect(p.a.state == .completed)
    }

    @Test(arguments: [(UInt64(5000), UInt64(7000)), (UInt64(7000), UInt64(5000))])
    func bothControllingRepairsRoleConflict(tieBreakers: (UInt64, UInt64)) {
        let p = AgentPair(aRole: .controlling, bRole: .controlling, aTieBreaker: tieBreakers.0, bTieBreaker: tieBreakers.1)
        #expect(p.network.run(for: .seconds(5)) { p.bothConnected })
        #expect(p.selectionsMatch)
        #expect(p.a.role != p.b.role)
        // The larger tie-breaker keeps controlling (RFC 8445 §7.3.1.1).
        let winner = tieBreakers.0 > tieBreakers.1 ? p.a : p.b
        #expect(winner.role == .controlling)
        let loser = winner === p.a ? p.b : p.a
        #expect(p.network.events(of: loser).contains(.roleChanged(.controlled)))
        #expect(p.a.stats.roleConflicts + p.b.stats.roleConflicts >= 1)
        // Someone answered 487.
        #expect(p.network.sent.contains { $0.message?.errorCode?.code == 487 })
    }

    @Test func bothControlledRepairsRoleConflict() {
        let p = AgentPair(aRole: .controlled, bRole: .controlled, aTieBreaker: 9, bTieBreaker: 3)
        #expect(p.network.run(for: .seconds(5)) { p.bothConnected })
        #expect(p.selectionsMatch)
        #expect(p.a.role == .controlling && p.b.role == .controlled)
    }

    @Test func fullAgentAgainstLiteAgent() {
        var lite = ICEConfiguration()
        lite.lite = true
        // The full side starts controlled; learning the peer is lite makes it controlling.
        let p = AgentPair(aRole: .controlled, bRole: .controlling, bConfig: lite)
        #expect(p.b.role == .controlled)
        #expect(p.network.run(for: .seconds(5)) { p.bothConnected })
        #expect(p.a.role == .controlling)
        #expect(p.network.events(of: p.a).contains(.roleChanged(.controlling)))
        #expect(p.selectionsMatch)
        // The lite agent never sends a request, only responses.
        #expect(p.network.requests(from: p.bBases[0]).isEmpty)
        #expect(p.b.stats.requestsSent == 0)
        #expect(p.b.stats.pairs.first { $0.selected }?.nominated == true)
        #expect(p.a.state == .completed)
    }

    @Test func liteAgentSelectsFirstValidPairWhenNeverNominated() throws {
        var lite = ICEConfiguration()
        lite.lite = true
        let b = ICEAgent(role: .controlled, local: ICECredentials(ufrag: "bbbb", pwd: "bbbbbbbbbbbbbbbbbbbbbbbb"), configuration: lite)
        let now = ContinuousClock.now
        let base = addr("10.0.0.2", 2000), peer = addr("192.0.2.50", 6000)
        b.addLocalBase(base, now: now)
        let request = STUNMessage(messageClass: .request, attributes: [
            .username("bbbb:aaaa"), .iceControlling(1), .priority(12345),
        ]).encode(integrityKey: Array("bbbbbbbbbbbbbbbbbbbbbbbb".utf8))
        b.handleSTUN(request, from: peer, local: base, now: now)
        #expect(b.state == .connected)
        #expect(b.selectedPair?.remote == peer)
        // The response carries XOR-MAPPED-ADDRESS, MESSAGE-INTEGRITY with our pwd, FINGERPRINT.
        let transmit = try #require(b.pollTransmit())
        let bytes = transmit.bytes
        let response = try STUNMessage(parsing: bytes)
        #expect(response.messageClass == .successResponse)
        #expect(response.xorMappedAddress == peer)
        #expect(STUNMessage.verifyIntegrity(bytes, key: Array("bbbbbbbbbbbbbbbbbbbbbbbb".utf8)))
        #expect(STUNMessage.verifyFingerprint(bytes))
        #expect(transmit.local == base && transmit.remote == peer)
        // Learned the peer as peer-reflexive with the PRIORITY it sent.
        #expect(b.remoteCandidates.first?.type == .prflx)
        #expect(b.remoteCandidates.first?.priority == 12345)
    }

    @Test func learnsPeerReflexiveWhenRemoteCandidatesAreMdns() {
        let p = AgentPair(exchangeCandidates: false, endOfCandidates: false)
        // b hides its address behind an mDNS name (like Chromium); a cannot resolve it.
        for c in p.b.localCandidates {
            var hidden = c
            hidden.address = "1f4712db-ea17-4bcf-a596-105139dfd8bf.local"
            p.a.addRemoteCandidate(hidden, now: p.network.now)
        }
        for c in p.a.localCandidates { p.b.addRemoteCandidate(c, now: p.network.now) }
        p.a.endOfRemoteCandidates(now: p.network.now)
        p.b.endOfRemoteCandidates(now: p.network.now)
        #expect(p.a.stats.ignoredRemoteCandidates == 1)
        #expect(p.network.run(for: .seconds(5)) { p.bothConnected })
        #expect(p.selectionsMatch)
        #expect(p.a.remoteCandidates.map(\.type) == [.prflx])
        #expect(p.a.selectedPair?.remote == addr("10.0.0.2", 2000))
    }

    @Test func natLearnsServerReflexiveAndPeerReflexive() throws {
        let network = SimulatedNetwork()
        let server = addr("198.51.100.1", 3478)
        network.stunServers = [server]
        network.nat = [addr("10.0.0.1", 1000): addr("203.0.113.1", 41000)]
        var config = ICEConfiguration()
        config.stunServers = [server]
        let p = AgentPair(network: network, aConfig: config, exchangeCandidates: false, endOfCandidates: false)
        p.network.run(for: .seconds(1)) { p.network.events(of: p.a).contains(.gatheringComplete) }
        let srflx = try #require(p.network.localCandidates(of: p.a).first { $0.type == .srflx })
        #expect(srflx.address == "203.0.113.1" && srflx.port == 41000)
        #expect(srflx.relatedAddress == "10.0.0.1" && srflx.relatedPort == 1000)
        #expect(srflx.priority >> 24 == 100)
        // b gets only a's srflx candidate; a gets b's host. Checks cross the NAT.
        p.b.addRemoteCandidate(srflx, now: p.network.now)
        for c in p.b.localCandidates { p.a.addRemoteCandidate(c, now: p.network.now) }
        p.a.endOfRemoteCandidates(now: p.network.now)
        p.b.endOfRemoteCandidates(now: p.network.now)
        #expect(p.network.run(for: .seconds(5)) { p.bothConnected })
        #expect(p.selectionsMatch)
        #expect(p.a.selectedPair?.local == addr("10.0.0.1", 1000))
        #expect(p.b.selectedPair?.remote == addr("203.0.113.1", 41000))
    }

    @Test func silentStunServerStillCompletesGathering() {
        let network = SimulatedNetwork()
        var config = ICEConfiguration()
        config.stunServers = [addr("198.51.100.9", 3478)]   // nobody answers
        let agent = ICEAgent(role: .controlling, local: .random(), configuration: config)
        network.add(agent, name: "a", bases: [addr("10.0.0.1", 1000)])
        #expect(network.run(for: .seconds(10)) { network.events(of: agent).contains(.gatheringComplete) })
        // Three tries (0, 0.5, 1.5 s), given up one doubled RTO later.
        #expect(network.elapsed >= .milliseconds(3500) && network.elapsed < .seconds(4))
        #expect(network.requests(from: addr("10.0.0.1", 1000)).count == 3)
    }

    @Test(arguments: [UInt64(1), 2, 3, 4, 5])
    func connectsWithThirtyPercentLossDuplicationAndReordering(seed: UInt64) {
        let network = SimulatedNetwork(seed: seed)
        network.lossRate = 0.3
        network.duplicateRate = 0.1
        network.jitter = .milliseconds(40)
        let p = AgentPair(network: network,
                          aBases: [addr("10.0.0.1", 1000), addr("10.1.0.1", 1001)],
                          bBases: [addr("10.0.0.2", 2000), addr("10.1.0.2", 2001)])
        #expect(p.network.run(for: .seconds(20)) { p.bothConnected })
        #expect(p.selectionsMatch)
    }

    @Test func trickledCandidatesAfterChecksStarted() throws {
        let dead = addr("10.9.9.9", 2000), live = addr("10.0.0.2", 2001)
        let network = SimulatedNetwork()
        network.filter = { from, to in from != dead && to != dead }
        let p = AgentPair(network: network, bBases: [dead, live], exchangeCandidates: false, endOfCandidates: false)
        // a first learns only b's dead candidate and starts checking it.
        let deadCandidate = try #require(p.b.localCandidates.first { $0.socketAddress == dead })
        let liveCandidate = try #require(p.b.localCandidates.first { $0.socketAddress == live })
        p.a.addRemoteCandidate(deadCandidate, now: network.now)
        network.run(for: .seconds(2))
        #expect(p.a.state == .checking)
        #expect(network.requests(from: p.aBases[0]).allSatisfy { $0.transmit.remote == dead })
        // Trickle the working candidates both ways.
        p.a.addRemoteCandidate(liveCandidate, now: network.now)
        for c in p.a.localCandidates { p.b.addRemoteCandidate(c, now: network.now) }
        #expect(network.run(for: .seconds(5)) { p.bothConnected })
        #expect(p.a.selectedPair?.remote == live)
        #expect(p.selectionsMatch)
        #expect(try #require(network.time(of: p.a, entering: .connected)) > .seconds(2))
    }

    @Test func checksArePacedAtLeastTaApart() {
        let network = SimulatedNetwork(seed: 9)
        network.lossRate = 0.2   // adds retransmissions to the mix
        network.filter = { _, _ in network.elapsed > .seconds(3) }   // nothing answers at first
        let aBases = (0..<3).map { addr("10.0.\($0).1", 1000) }
        let bBases = (0..<3).map { addr("10.0.\($0).2", 2000) }
        let p = AgentPair(network: network, aBases: aBases, bBases: bBases)
        #expect(network.run(for: .seconds(10)) { p.bothConnected })
        network.run(for: .seconds(20))   // consent requests and stray retransmissions share the pacer
        for agent in [p.a, p.b] {
            let bases = agent === p.a ? aBases : bBases
            // The nomination of a just-validated pair is sent at once, outside the pacer.
            let times = network.sent.filter {
                bases.contains($0.transmit.local) && $0.message?.messageClass == .request && $0.message?.useCandidate != true
            }.map(\.time)
            #expect(times.count >= 20)
            for (x, y) in zip(times, times.dropFirst()) {
                #expect(y - x >= .milliseconds(50), "requests \(x) and \(y) too close")
            }
        }
        #expect(p.bothConnected)
    }

    @Test func pairsCheckedInPriorityOrder() {
        // a has two bases; the first-added one has the higher local preference, so its pair goes first.
        let network = SimulatedNetwork()
        network.filter = { _, _ in false }   // observe only
        let p = AgentPair(network: network, aBases: [addr("10.0.0.1", 1000), addr("10.0.1.1", 1000)],
                          bBases: [addr("10.0.0.2", 2000)])
        network.run(for: .milliseconds(120))
        let first = network.requests(from: addr("10.0.0.1", 1000)).first?.time
        let second = network.requests(from: addr("10.0.1.1", 1000)).first?.time
        #expect(first != nil && second != nil)
        if let first, let second { #expect(first < second) }
        #expect(p.a.stats.pairs.map(\.priority) == p.a.stats.pairs.map(\.priority).sorted(by: >))
    }
}
