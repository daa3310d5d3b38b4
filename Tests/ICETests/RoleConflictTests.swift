import Testing
import STUN
@testable import ICE

/// Direct, single-agent checks of RFC 8445 §7.3.1.1 (incoming request) and §7.2.5.1 (487 response).
@Suite struct RoleConflictTests {
    let base = addr("10.0.0.1", 1000)
    let peer = addr("10.0.0.2", 2000)
    let localCreds = ICECredentials(ufrag: "aaaa", pwd: "aaaaaaaaaaaaaaaaaaaaaaaa")
    let remoteCreds = ICECredentials(ufrag: "bbbb", pwd: "bbbbbbbbbbbbbbbbbbbbbbbb")
    let now = ContinuousClock.now

    func agent(_ role: ICERole, tieBreaker: UInt64) -> ICEAgent {
        let agent = ICEAgent(role: role, local: localCreds, tieBreaker: tieBreaker)
        agent.addLocalBase(base, now: now)
        agent.setRemoteCredentials(remoteCreds, remoteIsLite: false, now: now)
        while agent.pollEvent() != nil {}
        return agent
    }

    func request(_ roleAttribute: STUNAttribute) -> [UInt8] {
        STUNMessage(messageClass: .request, attributes: [.username("aaaa:bbbb"), roleAttribute, .priority(99)])
            .encode(integrityKey: Array(localCreds.pwd.utf8))
    }

    func replies(_ agent: ICEAgent) -> [STUNMessage] {
        var out: [STUNMessage] = []
        while let t = agent.pollTransmit() {
            if let m = try? STUNMessage(parsing: t.bytes), m.messageClass != .request { out.append(m) }
        }
        return out
    }

    @Test func controllingWithSmallerTieBreakerSwitches() {
        let a = agent(.controlling, tieBreaker: 10)
        a.handleSTUN(request(.iceControlling(20)), from: peer, local: base, now: now)
        #expect(a.role == .controlled)
        #expect(a.pollEvent() == .roleChanged(.controlled))
        #expect(replies(a).map(\.messageClass) == [.successResponse])
    }

    @Test func controllingWithLargerTieBreakerAnswers487() throws {
        let a = agent(.controlling, tieBreaker: 30)
        a.handleSTUN(request(.iceControlling(20)), from: peer, local: base, now: now)
        #expect(a.role == .controlling)
        let transmit = try #require(a.pollTransmit())
        let reply = try STUNMessage(parsing: transmit.bytes)
        #expect(reply.errorCode?.code == 487)
        #expect(STUNMessage.verifyIntegrity(transmit.bytes, key: Array(localCreds.pwd.utf8)))
        #expect(a.stats.roleConflicts == 1)
    }

    @Test func controlledWithLargerTieBreakerSwitches() {
        let a = agent(.controlled, tieBreaker: 30)
        a.handleSTUN(request(.iceControlled(20)), from: peer, local: base, now: now)
        #expect(a.role == .controlling)
        #expect(replies(a).map(\.messageClass) == [.successResponse])
    }

    @Test func controlledWithSmallerTieBreakerAnswers487() {
        let a = agent(.controlled, tieBreaker: 10)
        a.handleSTUN(request(.iceControlled(20)), from: peer, local: base, now: now)
        #expect(a.role == .controlled)
        #expect(replies(a).map { $0.errorCode?.code } == [487])
    }

    @Test func receiving487SwitchesRoleAndRetriesTheCheck() throws {
        let a = agent(.controlling, tieBreaker: 10)
        a.addRemoteCandidate(Candidate(foundation: "1", priority: 2_130_706_431, address: "10.0.0.2", port: 2000, type: .host), now: now)
        let first = try #require(a.pollTransmit())
        let check = try STUNMessage(parsing: first.bytes)
        #expect(check.iceControlling == 10)
        #expect(check.username == "bbbb:aaaa")
        #expect(check.priority == Candidate.priority(type: .prflx, localPreference: 65535))
        #expect(STUNMessage.verifyIntegrity(first.bytes, key: Array(remoteCreds.pwd.utf8)))
        #expect(STUNMessage.verifyFingerprint(first.bytes))
        let conflict = STUNMessage(messageClass: .errorResponse, transactionID: check.transactionID,
                                   attributes: [.errorCode(code: 487, reason: "Role Conflict")])
            .encode(integrityKey: Array(remoteCreds.pwd.utf8))
        a.handleSTUN(conflict, from: peer, local: base, now: now + .milliseconds(20))
        #expect(a.role == .controlled)
        a.handleTimeout(now: now + .milliseconds(70))
        let retry = try STUNMessage(parsing: try #require(a.pollTransmit()).bytes)
        #expect(retry.iceControlled == 10)
        #expect(retry.transactionID != check.transactionID)
    }

    @Test func controlledFollowsTheLatestNomination() throws {
        // Both pairs valid on the controlled side; the controlling peer nominates one, then another.
        let a = agent(.controlled, tieBreaker: 1)
        let peer2 = addr("10.0.0.3", 3000)
        for (remote, request) in [(peer, 1), (peer2, 2)] {
            _ = request
            a.handleSTUN(STUNMessage(messageClass: .request, attributes: [.username("aaaa:bbbb"), .iceControlling(5), .priority(7)])
                .encode(integrityKey: Array(localCreds.pwd.utf8)), from: remote, local: base, now: now)
        }
        // Answer a's triggered checks.
        var t = now
        for _ in 0..<10 {
            t = t + .milliseconds(50)
            a.handleTimeout(now: t)
            while let out = a.pollTransmit() {
                guard let m = try? STUNMessage(parsing: out.bytes), m.messageClass == .request else { continue }
                let ok = STUNMessage(messageClass: .successResponse, transactionID: m.transactionID,
                                     attributes: [.xorMappedAddress(base)]).encode(integrityKey: Array(remoteCreds.pwd.utf8))
                a.handleSTUN(ok, from: out.remote, local: base, now: t)
            }
        }
        #expect(a.stats.pairs.filter { $0.state == .succeeded }.count == 2)
        #expect(a.selectedPair == nil)
        for remote in [peer, peer2] {
            a.handleSTUN(STUNMessage(messageClass: .request, attributes: [.username("aaaa:bbbb"), .iceControlling(5), .priority(7), .useCandidate])
                .encode(integrityKey: Array(localCreds.pwd.utf8)), from: remote, local: base, now: t)
            #expect(a.selectedPair?.remote == remote)
        }
        #expect(a.state == .connected)
    }
}
