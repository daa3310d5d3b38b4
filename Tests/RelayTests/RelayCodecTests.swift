import PeerConnection
import SDP
import STUN
import Testing
import Transport
@testable import Relay

/// What the relay answers a publisher (which H.264 format it is to send) and, for every pair of
/// a published and a player's H.264 profile (42001f, 42e01f, 4d001f, 640c1f), whether and on which
/// payload type the player gets the stream: through the relay's own PeerConnection answers.
@Suite struct RelayCodecTests {
    func peer(_ config: PeerConnection.Configuration = .init()) throws -> PeerConnection {
        var config = config
        config.interfaceAddresses = [SocketAddress(host: "127.0.0.1", port: 0)].compactMap { $0 }
        return try PeerConnection(configuration: config, loop: EventLoop(name: "relay-codecs"))
    }

    /// An offer of `codecs` (video, `direction`) answered by a relay-configured peer; returns the
    /// answer's video codecs (none if rejected) and the relay side's negotiated codecs.
    func exchange(offering codecs: [RtpCodecCapability], direction: TransceiverDirection,
                  relay config: PeerConnection.Configuration) async throws -> (answer: [SDP.Codec], negotiated: [RtpCodecParameters]) {
        let offerer = try peer(), relay = try peer(config)
        _ = try await offerer.addTransceiver(.video, TransceiverInit(direction: direction), codecs: codecs)
        try await offerer.setLocalDescription(try await offerer.createOffer())
        try await relay.setRemoteDescription(try #require(offerer.localDescription))
        let answer = try await relay.createAnswer()
        try await relay.setLocalDescription(answer)
        let video = try #require(try SDP.SessionDescription(parsing: answer.sdp).media.first)
        let negotiated = relay.transceivers.first?.negotiatedCodecs ?? []
        await offerer.close()
        await relay.close()
        return (video.port == 0 ? [] : video.codecs.filter { $0.name != "rtx" }, negotiated)
    }

    func publish(_ codecs: [RtpCodecCapability], prefer: RtpCodecCapability? = nil) async throws -> (answer: [SDP.Codec], published: RtpCodecParameters?) {
        let video = RelayCodecs.publisherVideo(preferred: prefer)
        let config = passThroughConfiguration(direction: .recvonly, videoCodecs: video.codecs, codecOrder: video.order)
        let (answer, negotiated) = try await exchange(offering: codecs, direction: .sendonly, relay: config)
        return (answer, negotiated.first)
    }

    /// Chromium's H.264 formats in its order (Baseline first), then VP8.
    static let chromium: [RtpCodecCapability] = [
        .h264(profileLevelID: "42001f", preferredPayloadType: 102), .h264(profileLevelID: "42001f", packetizationMode: "0", preferredPayloadType: 104),
        .h264(profileLevelID: "42e01f", preferredPayloadType: 106), .h264(profileLevelID: "42e01f", packetizationMode: "0", preferredPayloadType: 108),
        .h264(profileLevelID: "4d001f", preferredPayloadType: 112), .h264(profileLevelID: "640c1f", preferredPayloadType: 116),
    ]

    @Test func publisherOfferingSeveralH264ProfilesIsAnsweredConstrainedBaselineFirst() async throws {
        let (answer, published) = try await publish(Self.chromium + [.vp8])
        #expect(answer.first?.payloadType == 106, "\(answer)")
        #expect(published?.payloadType == 106)
        // Every format it offered stays in the answer, in its order after that.
        #expect(answer.map(\.payloadType) == [106, 102, 104, 108, 112, 116, 96])
    }

    @Test func publisherKeepsItsCodecOrderUnlessPreferCodecSaysOtherwise() async throws {
        // VP8 first (a browser without an H.264 encoder): the relay must not answer H.264 first.
        #expect(try await publish([.vp8] + Self.chromium).answer.first?.name == "VP8")
        let preferH264 = try await publish([.vp8] + Self.chromium, prefer: .h264).answer
        #expect(preferH264.first?.payloadType == 106, "\(preferH264)")
        #expect(try await publish(Self.chromium + [.vp8], prefer: .vp8).answer.first?.name == "VP8")
    }

    @Test func publisherLevelIsNotCappedByTheRelay() async throws {
        // A pass-through receives any level: answering our 3.1 would hold a 1080p publisher back.
        let (answer, _) = try await publish([.h264(profileLevelID: "42e034")])
        #expect(answer.first?.parameters.value(for: "profile-level-id") == "42e034", "\(answer)")
        let onlyBaseline = try await publish([.h264(profileLevelID: "42001f")]).answer
        #expect(onlyBaseline.first?.parameters.value(for: "profile-level-id") == "42001f", "\(onlyBaseline)")
    }

    static let profiles = ["42001f", "42e01f", "4d001f", "640c1f"]
    static var pairs: [(String, String)] { profiles.flatMap { p in profiles.map { (p, $0) } } }

    /// A stream published as `publishedID`; a player offering only `playerID` (pm 1, and pm 0 of
    /// the published profile, which must never be picked).
    @Test(arguments: pairs)
    func playerMapping(_ publishedID: String, _ playerID: String) async throws {
        let published = try #require(try await publish([.h264(profileLevelID: publishedID, preferredPayloadType: 100)]).published)
        let config = passThroughConfiguration(direction: .sendonly, audioCodecs: RelayCodecs.player(nil, kind: .audio),
                                              videoCodecs: RelayCodecs.player(published, kind: .video))
        let offered: [RtpCodecCapability] = [.h264(profileLevelID: publishedID, packetizationMode: "0", preferredPayloadType: 120),
                                             .h264(profileLevelID: playerID, preferredPayloadType: 122)]
        let (answer, negotiated) = try await exchange(offering: offered, direction: .recvonly, relay: config)
        let route = RelayCodecs.route(for: published, among: negotiated)

        let profile = ["42001f": "B", "42e01f": "CB", "4d001f": "M", "640c1f": "CH"]
        // A Baseline stream (what OpenH264 sends as 42001f) is served as constrained baseline:
        // every profile's decoder takes both; Main and constrained High only themselves.
        let served = publishedID == playerID || ["B", "CB"].contains(profile[publishedID])
        #expect(route?.payloadType == (served ? 122 : nil), "\(publishedID) → player \(playerID): \(answer)")
        #expect(answer.map(\.payloadType) == (served ? [122] : []), "\(publishedID) → player \(playerID)")
        // The answer names the player's profile at the relay's pass-through level.
        if served {
            #expect(answer.first?.parameters.value(for: "profile-level-id") == "\(playerID.prefix(4))34")
        }
    }

    @Test func publisherWithABadProfileLevelIDServesNoH264Player() async throws {
        let published = try #require(try await publish([.h264(profileLevelID: "zz")]).published)
        #expect(RelayCodecs.player(published, kind: .video).isEmpty)
        #expect(RelayCodecs.route(for: published, among: [published]) == nil)
    }
}
