import Testing
@testable import SDP

@Suite("Descriptions from real peers")
struct RealPeerTests {
    @Test func chromiumOfferSessionLevel() throws {
        let sdp = try SessionDescription(parsing: Fixtures.chromiumOffer)
        #expect(sdp.version == 0)
        #expect(sdp.origin == Origin(username: "-", sessionID: "4611731400430051336", sessionVersion: 2,
                                     netType: "IN", addrType: "IP4", address: "127.0.0.1"))
        #expect(sdp.sessionName == "-")
        #expect(sdp.timing == [Timing(start: 0, stop: 0)])
        #expect(sdp.connection == nil)
        #expect(sdp.bundleGroups == [["0", "1"]])
        #expect(sdp.hasAttribute("extmap-allow-mixed"))
        #expect(sdp.msidSemantic == " WMS 5a3c9f0e-8d6b-4c41-9b8e-2f1d7c6a4e10")
        #expect(!sdp.iceLite)
        #expect(sdp.media.map(\.kind) == ["audio", "video"])
        #expect(sdp.media.map(\.mid) == ["0", "1"])
    }

    @Test func chromiumOfferAudio() throws {
        let sdp = try SessionDescription(parsing: Fixtures.chromiumOffer)
        let audio = try #require(sdp.media.first)
        #expect(audio.port == 9)
        #expect(audio.portCount == nil)
        #expect(audio.proto == "UDP/TLS/RTP/SAVPF")
        #expect(audio.formats == ["111", "63", "9", "0", "8", "13", "110", "126"])
        #expect(audio.connection == Connection(netType: "IN", addrType: "IP4", address: "0.0.0.0"))
        #expect(audio.iceUfrag == "Xq7r")
        #expect(audio.icePwd == "L6xC9gQ2p8vB0dK3mN5tR1yZ")
        #expect(audio.iceOptions == ["trickle"])
        #expect(audio.setup == .actpass)
        #expect(audio.fingerprint?.algorithm == "sha-256")
        #expect(audio.fingerprint?.bytes?.count == 32)
        #expect(audio.direction == .sendrecv)
        #expect(audio.rtcpMux && audio.rtcpRsize)
        #expect(audio.candidates == [
            "candidate:1467250027 1 udp 2122260223 127.0.0.1 46243 typ host generation 0 network-id 1",
            "candidate:434815215 1 tcp 1518280447 127.0.0.1 9 typ host tcptype active generation 0 network-id 1",
        ])
        #expect(audio.extMaps.map(\.id) == [1, 2, 3, 4])
        #expect(audio.extMaps.last == ExtMap(id: 4, uri: "urn:ietf:params:rtp-hdrext:sdes:mid"))
        #expect(audio.msid == MSID(streamID: "5a3c9f0e-8d6b-4c41-9b8e-2f1d7c6a4e10",
                                   trackID: "0b5d3a8c-7f2e-4d19-a6c4-1e9b8f7d2c30"))
        #expect(audio.ssrcNumbers == [3_735_928_559])
        #expect(audio.ssrcs.first == SSRCAttribute(ssrc: 3_735_928_559, name: "cname", value: "Jq3nB5r9XwYtK2aP"))

        let codecs = audio.codecs
        #expect(codecs.map(\.name) == ["opus", "red", "G722", "PCMU", "PCMA", "CN", "telephone-event", "telephone-event"])
        let opus = try #require(codecs.first)
        #expect(opus == Codec(payloadType: 111, name: "opus", clockRate: 48000, channels: 2,
                              fmtp: "minptime=10;useinbandfec=1",
                              feedback: [RTCPFeedback(payloadType: "111", type: "transport-cc")]))
        #expect(opus.parameters == [FormatParameter(name: "minptime", value: "10"),
                                    FormatParameter(name: "useinbandfec", value: "1")])
        #expect(codecs[1].fmtp == "111/111")
        #expect(codecs[6].clockRate == 48000 && codecs[7].clockRate == 8000)
    }

    @Test func chromiumOfferVideo() throws {
        let sdp = try SessionDescription(parsing: Fixtures.chromiumOffer)
        let video = try #require(sdp.media(withMid: "1"))
        #expect(video.kind == "video")
        #expect(video.codecs.map(\.payloadType) == [96, 97, 102, 103, 127, 121])
        #expect(video.codecs.map(\.name) == ["VP8", "rtx", "H264", "rtx", "H264", "rtx"])
        #expect(video.fmtp[97] == "apt=96")
        #expect(video.fmtp[121] == "apt=127")
        let h264 = try #require(video.codecs.first { $0.payloadType == 127 })
        #expect(h264.parameters.value(for: "profile-level-id") == "42e01f")
        #expect(h264.parameters.value(for: "packetization-mode") == "1")
        #expect(h264.feedback.count == 5)
        #expect(h264.feedback.contains(RTCPFeedback(payloadType: "127", type: "nack", parameter: "pli")))
        #expect(h264.feedback.contains(RTCPFeedback(payloadType: "127", type: "ccm", parameter: "fir")))
        #expect(video.ssrcGroups == [SSRCGroup(semantics: "FID", ssrcs: [1_094_882_123, 2_869_180_390])])
        #expect(video.ssrcNumbers == [1_094_882_123, 2_869_180_390])
        #expect(video.ssrcs.filter { $0.name == "msid" }.map(\.value) == [
            "5a3c9f0e-8d6b-4c41-9b8e-2f1d7c6a4e10 9c1e4f7a-2b8d-4e6c-8a3f-5d7b1c9e2f40",
            "5a3c9f0e-8d6b-4c41-9b8e-2f1d7c6a4e10 9c1e4f7a-2b8d-4e6c-8a3f-5d7b1c9e2f40",
        ])
        #expect(video.extMaps.map(\.id) == [14, 2, 13, 3, 5, 4, 10, 11])
        #expect(video.candidates.count == 1)
    }

    @Test func srsAnswer() throws {
        let sdp = try SessionDescription(parsing: Fixtures.srsAnswer)
        #expect(sdp.origin.username == "SRS/6.0.113(Bee)")
        #expect(sdp.sessionName == "SRSPublishSession")
        #expect(sdp.iceLite)
        #expect(sdp.bundleGroups == [["0", "1"]])
        #expect(sdp.media.count == 2)
        for media in sdp.media {
            #expect(media.setup == .passive)
            #expect(media.direction == .recvonly)
            #expect(media.candidates == ["candidate:0 1 udp 2130706431 127.0.0.1 8000 typ host generation 0"])
            #expect(media.extMaps.isEmpty)
            #expect(media.iceUfrag == "8d3v61a2")
            #expect(media.rtcpMux && media.rtcpRsize)
        }
        let audio = sdp.media[0]
        #expect(audio.codecs.map(\.payloadType) == [96])
        #expect(audio.codecs.first?.name == "opus")
        #expect(audio.codecs.first?.channels == 2)
        let video = sdp.media[1]
        let h264 = try #require(video.codecs.first)
        #expect(h264.payloadType == 101)
        #expect(h264.name == "H264")
        #expect(h264.clockRate == 90000)
        #expect(h264.channels == nil)
        #expect(h264.parameters.value(for: "profile-level-id") == "42e01f")
        #expect(h264.parameters == [
            FormatParameter(name: "level-asymmetry-allowed", value: "1"),
            FormatParameter(name: "packetization-mode", value: "1"),
            FormatParameter(name: "profile-level-id", value: "42e01f"),
        ])
        #expect(h264.feedback.map(\.type) == ["transport-cc", "nack", "nack"])
        #expect(h264.feedback.map(\.parameter) == [nil, nil, "pli"])
    }

    @Test func aiortcOffer() throws {
        let sdp = try SessionDescription(parsing: Fixtures.aiortcOffer)
        #expect(sdp.bundleGroups == [["0", "1", "2"]])
        #expect(sdp.msidSemantic == "WMS *")
        let audio = sdp.media[0]
        #expect(audio.port == 53721)
        #expect(audio.connection?.address == "127.0.0.1")
        #expect(audio.endOfCandidates)
        #expect(audio.fingerprints.map(\.algorithm) == ["sha-256", "sha-384"])
        #expect(audio.fingerprints.last?.bytes?.count == 48)
        #expect(audio.codecs.map(\.name) == ["opus", "PCMU", "PCMA"])
        #expect(audio.codecs.map(\.channels) == [2, nil, nil])
        let video = sdp.media[1]
        #expect(video.ssrcGroups.first?.ssrcs == [1_487_235_619, 3_021_869_477])
        #expect(video.codecs.first { $0.name == "H264" }?.parameters.value(for: "profile-level-id") == "42e01f")
        let data = sdp.media[2]
        #expect(data.kind == "application")
        #expect(data.proto == "UDP/DTLS/SCTP")
        #expect(data.formats == ["webrtc-datachannel"])
        #expect(data.sctpPort == 5000)
        #expect(data.maxMessageSize == 65536)
        #expect(data.codecs.isEmpty)
        #expect(data.direction == .sendrecv)
        #expect(data.directionIfPresent == nil)
    }

    @Test func legacyDataChannelSectionKeepsSctpmap() throws {
        let text = Fixtures.crlf([
            "v=0", "o=- 1 1 IN IP4 0.0.0.0", "s=-", "t=0 0",
            "m=application 9 DTLS/SCTP 5000",
            "a=sctpmap:5000 webrtc-datachannel 1024",
            "a=fmtp:webrtc-datachannel max-message-size=100000",
        ])
        let sdp = try SessionDescription(parsing: text)
        #expect(sdp.media[0].value(of: "sctpmap") == "5000 webrtc-datachannel 1024")
        #expect(sdp.media[0].fmtp.isEmpty)
        #expect(sdp.serialize() == text)
    }
}
