import PeerConnection
import SDP
import Testing
import Transport

/// Our answerer takes the H.264 formats of an offer by profile, not by fmtp string (libwebrtc's
/// rule), and answers with the negotiated level.
@Suite struct H264NegotiationTests {
    /// The video codecs of our default answer to an offer of `offered` (in that order).
    func answerVideo(to offered: [RtpCodecCapability]) async throws -> [SDP.Codec] {
        let offerer = try loopbackPeer(), answerer = try loopbackPeer()
        _ = try await offerer.addTransceiver(.video, TransceiverInit(direction: .sendrecv), codecs: offered)
        try await offerer.setLocalDescription(try await offerer.createOffer())
        try await answerer.setRemoteDescription(try #require(offerer.localDescription))
        let answer = try SDP.SessionDescription(parsing: try await answerer.createAnswer().sdp)
        await offerer.close()
        await answerer.close()
        let video = try #require(answer.media.first)
        return video.port == 0 ? [] : video.codecs.filter { $0.name != "rtx" }
    }

    /// Chromium's H.264 list, Baseline first, each with its payload type.
    let chromiumH264: [RtpCodecCapability] = [
        .h264(profileLevelID: "42001f", preferredPayloadType: 102), .h264(profileLevelID: "42001f", packetizationMode: "0", preferredPayloadType: 104),
        .h264(profileLevelID: "42e01f", preferredPayloadType: 106), .h264(profileLevelID: "42e01f", packetizationMode: "0", preferredPayloadType: 108),
        .h264(profileLevelID: "4d001f", preferredPayloadType: 112), .h264(profileLevelID: "640c1f", preferredPayloadType: 116),
    ]

    @Test func takesConstrainedBaselineOfChromiumsH264ListNotBaseline() async throws {
        let video = try await answerVideo(to: chromiumH264 + [.vp8])
        #expect(video.map(\.payloadType) == [106, 96], "\(video)")
        #expect(video.first?.fmtp == "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f")
    }

    @Test func matchesByProfileNotByString() async throws {
        // 42c01f is constrained baseline written with constraint_set0 too; 4d801f is constrained
        // baseline as Main writes it. Both are our format; the answer names our profile.
        for id in ["42c01f", "4d801f", "42e034"] {
            let video = try await answerVideo(to: [.h264(profileLevelID: id)])
            #expect(video.map(\.payloadType) == [102], "\(id)")
            #expect(video.first?.parameters.value(for: "profile-level-id") == "42e01f", "\(id): \(video)")
        }
    }

    @Test func answerLevelIsTheLowerWithoutLevelAsymmetry() async throws {
        var offered = RtpCodecCapability.h264
        offered.sdpFmtpLine = "packetization-mode=1;profile-level-id=42e00d"
        let video = try await answerVideo(to: [offered])
        #expect(video.first?.parameters.value(for: "profile-level-id") == "42e00d", "\(video)")
    }

    @Test func otherProfilesAndBadProfileLevelIDsAreNotAnswered() async throws {
        for id in ["42001f", "4d001f", "640c1f", "zz", "42e0", "42e0zz"] {
            #expect(try await answerVideo(to: [.h264(profileLevelID: id)]).isEmpty, "\(id)")
        }
        #expect(try await answerVideo(to: [.h264(profileLevelID: "42e01f", packetizationMode: "0")]).isEmpty)
    }
}
