import Testing
@testable import SDP

@Suite("Building descriptions from scratch")
struct BuildTests {
    @Test func buildAPublishOfferLikeAClientWould() throws {
        var audio = MediaDescription(kind: "audio", connection: Connection(address: "0.0.0.0"))
        audio.mid = "0"
        audio.iceUfrag = "uf01"
        audio.icePwd = "pw0123456789012345678901"
        audio.iceOptions = ["trickle"]
        audio.fingerprint = Fingerprint(algorithm: "sha-256", bytes: Array(0..<32))
        audio.setup = .actpass
        audio.direction = .sendonly
        audio.msid = MSID(streamID: "stream", trackID: "audio-track")
        audio.rtcpMux = true
        audio.rtcpRsize = true
        audio.setCodecs([Codec(payloadType: 111, name: "opus", clockRate: 48000, channels: 2,
                               fmtp: "minptime=10;useinbandfec=1",
                               feedback: [RTCPFeedback(payloadType: "111", type: "transport-cc")])])
        audio.ssrcs = [SSRCAttribute(ssrc: 1111, name: "cname", value: "c")]

        var video = audio
        video.kind = "video"
        video.mid = "1"
        video.msid = MSID(streamID: "stream", trackID: "video-track")
        video.setCodecs([
            Codec(payloadType: 102, name: "H264", clockRate: 90000,
                  fmtp: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
                  feedback: [RTCPFeedback(payloadType: "102", type: "nack"),
                             RTCPFeedback(payloadType: "102", type: "nack", parameter: "pli")]),
            Codec(payloadType: 103, name: "rtx", clockRate: 90000, fmtp: "apt=102"),
        ])
        video.extMaps = [ExtMap(id: 4, uri: "urn:ietf:params:rtp-hdrext:sdes:mid")]
        video.ssrcGroups = [SSRCGroup(semantics: "FID", ssrcs: [2222, 3333])]
        video.ssrcs = [SSRCAttribute(ssrc: 2222, name: "cname", value: "c"),
                       SSRCAttribute(ssrc: 3333, name: "cname", value: "c")]

        var offer = SessionDescription(
            origin: Origin(sessionID: "123456789", sessionVersion: 2), media: [audio, video])
        offer.bundleGroups = [["0", "1"]]
        offer.msidSemantic = "WMS stream"

        let text = offer.serialize()
        #expect(text.hasPrefix("v=0\r\no=- 123456789 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0 1\r\n"))
        #expect(text.contains("\r\nm=audio 9 UDP/TLS/RTP/SAVPF 111\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\n"))
        #expect(text.contains("\r\nm=video 9 UDP/TLS/RTP/SAVPF 102 103\r\n"))
        #expect(text.contains("a=fingerprint:sha-256 00:01:02:03:04:05:06:07:08:09:0A:0B:0C:0D:0E:0F:10:"))
        #expect(text.hasSuffix("a=ssrc:3333 cname:c\r\na=extmap:4 urn:ietf:params:rtp-hdrext:sdes:mid\r\na=ssrc-group:FID 2222 3333\r\n"))
        #expect(!text.contains("\n\n") && !text.replacingCRLF.contains("\n"))

        let parsed = try SessionDescription(parsing: text)
        #expect(parsed == offer)
        #expect(parsed.media[1].codecs.map(\.name) == ["H264", "rtx"])
        #expect(parsed.media[0].direction == .sendonly)
    }

    @Test func emptyTimingStillSerializesAValidDescription() throws {
        let sdp = SessionDescription(timing: [])
        let text = sdp.serialize()
        #expect(text == "v=0\r\no=- 0 0 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n")
        #expect(try SessionDescription(parsing: text) == SessionDescription())
        #expect(sdp.description == text)
    }

    @Test func mediaLineWithPortCount() throws {
        let m = MediaDescription(kind: "video", port: 5004, portCount: 2, proto: "RTP/AVP", formats: ["96"])
        let text = SessionDescription(media: [m]).serialize()
        #expect(text.hasSuffix("m=video 5004/2 RTP/AVP 96\r\n"))
        #expect(try SessionDescription(parsing: text).media == [m])
    }
}

extension String {
    /// The text with every CRLF removed, to check no bare LF is left.
    var replacingCRLF: String { split(separator: "\r\n", omittingEmptySubsequences: false).joined() }
}
