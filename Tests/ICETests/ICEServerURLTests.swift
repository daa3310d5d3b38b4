import Testing
import STUN
@testable import ICE

@Suite struct ICEServerURLTests {
    @Test func parsesRFC7064And7065Forms() throws {
        let a = try ICEServerURL(parsing: "stun:stun.example.org")
        #expect(a.scheme == .stun && a.host == "stun.example.org" && a.port == 3478 && a.transport == .udp)
        let b = try ICEServerURL(parsing: "turn:127.0.0.1:3479?transport=tcp")
        #expect(b.scheme == .turn && b.host == "127.0.0.1" && b.port == 3479 && b.transport == .tcp)
        let c = try ICEServerURL(parsing: "turns:turn.example.org")
        #expect(c.port == 5349 && c.transport == .tcp)
        let d = try ICEServerURL(parsing: "TURN:[2001:db8::1]:4000?transport=UDP")
        #expect(d.host == "2001:db8::1" && d.port == 4000 && d.transport == .udp)
        #expect(d.description == "turn:[2001:db8::1]:4000?transport=udp")
        #expect(try ICEServerURL(parsing: "turn:localhost").transport == .udp)
    }

    @Test func badURLsSayWhatIsWrong() {
        let cases: [(String, String)] = [
            ("stun.example.org", "has no scheme"),
            ("http://x", "expected stun, stuns, turn or turns"),
            ("stun://x", "without \"//\""),
            ("turn:", "has no host"),
            ("turn:host:0", "is not a number in 1...65535"),
            ("turn:host:99999", "is not a number in 1...65535"),
            ("turn:host?transport=sctp", "transport=udp or transport=tcp"),
            ("stun:host?transport=udp", "take no query"),
            ("turn:[::1", "closing \"]\""),
            ("turn:ho st", "characters a host name cannot have"),
        ]
        for (text, expected) in cases {
            do {
                _ = try ICEServerURL(parsing: text)
                Issue.record("\(text) parsed")
            } catch {
                #expect(error.message.contains(expected), "\(text): \(error.message)")
            }
        }
    }
}

@Suite struct RelayCandidateTests {
    @Test func relayBaseGivesARelayCandidateThatPairsAndChecks() throws {
        let agent = ICEAgent(role: .controlling, local: ICECredentials(ufrag: "aaaa", pwd: "aaaaaaaaaaaaaaaaaaaaaa"))
        let now = ContinuousClock.now
        let relayed = try #require(SocketAddress(host: "127.0.0.1", port: 50000))
        let mapped = try #require(SocketAddress(host: "127.0.0.1", port: 40000))
        let server = try #require(SocketAddress(host: "127.0.0.1", port: 3478))
        agent.addRelayCandidate(relayed: relayed, mapped: mapped, server: server, now: now)
        agent.finishGathering(now: now)
        guard case .localCandidate(let c)? = agent.pollEvent() else {
            Issue.record("no candidate event")
            return
        }
        #expect(c.type == .relay && c.port == 50000 && c.relatedAddress == "127.0.0.1" && c.relatedPort == 40000)
        #expect(c.priority >> 24 == 0)   // type preference 0
        #expect(agent.localCandidateType(relayed) == .relay)
        agent.setRemoteCredentials(ICECredentials(ufrag: "bbbb", pwd: "bbbbbbbbbbbbbbbbbbbbbb"), remoteIsLite: false, now: now)
        agent.addRemoteCandidate(try Candidate(parsing: "candidate:1 1 udp 2130706431 127.0.0.1 6000 typ host"), now: now)
        agent.handleTimeout(now: now + .milliseconds(100))
        var sent: [ICETransmit] = []
        while let t = agent.pollTransmit() { sent.append(t) }
        // The check leaves from the relayed address: the driver sends it through the allocation.
        #expect(sent.contains { $0.local == relayed && $0.remote.port == 6000 })
    }
}
