import PeerConnection
import SDP

/// What the relay negotiates: which of a publisher's codecs it takes, and for each player a
/// payload type that carries what the publisher sends (it forwards, never transcodes).
enum RelayCodecs {
    /// H.264 as the relay receives it: a pass-through takes any level, so it says the highest
    /// (an answer with level asymmetry carries our level; without, the offer's lower one).
    static func passThroughH264(profile: H264ProfileLevelID.Profile = .constrainedBaseline,
                                packetizationMode: String = "1") -> RtpCodecCapability {
        let id = H264ProfileLevelID(profile: profile, level: .level5_2)?.description ?? ""   // every profile has 5.2
        return .h264(profileLevelID: id, packetizationMode: packetizationMode)
    }

    /// A publisher's video: anything we can forward, in the offerer's order of codecs (a browser
    /// without an H.264 encoder offers VP8 first and sends only that) unless `--prefer-codec`
    /// says otherwise. Among the H.264 formats a publisher offers, constrained baseline first:
    /// every player's decoder takes it (Chromium offers Baseline 42001f before it).
    static func publisherVideo(preferred: RtpCodecCapability?) -> (codecs: [RtpCodecCapability], order: CodecOrder) {
        var video = [passThroughH264(), .vp8] + RtpCodecCapability.passThroughVideo
        if let preferred { video.insert(preferred.isH264 ? passThroughH264() : preferred, at: 0) }
        return (video, preferred == nil ? .offererCodecsLocalFormats : .local)
    }

    /// What a player may be answered for a kind: the publisher's codec; for H.264 every profile
    /// whose decoder takes the published stream (`H264FormatParameters.receives`), its own first.
    static func player(_ published: RtpCodecParameters?, kind: MediaKind, transportCC: Bool = false) -> [RtpCodecCapability] {
        guard let published else { return [] }
        // What the player's link carries picks its simulcast layer and bounds its resends
        // (ViewerAllocation.swift): with `transportCC` (a simulcast's players unless
        // `--player-remb`) a send-side estimate from its transport-cc feedback, else its REMB.
        let feedback: [RtcpFeedback] = (kind == .video ? [.remb, .nack, .pli, .fir] : []) + (transportCC ? [.transportCC] : [])
        let same = RtpCodecCapability(mimeType: published.mimeType, clockRate: published.clockRate, channels: published.channels,
                                      rtcpFeedback: feedback, preferredPayloadType: published.payloadType)
        guard same.isH264 else { return [same] }
        let stream = H264FormatParameters(fmtp: published.sdpFmtpLine)
        guard let own = stream.profileLevelID?.profile else { return [] }
        let profiles = [own] + H264ProfileLevelID.Profile.allCases.filter { $0 != own }
        return profiles.compactMap { profile in
            var cap = passThroughH264(profile: profile, packetizationMode: stream.packetizationMode)
            guard H264FormatParameters(fmtp: cap.sdpFmtpLine).receives(stream) else { return nil }
            cap.rtcpFeedback = feedback
            cap.preferredPayloadType = published.payloadType
            return cap
        }
    }

    /// The player's negotiated codec that the publisher's stream goes out as: the same codec
    /// (for H.264 the same profile) if the player has it, else one whose decoder takes it.
    static func route(for published: RtpCodecParameters, among negotiated: [RtpCodecParameters]) -> RtpCodecParameters? {
        let candidates = negotiated.filter { $0.mimeType.lowercased() == published.mimeType.lowercased() && $0.clockRate == published.clockRate }
        guard published.mimeType.lowercased().hasSuffix("/h264") else { return candidates.first }
        let stream = H264FormatParameters(fmtp: published.sdpFmtpLine)
        let formats = candidates.map { ($0, H264FormatParameters(fmtp: $0.sdpFmtpLine)) }
        return (formats.first { $0.1.isSameCodec(as: stream) } ?? formats.first { $0.1.receives(stream) })?.0
    }
}
