import Testing
import STUN
@testable import ICE

/// `removeLocalBase`: an interface address went away under a running agent.
@Suite struct BaseRemovalTests {
    let wifi = addr("10.0.0.1", 1000), lte = addr("10.0.1.1", 1001)

    func removedCandidates(_ network: SimulatedNetwork, _ agent: ICEAgent) -> [Candidate] {
        network.events(of: agent).compactMap { if case .localCandidateRemoved(let c) = $0 { c } else { nil } }
    }

    func selections(_ network: SimulatedNetwork, _ agent: ICEAgent) -> [SocketAddress] {
        network.events(of: agent).compactMap { if case .selectedPairChanged(let local, _) = $0 { local } else { nil } }
    }

    @Test func anUnusedBaseIsWithdrawnWithItsPairsAndNothingElseChanges() throws {
        let p = AgentPair(aBases: [wifi, lte])
        #expect(p.network.run(for: .seconds(2)) { p.bothConnected })
        #expect(p.a.selectedPair?.local == wifi)
        let lteHost = try #require(p.a.localCandidates.first { $0.socketAddress == lte })
        let statesBefore = p.network.states(of: p.a)

        #expect(!p.a.removeLocalBase(lte, now: p.network.now), "not the selected path")
        #expect(p.a.localCandidates.allSatisfy { $0.socketAddress != lte })
        #expect(p.a.stats.pairs.allSatisfy { $0.local != lte })
        let sentAt = p.network.sent.count
        p.network.run(for: .seconds(30))
        #expect(removedCandidates(p.network, p.a) == [lteHost])
        #expect(p.network.sent.dropFirst(sentAt).allSatisfy { $0.transmit.local != lte }, "nothing leaves a removed base")
        #expect(p.network.states(of: p.a) == statesBefore && p.a.state == .completed)
        #expect(!p.a.removeLocalBase(lte, now: p.network.now), "twice: nothing to do")
        #expect(removedCandidates(p.network, p.a).count == 1)
    }

    @Test func theControllingSideMovesToItsOtherBaseAtOnce() throws {
        let p = AgentPair(aBases: [wifi, lte])
        #expect(p.network.run(for: .seconds(2)) { p.bothConnected })
        #expect(p.a.selectedPair?.local == wifi)
        let lostAt = p.network.now
        #expect(p.a.removeLocalBase(wifi, now: lostAt), "the selected path was on it")
        #expect(p.a.state == .disconnected && p.a.selectedPair == nil, "no path until another is selected")
        // Its other pair is checked and nominated; the peer follows the nomination.
        #expect(p.network.run(for: .seconds(2)) { p.a.selectedPair?.local == lte && p.b.selectedPair?.remote == lte })
        let moved = p.network.now - lostAt
        #expect(moved <= .milliseconds(100), "moved after \(moved)")
        #expect(p.bothConnected && p.selectionsMatch)
        #expect(selections(p.network, p.a) == [wifi, lte])
        #expect(p.network.states(of: p.a).suffix(3) == [.disconnected, .connected, .completed])
        // And stays there: consent runs on the new pair.
        #expect(!p.network.run(for: .seconds(40)) { p.a.state != .connected && p.a.state != .completed })
    }

    @Test func theControlledSideWaitsForARestart() throws {
        let p = AgentPair(bBases: [addr("10.0.0.2", 2000), addr("10.0.1.2", 2001)])
        #expect(p.network.run(for: .seconds(2)) { p.bothConnected })
        let old = try #require(p.b.selectedPair?.local)
        #expect(p.b.removeLocalBase(old, now: p.network.now))
        #expect(p.b.state == .disconnected)
        // The controlling side does not nominate again on its own: only a restart brings a path.
        p.network.run(for: .seconds(5))
        #expect(p.b.selectedPair == nil && p.b.state == .disconnected)
        let aNew = ICECredentials(ufrag: "AAAA", pwd: "AAAAAAAAAAAAAAAAAAAAAAAA")
        let bNew = ICECredentials(ufrag: "BBBB", pwd: "BBBBBBBBBBBBBBBBBBBBBBBB")
        p.b.restart(local: bNew, now: p.network.now)
        p.a.restart(local: aNew, now: p.network.now)
        p.a.setRemoteCredentials(bNew, remoteIsLite: false, now: p.network.now)
        p.b.setRemoteCredentials(aNew, remoteIsLite: false, now: p.network.now)
        for c in p.b.localCandidates { p.a.addRemoteCandidate(c, now: p.network.now) }
        for c in p.a.localCandidates { p.b.addRemoteCandidate(c, now: p.network.now) }
        #expect(p.network.run(for: .seconds(2)) { p.b.selectedPair?.local == addr("10.0.1.2", 2001) && p.selectionsMatch })
        #expect(p.bothConnected)
    }

    @Test func withNothingLeftItFailsOnlyAfterTheCheckingTimeout() throws {
        let p = AgentPair()
        #expect(p.network.run(for: .seconds(2)) { p.bothConnected })
        let lostAt = p.network.now
        #expect(p.a.removeLocalBase(p.aBases[0], now: lostAt))
        #expect(p.a.localCandidates.isEmpty && p.a.stats.pairs.isEmpty)
        #expect(p.network.run(for: .seconds(60)) { p.a.state == .failed })
        let failedAt = try #require(p.network.time(of: p.a, entering: .failed))
        #expect(failedAt == lostAt - p.network.start + .seconds(30))
        #expect(p.network.states(of: p.a).suffix(2) == [.disconnected, .failed])
    }

