import Testing
import STUN
@testable import ICE

/// Which remote addresses ICE vouches for (the driver lets only those carry DTLS and media),
/// and the bounds that keep a candidate flood cheap.
@Suite struct VerificationTests {
    private static func request(from ufrags: String, key: String) -> [UInt8] {
        STUNMessage(messageClass: .request, attributes: [.username(ufrags), .iceControlling(9), .priority(1)])
            .encode(integrityKey: Array(key.utf8), fingerprint: true)
    }

    @Test("only an authenticated check verifies its source; a forged one, a wrong ufrag or a plain parse do not")
    func onlyAuthenticatedChecksVerify() {
        let agent = ICEAgent(role: .controlled, local: ICECredentials(ufrag: "aaaa", pwd: "aaaaaaaaaaaaaaaaaaaaaaaa"),
                             configuration: ICEConfiguration(lite: true))
        let now = ContinuousClock.now
        let base = addr("10.0.0.1", 1000), peer = addr("10.0.0.2", 2000), spoofed = addr("10.0.0.3", 3000)
        agent.addLocalBase(base, now: now)
        #expect(!agent.handleSTUN(Self.request(from: "aaaa:bbbb", key: "not-the-password-at-all!"), from: spoofed, local: base, now: now))
        #expect(!agent.handleSTUN(Self.request(from: "zzzz:bbbb", key: "aaaaaaaaaaaaaaaaaaaaaaaa"), from: spoofed, local: base, now: now))
        #expect(!agent.isVerified(spoofed))
        #expect(agent.handleSTUN(Self.request(from: "aaaa:bbbb", key: "aaaaaaaaaaaaaaaaaaaaaaaa"), from: peer, local: base, now: now))
        #expect(agent.isVerified(peer))
        #expect(!agent.isVerified(spoofed))
    }

    @Test("a full agent verifies the peer's address from its authenticated response")
    func responsesVerify() {
        let p = AgentPair()
        #expect(p.network.run(for: .seconds(5)) { p.bothConnected })
        #expect(p.a.isVerified(p.bBases[0]))
        #expect(p.b.isVerified(p.aBases[0]))
        #expect(!p.a.isVerified(addr("10.0.0.66", 6666)))
    }

    @Test("an ICE restart keeps only the path media stays on verified")
    func restartKeepsOnlyTheMediaPath() {
        let p = AgentPair()
        #expect(p.network.run(for: .seconds(5)) { p.bothConnected })
        let remote = p.a.selectedPair!.remote
        p.a.restart(local: .random(), now: p.network.now)
        #expect(p.a.isVerified(remote))
    }

    @Test("signalled candidates beyond the cap are refused and counted; the room says so first")
    func signalledCandidatesAreCapped() throws {
        var config = ICEConfiguration(lite: true)
        config.maxRemoteCandidates = 8
        let agent = ICEAgent(role: .controlled, local: .random(), configuration: config)
        let now = ContinuousClock.now
        agent.addLocalBase(addr("10.0.0.1", 1000), now: now)
        let flood = try (1...20).map { try Candidate(parsing: "candidate:\($0) 1 udp 5 10.1.0.\($0) 9 typ host") }
        #expect(agent.newRemoteAddresses(in: flood) == 20)
        #expect(agent.remoteCandidateRoom == 8)
        agent.addRemoteCandidates(flood, now: now)
        #expect(agent.remoteCandidates.count == 8)
        #expect(agent.stats.refusedRemoteCandidates == 12)
        #expect(agent.remoteCandidateRoom == 0)
        // A known address is no new load: it is neither counted nor refused.
        #expect(agent.newRemoteAddresses(in: Array(flood.prefix(3))) == 0)
        agent.addRemoteCandidate(flood[0], now: now)
        #expect(agent.stats.refusedRemoteCandidates == 12)
    }

    @Test("authenticated checks from ever new addresses keep at most the cap, dropping the oldest learned but never the selected path")
    func learnedCandidatesAreBounded() {
        var config = ICEConfiguration(lite: true)
        config.maxRemoteCandidates = 4
        let agent = ICEAgent(role: .controlled, local: ICECredentials(ufrag: "aaaa", pwd: "aaaaaaaaaaaaaaaaaaaaaaaa"),
                             configuration: config)
        let now = ContinuousClock.now
        let base = addr("10.0.0.1", 1000)
        agent.addLocalBase(base, now: now)
        let valid = Self.request(from: "aaaa:bbbb", key: "aaaaaaaaaaaaaaaaaaaaaaaa")
        let first = addr("10.2.0.1", 5000)
        #expect(agent.handleSTUN(valid, from: first, local: base, now: now))
        #expect(agent.selectedPair?.remote == first)
        for port in 5001...5100 {
            #expect(agent.handleSTUN(valid, from: addr("10.2.0.1", UInt16(port)), local: base, now: now))
        }
        #expect(agent.remoteCandidates.count == 4)
        #expect(agent.stats.pairs.count <= 4)
        #expect(agent.isVerified(first))
        #expect(!agent.isVerified(addr("10.2.0.1", 5001)))
        #expect(agent.isVerified(addr("10.2.0.1", 5100)))
    }
}
