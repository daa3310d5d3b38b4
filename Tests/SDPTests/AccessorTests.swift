import Testing
@testable import SDP

@Suite("Typed attribute accessors")
struct AccessorTests {
    func media(_ lines: [String]) throws -> MediaDescription {
        let text = Fixtures.crlf(["v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=-", "t=0 0", "m=video 9 UDP/TLS/RTP/SAVPF 96 97"] + lines)
        return try #require(try SessionDescription(parsing: text).media.first)
    }

    /// What Chromium offers for three `sendEncodings` (lowest first), Firefox's paused form, and
    /// the answer's mirror image built from the types.
    @Test func ridAndSimulcastFromChromiumAndBack() throws {
        let offer = try media(["a=rid:q send", "a=rid:h send", "a=rid:f send pt=96,97;max-width=1280;max-height=720;max-fps=30",
                               "a=simulcast:send q;h;~f,f2"])
        #expect(offer.rids.map(\.id) == ["q", "h", "f"] && offer.rids.allSatisfy { $0.direction == .send })
        let full = try #require(offer.rids.last)
        #expect(full.payloadTypes == [96, 97] && full.limit("max-width") == 1280 && full.limit("max-fps") == 30)
        #expect(full.restrictions.map(\.name) == ["max-width", "max-height", "max-fps"])
        let simulcast = try #require(offer.simulcast)
        #expect(simulcast.sendRIDs == ["q", "h", "f"] && simulcast.recv.isEmpty)
        #expect(simulcast.send[2] == [.init(rid: "f", paused: true), .init(rid: "f2")])
        #expect(simulcast.attributeValue == "send q;h;~f,f2")
        #expect(full.attributeValue == "f send pt=96,97;max-width=1280;max-height=720;max-fps=30")

        var answer = MediaDescription(kind: "video", port: 9, proto: "UDP/TLS/RTP/SAVPF", formats: ["96"])
        answer.rids = offer.rids.map { RID(id: $0.id, direction: .recv) }
        answer.simulcast = Simulcast(recv: simulcast.send)
        #expect(answer.attributes == [
            Attribute("rid", "q recv"), Attribute("rid", "h recv"), Attribute("rid", "f recv"),
            Attribute("simulcast", "recv q;h;~f,f2"),
        ])
        answer.simulcast = nil
        #expect(!answer.hasAttribute("simulcast"))
        #expect(RID(attributeValue: "a_b-9 recv") == RID(id: "a_b-9", direction: .recv))
        #expect(Simulcast(attributeValue: "recv a send b") == Simulcast(send: [[.init(rid: "b")]], recv: [[.init(rid: "a")]]))
    }

    @Test func iceCredentialsAndOptionsAtBothLevels() throws {
        var session = SessionDescription()
        session.iceUfrag = "abcd"
        session.icePwd = "0123456789abcdefghijklmn"
        session.iceOptions = ["trickle", "renomination"]
        #expect(session.attributes == [
            Attribute("ice-ufrag", "abcd"), Attribute("ice-pwd", "0123456789abcdefghijklmn"),
            Attribute("ice-options", "trickle renomination"),
        ])
        session.iceUfrag = "wxyz"
        #expect(session.attributes[0] == Attribute("ice-ufrag", "wxyz"))
        session.iceOptions = []
        session.icePwd = nil
        #expect(session.attributes == [Attribute("ice-ufrag", "wxyz")])

        var m = MediaDescription(kind: "audio")
        m.iceUfrag = "u"
        #expect(m.iceUfrag == "u")
        #expect(m.iceOptions.isEmpty)
    }

    @Test func iceLiteAndBundleGroups() throws {
        var session = SessionDescription(attributes: [Attribute("group", "LS 0 1"), Attribute("group", "BUNDLE 0 1")])
        #expect(session.bundleGroups == [["0", "1"]])
        #expect(session.groups == [Group(semantics: "LS", mids: ["0", "1"]), Group(semantics: "BUNDLE", mids: ["0", "1"])])
        session.bundleGroups = [["a", "b", "c"]]
        #expect(session.attributes == [Attribute("group", "LS 0 1"), Attribute("group", "BUNDLE a b c")])
        session.bundleGroups = []
        #expect(session.attributes == [Attribute("group", "LS 0 1")])
        session.bundleGroups = [["0"]]
        #expect(session.attributes.last == Attribute("group", "BUNDLE 0"))

        #expect(!session.iceLite)
        session.iceLite = true
        session.iceLite = true
        #expect(session.attributes(named: "ice-lite") == [Attribute("ice-lite")])
        session.iceLite = false
        #expect(!session.hasAttribute("ice-lite"))
    }

    @Test func fingerprintNormalizesToUppercaseAndDecodesBytes() throws {
        let m = try media(["a=fingerprint:sha-256 ab:cd:0f"])
        let fingerprint = try #require(m.fingerprint)
        #expect(fingerprint.algorithm == "sha-256")
        #expect(fingerprint.value == "AB:CD:0F")
        #expect(fingerprint.bytes == [0xAB, 0xCD, 0x0F])
        #expect(Fingerprint(algorithm: "sha-1", bytes: [0, 1, 0xfe]).value == "00:01:FE")
        #expect(Fingerprint(attributeValue: "sha-256 ZZ:00") == nil)

        var session = SessionDescription()
        session.fingerprint = Fingerprint(algorithm: "sha-256", bytes: [0x12, 0x34])
        #expect(session.attributes == [Attribute("fingerprint", "sha-256 12:34")])
        session.fingerprints.append(Fingerprint(algorithm: "sha-384", value: "aa"))
        #expect(session.values(of: "fingerprint") == ["sha-256 12:34", "sha-384 AA"])
        session.fingerprint = nil
        #expect(session.attributes.isEmpty)
    }

    @Test func setupRole() throws {
        #expect(try media(["a=setup:passive"]).setup == .passive)
        #expect(try media([]).setup == nil)
        var m = try media(["a=mid:0", "a=setup:actpass", "a=rtcp-mux"])
        m.setup = .active
        #expect(m.attributes == [Attribute("mid", "0"), Attribute("setup", "active"), Attribute("rtcp-mux")])
        for role in SetupRole.allCases {
            m.setup = role
            #expect(m.setup == role)
        }
        var session = SessionDescription()
        session.setup = .holdconn
        #expect(session.value(of: "setup") == "holdconn")
    }

    @Test func flags() throws {
        var m = try media(["a=rtcp-mux", "a=end-of-candidates"])
        #expect(m.rtcpMux && !m.rtcpRsize && m.endOfCandidates)
        m.rtcpRsize = true
        m.rtcpMux = false
        m.endOfCandidates = false
        #expect(m.attributes == [Attribute("rtcp-rsize")])
        var session = SessionDescription()
        session.endOfCandidates = true
        #expect(session.endOfCandidates)
    }

    @Test func directionDefaultsToSendrecvAndReplacesInPlace() throws {
        var m = try media(["a=mid:0", "a=sendonly", "a=rtcp-mux"])
        #expect(m.direction == .sendonly)
        m.direction = .inactive
        #expect(m.attributes == [Attribute("mid", "0"), Attribute("inactive"), Attribute("rtcp-mux")])
        var plain = try media([])
        #expect(plain.direction == .sendrecv)
        #expect(plain.directionIfPresent == nil)
        plain.direction = .recvonly
        #expect(plain.attributes == [Attribute("recvonly")])
        #expect(Direction.sendonly.reversed == .recvonly)
        #expect(Direction.sendrecv.reversed == .sendrecv)
        #expect(Direction.recvonly.receives && !Direction.recvonly.sends)
        var session = SessionDescription()
        #expect(session.direction == .sendrecv)
        session.direction = .inactive
        #expect(session.attributes == [Attribute("inactive")])
    }

    @Test func sessionDirectionIsTheDefaultForMedia() throws {
        let text = Fixtures.crlf([
            "v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=-", "t=0 0", "a=recvonly",
            "m=audio 9 RTP/AVP 0", "m=video 9 RTP/AVP 96", "a=inactive",
        ])
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.effectiveDirection(of: sdp.media[0]) == .recvonly)
        #expect(sdp.effectiveDirection(of: sdp.media[1]) == .inactive)
        #expect(SessionDescription().effectiveDirection(of: MediaDescription(kind: "audio")) == .sendrecv)
    }

    @Test func bundleOnly() throws {
        var m = try media(["a=bundle-only"])
        #expect(m.bundleOnly)
        m.bundleOnly = false
        #expect(m.attributes.isEmpty)
    }

    @Test func midAndMsid() throws {
        var m = try media(["a=mid:video0", "a=msid:- track1"])
        #expect(m.mid == "video0")
        #expect(m.msid == MSID(streamID: "-", trackID: "track1"))
        m.mid = "1"
        m.msids = [MSID(streamID: "s1", trackID: "t1"), MSID(streamID: "s2")]
        #expect(m.attributes == [Attribute("mid", "1"), Attribute("msid", "s1 t1"), Attribute("msid", "s2")])
        #expect(m.msids.last == MSID(streamID: "s2", trackID: nil))
        m.msid = nil
        #expect(m.attributes == [Attribute("mid", "1")])
    }

    @Test func rtpmapAndFmtp() throws {
        var m = try media([
            "a=rtpmap:96 VP8/90000", "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96",
            "a=rtpmap:111 opus/48000/2", "a=fmtp:111  minptime=10; useinbandfec=1",
        ])
        #expect(m.rtpMaps == [
            RTPMap(payloadType: 96, encodingName: "VP8", clockRate: 90000),
            RTPMap(payloadType: 97, encodingName: "rtx", clockRate: 90000),
            RTPMap(payloadType: 111, encodingName: "opus", clockRate: 48000, channels: 2),
        ])
        #expect(m.rtpMap(for: 111)?.channels == 2)
        #expect(m.rtpMap(for: 5) == nil)
        #expect(m.fmtp == [97: "apt=96", 111: "minptime=10; useinbandfec=1"])
        #expect(m.formatParameters(for: 111) == [FormatParameter(name: "minptime", value: "10"),
                                                  FormatParameter(name: "useinbandfec", value: "1")])
        #expect(m.formatParameters(for: 96).isEmpty)

        m.fmtp = [97: "apt=96;rtx-time=3000", 96: "max-fr=30"]
        // Existing line edited in place; the 111 line dropped; 96 appended (formats order).
        #expect(m.values(of: "fmtp") == ["97 apt=96;rtx-time=3000", "96 max-fr=30"])
        m.setFMTP(nil, for: 97)
        m.setFMTP("x=1", for: 120)
        #expect(m.values(of: "fmtp") == ["96 max-fr=30", "120 x=1"])

        m.rtpMaps = [RTPMap(payloadType: 100, encodingName: "H264", clockRate: 90000)]
        #expect(m.values(of: "rtpmap") == ["100 H264/90000"])
        #expect(m.attributes.first == Attribute("rtpmap", "100 H264/90000"))
        #expect(RTPMap(attributeValue: "8 PCMA/8000/1")?.channels == 1)
        #expect(RTPMap(attributeValue: "200 PCMA/8000") == nil)
    }

    @Test func formatParameterParsing() {
        #expect(FormatParameter.parse("a=1;b=2;;c;d=x=y; e = 5 ") == [
            FormatParameter(name: "a", value: "1"), FormatParameter(name: "b", value: "2"),
            FormatParameter(name: "c", value: nil), FormatParameter(name: "d", value: "x=y"),
            FormatParameter(name: "e", value: "5"),
        ])
        #expect(FormatParameter.parse("0-15") == [FormatParameter(name: "0-15")])
        #expect(FormatParameter.parse("").isEmpty)
        let params = FormatParameter.parse("profile-level-id=42e01f;packetization-mode=1")
        #expect(FormatParameter.serialize(params) == "profile-level-id=42e01f;packetization-mode=1")
        #expect(params.value(for: "PROFILE-LEVEL-ID") == "42e01f")
        #expect(params.value(for: "absent") == nil)
    }

    @Test func rtcpFeedback() throws {
        var m = try media(["a=rtcp-fb:* transport-cc", "a=rtcp-fb:96 nack pli", "a=rtcp-fb:96 ccm fir", "a=rtcp-fb:97 trr-int 100"])
        #expect(m.rtcpFeedback == [
            RTCPFeedback(payloadType: "*", type: "transport-cc"),
            RTCPFeedback(payloadType: "96", type: "nack", parameter: "pli"),
            RTCPFeedback(payloadType: "96", type: "ccm", parameter: "fir"),
            RTCPFeedback(payloadType: "97", type: "trr-int", parameter: "100"),
        ])
        #expect(m.rtcpFeedback[0].applies(to: 5))
        #expect(!m.rtcpFeedback[1].applies(to: 97))
        m.rtcpFeedback = [RTCPFeedback(payloadType: "96", type: "goog-remb")]
        #expect(m.attributes == [Attribute("rtcp-fb", "96 goog-remb")])
    }

    @Test func extmapAtBothLevels() throws {
        let m = try media([
            "a=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid",
            "a=extmap:2/sendonly http://example.com/ext attr1 attr2",
            "a=extmap:200/recvonly urn:x",
        ])
        #expect(m.extMaps == [
            ExtMap(id: 1, uri: "urn:ietf:params:rtp-hdrext:sdes:mid"),
            ExtMap(id: 2, direction: "sendonly", uri: "http://example.com/ext", attributes: "attr1 attr2"),
            ExtMap(id: 200, direction: "recvonly", uri: "urn:x"),
        ])
        #expect(m.extMaps[1].attributeValue == "2/sendonly http://example.com/ext attr1 attr2")
        var session = SessionDescription()
        session.extMaps = [ExtMap(id: 3, uri: "urn:y")]
        #expect(session.attributes == [Attribute("extmap", "3 urn:y")])
        #expect(session.extMaps.first?.id == 3)
    }

    @Test func ssrcAndGroups() throws {
        var m = try media([
            "a=ssrc-group:FID 1 2", "a=ssrc-group:SIM 10 20 30",
            "a=ssrc:1 cname:abc", "a=ssrc:1 msid:stream track", "a=ssrc:2 cname:abc", "a=ssrc:4294967295 label",
        ])
        #expect(m.ssrcGroups == [SSRCGroup(semantics: "FID", ssrcs: [1, 2]), SSRCGroup(semantics: "SIM", ssrcs: [10, 20, 30])])
        #expect(m.ssrcs == [
            SSRCAttribute(ssrc: 1, name: "cname", value: "abc"),
            SSRCAttribute(ssrc: 1, name: "msid", value: "stream track"),
            SSRCAttribute(ssrc: 2, name: "cname", value: "abc"),
            SSRCAttribute(ssrc: 4_294_967_295, name: "label", value: nil),
        ])
        #expect(m.ssrcNumbers == [1, 2, 4_294_967_295])
        m.ssrcGroups = [SSRCGroup(semantics: "FID", ssrcs: [5, 6])]
        m.ssrcs = [SSRCAttribute(ssrc: 5, name: "cname", value: "x")]
        #expect(m.attributes == [Attribute("ssrc-group", "FID 5 6"), Attribute("ssrc", "5 cname:x")])
    }

    @Test func candidates() throws {
        var m = try media(["a=mid:0", "a=candidate:1 1 udp 2130706431 127.0.0.1 5000 typ host", "a=rtcp-mux"])
        #expect(m.candidates == ["candidate:1 1 udp 2130706431 127.0.0.1 5000 typ host"])
        m.addCandidate("candidate:2 1 udp 1694498815 203.0.113.7 6000 typ srflx raddr 127.0.0.1 rport 5000")
        m.addCandidate("3 1 tcp 1 127.0.0.1 9 typ host tcptype active")
        #expect(m.candidates.count == 3)
        #expect(m.candidates[2] == "candidate:3 1 tcp 1 127.0.0.1 9 typ host tcptype active")
        #expect(m.attributes.last == Attribute("rtcp-mux"))
        m.candidates = ["candidate:9 1 udp 1 ::1 7 typ host"]
        #expect(m.attributes == [Attribute("mid", "0"), Attribute("candidate", "9 1 udp 1 ::1 7 typ host"), Attribute("rtcp-mux")])
    }

    @Test func sctpPortAndMaxMessageSize() throws {
        let session = try SessionDescription(parsing: Fixtures.dataChannelOffer)
        var data = session.media[0]
        #expect(data.sctpPort == 5000)
        #expect(data.maxMessageSize == 262_144)
        #expect(data.setup == .active)
        data.sctpPort = 5001
        data.maxMessageSize = nil
        #expect(data.sctpPort == 5001)
        #expect(!data.hasAttribute("max-message-size"))
    }

    @Test func codecsSetterRewritesPayloadLines() throws {
        var m = try media([
            "a=mid:0", "a=rtpmap:96 VP8/90000", "a=rtcp-fb:* nack", "a=rtpmap:97 rtx/90000", "a=fmtp:97 apt=96", "a=rtcp-mux",
        ])
        let before = m.codecs
        #expect(before.map(\.feedback) == [[RTCPFeedback(payloadType: "*", type: "nack")],
                                           [RTCPFeedback(payloadType: "*", type: "nack")]])
        m.setCodecs([
            Codec(payloadType: 101, name: "H264", clockRate: 90000,
                  fmtp: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
                  feedback: [RTCPFeedback(payloadType: "101", type: "nack"), RTCPFeedback(payloadType: "*", type: "nack"),
                             RTCPFeedback(payloadType: "101", type: "nack", parameter: "pli")]),
        ])
        #expect(m.formats == ["101"])
        #expect(m.attributes == [
            Attribute("mid", "0"),
            Attribute("rtpmap", "101 H264/90000"),
            Attribute("rtcp-fb", "101 nack"),
            Attribute("rtcp-fb", "101 nack pli"),
            Attribute("fmtp", "101 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f"),
            Attribute("rtcp-mux"),
        ])
        #expect(m.codecs.first?.parameters.value(for: "profile-level-id") == "42e01f")
    }

    @Test func genericHelpers() {
        var m = MediaDescription(kind: "audio")
        m.addAttribute("x", "1")
        m.addAttribute("x", "2")
        m.addAttribute("y")
        #expect(m.values(of: "x") == ["1", "2"])
        #expect(m.value(of: "y") == nil && m.hasAttribute("y"))
        m.setValue("3", for: "x")
        #expect(m.attributes == [Attribute("x", "3"), Attribute("y")])
        m.replaceAttributes(named: "y", with: ["a", "b"])
        #expect(m.attributes == [Attribute("x", "3"), Attribute("y", "a"), Attribute("y", "b")])
        m.removeAttributes(named: "y")
        #expect(m.attributes == [Attribute("x", "3")])
        #expect(Attribute("rtcp-mux").description == "rtcp-mux")
        #expect(Attribute("mid", "0").description == "mid:0")
    }
}