    @Test func serverReflexiveCandidatesGoWithTheirBase() throws {
        let stun = addr("203.0.113.1", 3478)
        var config = ICEConfiguration()
        config.stunServers = [stun]
        let network = SimulatedNetwork()
        network.stunServers = [stun]
        network.nat = [wifi: addr("198.51.100.1", 40000), lte: addr("198.51.100.2", 40001)]
        // (No end of candidates: b's checks to a's host addresses come back from the NAT's.)
        let p = AgentPair(network: network, aConfig: config, aBases: [wifi, lte], endOfCandidates: false)
        #expect(network.run(for: .seconds(2)) { p.bothConnected && p.a.localCandidates.filter { $0.type == .srflx }.count == 2 },
                "\(p.a.state) \(p.b.state) \(p.a.localCandidates)")
        p.a.removeLocalBase(lte, now: network.now)
        network.run(for: .milliseconds(10))
        let removed = removedCandidates(network, p.a)
        #expect(removed.map(\.type) == [.host, .srflx], "\(removed)")
        #expect(removed.last?.address == "198.51.100.2")
        #expect(p.a.localCandidates.filter { $0.type == .srflx }.map(\.address) == ["198.51.100.1"])
    }

    @Test func aRemovedBaseTakesItsServerReflexiveQueryAlong() throws {
        let stun = addr("203.0.113.1", 3478)
        var config = ICEConfiguration()
        config.stunServers = [stun]
        let network = SimulatedNetwork()
        network.filter = { _, to in to != stun }   // the server never answers
        let a = ICEAgent(role: .controlling, local: ICECredentials(ufrag: "aaaa", pwd: "aaaaaaaaaaaaaaaaaaaaaaaa"), configuration: config)
        network.add(a, name: "a", bases: [wifi])
        network.run(for: .milliseconds(10))
        #expect(!network.events(of: a).contains(.gatheringComplete), "waiting for the server")
        a.removeLocalBase(wifi, now: network.now)
        // Gathering completes at once: the query from the removed base is not waited for.
        network.run(for: .milliseconds(100))
        #expect(network.events(of: a).contains(.gatheringComplete))
        #expect(a.pollTimeout() == nil)
    }
}

/// Restarts as continual gathering needs them.
@Suite struct RestartRecoveryTests {
    @Test func aFailedAgentRecoversByRestarting() throws {
        let p = AgentPair()
        #expect(p.network.run(for: .seconds(2)) { p.bothConnected })
        p.network.filter = { _, _ in false }
        #expect(p.network.run(for: .seconds(40)) { p.a.state == .failed })
        p.network.filter = { _, _ in true }
        let aNew = ICECredentials(ufrag: "AAAA", pwd: "AAAAAAAAAAAAAAAAAAAAAAAA")
        let bNew = ICECredentials(ufrag: "BBBB", pwd: "BBBBBBBBBBBBBBBBBBBBBBBB")
        p.a.restart(local: aNew, now: p.network.now)
        #expect(p.a.state == .checking && p.a.selectedPair == nil, "W3C: restartIce() is how a failed connection recovers")
        p.b.restart(local: bNew, now: p.network.now)
        p.a.setRemoteCredentials(bNew, remoteIsLite: false, now: p.network.now)
        p.b.setRemoteCredentials(aNew, remoteIsLite: false, now: p.network.now)
        for c in p.b.localCandidates { p.a.addRemoteCandidate(c, now: p.network.now) }
        for c in p.a.localCandidates { p.b.addRemoteCandidate(c, now: p.network.now) }
        #expect(p.network.run(for: .seconds(2)) { p.bothConnected && p.selectionsMatch })
    }

    @Test func aRestartDuringAnOutageDoesNotPutOffTheFailure() throws {
        let p = AgentPair()
        #expect(p.network.run(for: .seconds(2)) { p.bothConnected })
        p.network.run(for: .seconds(3))
        p.network.filter = { _, _ in false }
        let lastAnswer = try #require(p.network.sent.last { $0.transmit.local == p.bBases[0] && $0.message?.messageClass == .successResponse })
        #expect(p.network.run(for: .seconds(10)) { p.a.state == .disconnected })
        // A restart mid-outage (the app's automatic one): checks start over, consent does not.
        p.network.run(for: .seconds(3))
        let aNew = ICECredentials(ufrag: "AAAA", pwd: "AAAAAAAAAAAAAAAAAAAAAAAA")
        let bNew = ICECredentials(ufrag: "BBBB", pwd: "BBBBBBBBBBBBBBBBBBBBBBBB")
        p.a.restart(local: aNew, now: p.network.now)
        p.a.setRemoteCredentials(bNew, remoteIsLite: false, now: p.network.now)
        for c in p.b.localCandidates { p.a.addRemoteCandidate(c, now: p.network.now) }
        #expect(p.network.run(for: .seconds(60)) { p.a.state == .failed })
        let failedAt = try #require(p.network.time(of: p.a, entering: .failed))
        // 30 s after the last consent answer arrived (10 ms on the way), as without the restart.
        #expect(failedAt == lastAnswer.time - p.network.start + .milliseconds(10) + .seconds(30))
    }
}
