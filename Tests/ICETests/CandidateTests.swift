import Testing
import STUN
@testable import ICE

@Suite struct CandidateTests {
    @Test func parsesChromiumHostLine() throws {
        let line = "a=candidate:2842365390 1 udp 2122260223 192.168.1.20 54321 typ host generation 0 ufrag Xy7a network-id 1 network-cost 10"
        let c = try Candidate(parsing: line)
        #expect(c.foundation == "2842365390")
        #expect(c.component == 1)
        #expect(c.transport == "udp")
        #expect(c.priority == 2_122_260_223)
        #expect(c.address == "192.168.1.20")
        #expect(c.port == 54321)
        #expect(c.type == .host)
        #expect(c.extensionValue("ufrag") == "Xy7a")
        #expect(c.extensions.map(\.0) == ["generation", "ufrag", "network-id", "network-cost"])
        #expect(c.socketAddress == SocketAddress(host: "192.168.1.20", port: 54321))
        #expect("a=" + c.attributeValue == line)
    }

    @Test func parsesSrflxMdnsTcpAndBareForms() throws {
        let srflx = try Candidate(parsing: "candidate:1 1 UDP 1686052607 203.0.113.9 40000 typ srflx raddr 10.0.0.5 rport 50000")
        #expect(srflx.transport == "udp")
        #expect(srflx.type == .srflx)
        #expect(srflx.relatedAddress == "10.0.0.5")
        #expect(srflx.relatedPort == 50000)
        #expect(srflx.attributeValue == "candidate:1 1 udp 1686052607 203.0.113.9 40000 typ srflx raddr 10.0.0.5 rport 50000")

        let mdns = try Candidate(parsing: "candidate:3 1 udp 2122262783 1f4712db-ea17-4bcf-a596-105139dfd8bf.local 61236 typ host")
        #expect(mdns.socketAddress == nil)

        let tcp = try Candidate(parsing: "1 1 tcp 1518280447 192.0.2.1 9 typ host tcptype active")
        #expect(tcp.transport == "tcp")
        #expect(tcp.extensionValue("tcptype") == "active")

        let v6 = try Candidate(parsing: "candidate:9 1 udp 2122197247 2001:db8::7 5000 typ host\r\n")
        #expect(v6.socketAddress?.host == "2001:db8::7")
    }

    @Test func rejectsMalformedLinesWithFieldNumbers() {
        let cases: [(String, String)] = [
            ("candidate:1 1 udp 5 1.2.3.4", "needs at least 8"),
            ("candidate:1 x udp 5 1.2.3.4 5 typ host", "field 2"),
            ("candidate:1 1 udp -5 1.2.3.4 5 typ host", "field 4"),
            ("candidate:1 1 udp 5 1.2.3.4 70000 typ host", "field 6"),
            ("candidate:1 1 udp 5 1.2.3.4 5 type host", "field 7"),
            ("candidate:1 1 udp 5 1.2.3.4 5 typ bogus", "field 8"),
            ("candidate:1 1 udp 5 1.2.3.4 5 typ srflx raddr", "field 9"),
            ("candidate:1 1 udp 5 1.2.3.4 5 typ srflx rport x", "rport"),
            ("candidate:f@o 1 udp 5 1.2.3.4 5 typ host", "foundation"),
        ]
        for (line, expected) in cases {
            do {
                _ = try Candidate(parsing: line)
                Issue.record("accepted \(line)")
            } catch {
                #expect(error.description.contains(expected), "\(line): \(error)")
            }
        }
    }

    @Test func priorityFormula() {
        // RFC 8445 §5.1.2.1 with the recommended type preferences.
        #expect(Candidate.priority(type: .host, localPreference: 65535, component: 1) == 2_130_706_431)
        #expect(Candidate.priority(type: .srflx, localPreference: 65535) == (100 << 24) | (65535 << 8) | 255)
        #expect(Candidate.priority(type: .prflx, localPreference: 0) == 110 << 24 | 255)
        #expect(Candidate.priority(type: .relay, localPreference: 10) == 10 << 8 | 255)
        // Pair priority: 2^32*MIN(G,D) + 2*MAX(G,D) + (G>D ? 1 : 0).
        #expect(CandidatePair.priority(local: 5, remote: 3, role: .controlling) == (3 << 32) + 10 + 1)
        #expect(CandidatePair.priority(local: 5, remote: 3, role: .controlled) == (3 << 32) + 10)
    }

    @Test func randomCredentialsAreIceChars() {
        let c = ICECredentials.random()
        #expect(c.ufrag.count >= 4)
        #expect(c.pwd.count >= 22)
        #expect((c.ufrag + c.pwd).allSatisfy(Candidate.isIceChar))
        #expect(ICECredentials.random() != c)
    }

    @Test func hostCandidatesForEveryBaseWithDistinctPreferences() {
        let agent = ICEAgent(role: .controlling, local: .random())
        let now = ContinuousClock.now
        agent.addLocalBase(addr("192.168.1.2", 5000), now: now)
        agent.addLocalBase(addr("10.8.0.2", 5001), now: now)
        agent.addLocalBase(addr("192.168.1.2", 5000), now: now)   // duplicate ignored
        var candidates: [Candidate] = []
        while let e = agent.pollEvent() { if case .localCandidate(let c) = e { candidates.append(c) } }
        #expect(candidates.count == 2)
        #expect(candidates.allSatisfy { $0.type == .host && $0.priority >> 24 == 126 })
        #expect(candidates[0].priority > candidates[1].priority)
        #expect(candidates[0].foundation != candidates[1].foundation)
        #expect(candidates[1].attributeValue.hasPrefix("candidate:\(candidates[1].foundation) 1 udp \(candidates[1].priority) 10.8.0.2 5001 typ host"))
    }
}
