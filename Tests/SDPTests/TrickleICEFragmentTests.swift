import SeededRandom
import Testing
@testable import SDP

@Suite("trickle-ice-sdpfrag (RFC 8840 §9, RFC 9725 §4.3)")
struct TrickleICEFragmentTests {
    /// RFC 8840 §4.4's shape: credentials at session level, one m= line named by a=mid.
    static let rfc8840 = """
        a=ice-pwd:asd88fgpdd777uzjYhagZg
        a=ice-ufrag:8hhY
        m=audio 5000 RTP/AVP 0
        a=mid:1
        a=candidate:1 1 UDP 2130706431 10.0.1.17 5000 typ host
        a=candidate:2 1 UDP 1694498815 192.0.2.3 5000 typ srflx raddr 10.0.1.17 rport 8998
        a=end-of-candidates

        """

    /// RFC 9725 §4.3.2's trickle PATCH body: group at session level, credentials in the m= section.
    static let rfc9725Trickle = """
        a=group:BUNDLE 0 1\r
        m=audio 9 UDP/TLS/RTP/SAVPF 111\r
        a=mid:0\r
        a=ice-ufrag:EsAw\r
        a=ice-pwd:P2uYro0UCOQ4zxjKXaWCBui1\r
        a=candidate:1387637174 1 udp 2122260223 192.0.2.1 61764 typ host generation 0 ufrag EsAw network-id 1\r
        a=candidate:3471623853 1 udp 2122194687 198.51.100.2 61765 typ host generation 0 ufrag EsAw network-id 2\r
        a=end-of-candidates\r

        """

    /// RFC 9725 §4.3.3's restart answer: everything at session level.
    static let rfc9725Restart = """
        a=ice-lite\r
        a=ice-ufrag:289b31b754eaa438\r
        a=ice-pwd:0b66f472495ef0ccac7bda653ab6be49ea13114472a5d10a\r
        a=candidate:1 1 udp 2130706431 198.51.100.1 39132 typ host\r
        a=end-of-candidates\r

        """

    @Test func rfc8840Example() throws {
        let f = try TrickleICEFragment(parsing: Self.rfc8840)
        #expect(f.attributes.map(\.name) == ["ice-pwd", "ice-ufrag"])
        #expect(try f.iceCredentials()! == ("8hhY", "asd88fgpdd777uzjYhagZg"))
        #expect(f.media.count == 1 && f.media[0].kind == "audio" && f.media[0].port == 5000 && f.media[0].mid == "1")
        let groups = f.candidateGroups
        #expect(groups.count == 1 && groups[0].mid == "1" && groups[0].endOfCandidates)
        #expect(groups[0].candidates == ["candidate:1 1 UDP 2130706431 10.0.1.17 5000 typ host",
                                         "candidate:2 1 UDP 1694498815 192.0.2.3 5000 typ srflx raddr 10.0.1.17 rport 8998"])
    }

    @Test func rfc9725TrickleAndRestartExamples() throws {
        let t = try TrickleICEFragment(parsing: Self.rfc9725Trickle)
        #expect(try t.iceCredentials()! == ("EsAw", "P2uYro0UCOQ4zxjKXaWCBui1"))
        #expect(t.candidateGroups.map(\.mid) == ["0"] && t.candidateGroups[0].candidates.count == 2)
        #expect(t.value(of: "group") == "BUNDLE 0 1")
        let r = try TrickleICEFragment(parsing: Self.rfc9725Restart)
        #expect(r.hasAttribute("ice-lite") && r.media.isEmpty)
        #expect(try r.iceCredentials()!.ufrag == "289b31b754eaa438")
        let groups = r.candidateGroups
        #expect(groups.count == 1 && groups[0].mid == nil && groups[0].candidates.count == 1 && groups[0].endOfCandidates)
    }

    @Test("serialize → parse gives the same fragment, CRLF lines in order", arguments: [rfc8840, rfc9725Trickle, rfc9725Restart])
    func roundTrip(_ text: String) throws {
        let f = try TrickleICEFragment(parsing: text)
        let written = f.serialize()
        #expect(try TrickleICEFragment(parsing: written) == f)
        #expect(written == text.split(whereSeparator: \.isNewline).map { $0 + "\r\n" }.joined())
    }

    @Test("malformed fragments name the line and the fault", arguments: [
        ("", 1, "empty trickle-ice-sdpfrag"),
        ("v=0\r\na=ice-ufrag:x\r\n", 1, "v= lines do not belong in a trickle-ice-sdpfrag"),
        ("a=ice-ufrag:x\r\nc=IN IP4 1.2.3.4\r\n", 2, "c= lines do not belong"),
        ("a=ice-ufrag:x\r\nhello\r\n", 2, "expected \"a=<attribute>\""),
        ("m=audio 9 UDP/TLS/RTP/SAVPF 111\r\na=candidate:1 1 udp 1 1.2.3.4 5 typ host\r\n", 2, "has no a=mid"),
        ("m=audio 9 UDP/TLS/RTP/SAVPF 111\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\na=mid:1\r\n", 2, "has no a=mid"),
        ("m=audio x UDP/TLS/RTP/SAVPF 111\r\na=mid:0\r\n", 1, "m= port \"x\" is not a number"),
        ("a=ice-ufrag:a\r\na=ice-ufrag:b\r\n", 2, "duplicate a=ice-ufrag"),
        ("a=candidate\r\n", 1, "a=candidate needs a value"),
        ("a=mid:0\r\na=\r\n", 2, "attribute name is empty"),
    ])
    func malformed(_ text: String, _ line: Int, _ message: String) {
        #expect {
            _ = try TrickleICEFragment(parsing: text)
        } throws: { error in
            guard let e = error as? SDPError else { return false }
            return e.line == line && e.message.contains(message)
        }
    }

    @Test func halfCredentialsAndTwoGenerationsAreRefused() throws {
        let half = try TrickleICEFragment(parsing: "a=ice-ufrag:abcd\r\n")
        #expect(throws: SDPError.self) { try half.iceCredentials() }
        let two = try TrickleICEFragment(parsing: "a=ice-ufrag:a\r\na=ice-pwd:p\r\nm=audio 9 RTP/AVP 0\r\na=mid:0\r\na=ice-ufrag:b\r\na=ice-pwd:q\r\n")
        #expect {
            try two.iceCredentials()
        } throws: { ($0 as? SDPError)?.description == "the fragment carries two different ICE credentials (ufrag a and b)" }
        #expect(try TrickleICEFragment(parsing: "m=audio 9 RTP/AVP 0\r\na=mid:0\r\na=end-of-candidates\r\n").iceCredentials() == nil)
    }

    static let answer = """
        v=0\r
        o=- 1 5 IN IP4 127.0.0.1\r
        s=-\r
        t=0 0\r
        a=ice-lite\r
        a=group:BUNDLE 0 1\r
        m=audio 9 UDP/TLS/RTP/SAVPF 111\r
        a=mid:0\r
        a=ice-ufrag:oldU\r
        a=ice-pwd:oldPasswordOldPassword\r
        a=candidate:1 1 udp 2130706431 127.0.0.1 8000 typ host\r
        a=end-of-candidates\r
        a=rtpmap:111 opus/48000/2\r
        m=video 9 UDP/TLS/RTP/SAVPF 96\r
        a=mid:1\r
        a=ice-ufrag:oldU\r
        a=ice-pwd:oldPasswordOldPassword\r
        a=rtpmap:96 VP8/90000\r

        """

    @Test func fragmentOfADescriptionIsItsBundleTransport() throws {
        let sdp = try SessionDescription(parsing: Self.answer)
        let f = try #require(TrickleICEFragment(iceOf: sdp))
        #expect(f.serialize() == """
            a=ice-lite\r
            a=ice-ufrag:oldU\r
            a=ice-pwd:oldPasswordOldPassword\r
            m=audio 9 UDP/TLS/RTP/SAVPF 111\r
            a=mid:0\r
            a=candidate:1 1 udp 2130706431 127.0.0.1 8000 typ host\r
            a=end-of-candidates\r

            """)
        let only = try #require(TrickleICEFragment(iceOf: sdp, candidates: ["candidate:9 1 udp 1 10.0.0.1 9 typ host"], endOfCandidates: false))
        #expect(only.candidateGroups.map(\.candidates) == [["candidate:9 1 udp 1 10.0.0.1 9 typ host"]])
        #expect(only.candidateGroups[0].endOfCandidates == false)
        #expect(TrickleICEFragment(iceOf: SessionDescription()) == nil)
    }

    @Test func applyingARestartReplacesCredentialsAndCandidates() throws {
        let sdp = try SessionDescription(parsing: Self.answer)
        let restart = try TrickleICEFragment(parsing: Self.rfc9725Restart)
        let after = try sdp.applyingICERestart(restart)
        #expect(after.origin.sessionVersion == 6)
        for m in after.media {
            #expect(m.iceUfrag == "289b31b754eaa438" && m.icePwd == "0b66f472495ef0ccac7bda653ab6be49ea13114472a5d10a")
        }
        #expect(after.media[0].candidates == ["candidate:1 1 udp 2130706431 198.51.100.1 39132 typ host"])
        #expect(after.media[0].endOfCandidates && !after.media[1].endOfCandidates && after.media[1].candidates.isEmpty)
        #expect(after.media[0].rtpMaps == sdp.media[0].rtpMaps && after.iceLite)
        #expect(try SessionDescription(parsing: after.serialize()) == after)

        let unknownMid = try TrickleICEFragment(parsing: "a=ice-ufrag:n\r\na=ice-pwd:p\r\nm=audio 9 RTP/AVP 0\r\na=mid:7\r\na=candidate:1 1 udp 1 1.2.3.4 5 typ host\r\n")
        #expect { try sdp.applyingICERestart(unknownMid) } throws: { "\($0)".contains("mid \"7\"") }
        let noCredentials = try TrickleICEFragment(parsing: "a=end-of-candidates\r\n")
        #expect(throws: SDPError.self) { try sdp.applyingICERestart(noCredentials) }
    }

    @Test func mutatedFragmentsNeverTrap() {
        var rng = SplitMix64(seed: 9725)
        for seed in [Self.rfc8840, Self.rfc9725Trickle, Self.rfc9725Restart] {
            let bytes = Array(seed.utf8)
            for _ in 0..<400 {
                var m = bytes
                for _ in 0..<Int.random(in: 1...6, using: &rng) {
                    let i = Int.random(in: 0..<m.count, using: &rng)
                    switch Int.random(in: 0..<3, using: &rng) {
                    case 0: m[i] = UInt8.random(in: 0...255, using: &rng)
                    case 1: m.remove(at: i)
                    default: m.insert(UInt8.random(in: 0...127, using: &rng), at: i)
                    }
                    if m.isEmpty { break }
                }
                fuzzSDPFragment(m)
            }
        }
    }
}
