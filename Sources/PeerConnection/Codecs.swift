import SDP

/// An RTCP feedback mechanism a codec supports ("nack", "nack pli", "ccm fir", "goog-remb", "transport-cc").
public struct RtcpFeedback: Sendable, Hashable {
    public var type: String
    public var parameter: String?
    public init(type: String, parameter: String? = nil) {
        self.type = type
        self.parameter = parameter
    }
    public static let nack = RtcpFeedback(type: "nack")
    public static let pli = RtcpFeedback(type: "nack", parameter: "pli")
    public static let fir = RtcpFeedback(type: "ccm", parameter: "fir")
    public static let remb = RtcpFeedback(type: "goog-remb")
    public static let transportCC = RtcpFeedback(type: "transport-cc")
}

/// W3C `RTCRtpCodecCapability` (what we can do) …
public struct RtpCodecCapability: Sendable, Hashable {
    public var mimeType: String          // "video/VP8"
    public var clockRate: Int
    public var channels: Int?
    /// nil matches any fmtp of the same codec (a pass-through endpoint accepts what is offered).
    public var sdpFmtpLine: String?
    public var rtcpFeedback: [RtcpFeedback]
    /// Payload type to use when we are the offerer.
    public var preferredPayloadType: UInt8

    public init(mimeType: String, clockRate: Int, channels: Int? = nil, sdpFmtpLine: String? = nil,
                rtcpFeedback: [RtcpFeedback] = [], preferredPayloadType: UInt8) {
        self.mimeType = mimeType
        self.clockRate = clockRate
        self.channels = channels
        self.sdpFmtpLine = sdpFmtpLine
        self.rtcpFeedback = rtcpFeedback
        self.preferredPayloadType = preferredPayloadType
    }

    public var name: String { String(mimeType.split(separator: "/").last ?? Substring(mimeType)) }
    public var kind: MediaKind { mimeType.lowercased().hasPrefix("audio/") ? .audio : .video }

    static let videoFeedback: [RtcpFeedback] = [.remb, .transportCC, .nack, .pli, .fir]

    public static let opus = RtpCodecCapability(mimeType: "audio/opus", clockRate: 48000, channels: 2,
                                                sdpFmtpLine: "minptime=10;useinbandfec=1", rtcpFeedback: [.transportCC],
                                                preferredPayloadType: 111)
    public static let vp8 = RtpCodecCapability(mimeType: "video/VP8", clockRate: 90000,
                                               rtcpFeedback: videoFeedback, preferredPayloadType: 96)
    /// Constrained baseline, packetization-mode 1: what SRS and the reference app prefer.
    public static let h264 = h264(profileLevelID: "42e01f")

    /// H.264 of one profile and level (e.g. "42001f"), level asymmetry allowed, as browsers list it.
    public static func h264(profileLevelID: String, packetizationMode: String = "1", preferredPayloadType: UInt8 = 102) -> RtpCodecCapability {
        RtpCodecCapability(mimeType: "video/H264", clockRate: 90000,
                           sdpFmtpLine: "level-asymmetry-allowed=1;packetization-mode=\(packetizationMode);profile-level-id=\(profileLevelID)",
                           rtcpFeedback: videoFeedback, preferredPayloadType: preferredPayloadType)
    }

    public static let defaultAudio: [RtpCodecCapability] = [.opus]
    public static let defaultVideo: [RtpCodecCapability] = [.vp8, .h264]

    /// Codecs a pass-through endpoint (echo, relay) can carry without decoding them.
    public static let passThroughAudio: [RtpCodecCapability] = [
        RtpCodecCapability(mimeType: "audio/opus", clockRate: 48000, channels: 2, rtcpFeedback: [.transportCC], preferredPayloadType: 111),
        RtpCodecCapability(mimeType: "audio/PCMU", clockRate: 8000, preferredPayloadType: 0),
        RtpCodecCapability(mimeType: "audio/PCMA", clockRate: 8000, preferredPayloadType: 8),
        RtpCodecCapability(mimeType: "audio/G722", clockRate: 8000, preferredPayloadType: 9),
    ]
    public static let passThroughVideo: [RtpCodecCapability] = [
        RtpCodecCapability(mimeType: "video/VP8", clockRate: 90000, rtcpFeedback: videoFeedback, preferredPayloadType: 96),
        RtpCodecCapability(mimeType: "video/H264", clockRate: 90000, rtcpFeedback: videoFeedback, preferredPayloadType: 102),
        RtpCodecCapability(mimeType: "video/VP9", clockRate: 90000, rtcpFeedback: videoFeedback, preferredPayloadType: 98),
        RtpCodecCapability(mimeType: "video/AV1", clockRate: 90000, rtcpFeedback: videoFeedback, preferredPayloadType: 45),
    ]

    /// Whether an offered codec is one we can take: for H.264 the same packetization mode and
    /// profile (libwebrtc's rule, `H264FormatParameters.isSameCodec`; the level may differ).
    func matches(_ codec: SDP.Codec) -> Bool {
        guard codec.name.lowercased() == name.lowercased(), codec.clockRate == clockRate else { return false }
        if kind == .audio, let channels, (codec.channels ?? 1) != channels { return false }
        guard let mine = sdpFmtpLine, isH264 else { return true }
        return H264FormatParameters(fmtp: mine).isSameCodec(as: H264FormatParameters(fmtp: codec.fmtp))
    }

    /// The fmtp of our answer to an offered codec we matched: for H.264 with a format of our own,
    /// ours with the negotiated profile-level-id (its level, RFC 6184 §8.2.2); else the offer's
    /// (a pass-through endpoint receives what the offerer described).
    func answerFmtp(for offered: SDP.Codec) -> String? {
        guard let mine = sdpFmtpLine, isH264 else { return offered.fmtp }
        return H264FormatParameters.answerFmtp(local: mine, offered: offered.fmtp)
    }

    public var isH264: Bool { name.lowercased() == "h264" }

    /// The offered codecs an answer takes, each with the capability that took it, in the order
    /// `order` says.
    static func answered(_ offered: [SDP.Codec], by capabilities: [RtpCodecCapability],
                         order: CodecOrder) -> [(RtpCodecCapability, SDP.Codec)] {
        switch order {
        case .local:
            return capabilities.flatMap { cap in offered.filter { cap.matches($0) }.map { (cap, $0) } }
        case .offerer, .offererCodecsLocalFormats:
            var pairs: [(rank: Int, cap: RtpCodecCapability, offered: SDP.Codec)] = offered.compactMap { codec in
                capabilities.firstIndex { $0.matches(codec) }.map { ($0, capabilities[$0], codec) }
            }
            if order == .offererCodecsLocalFormats {
                // Each codec keeps the offerer's slots; its formats fill them in our order.
                let names = pairs.map { $0.offered.name.lowercased() }
                for name in Set(names) {
                    let slots = names.indices.filter { names[$0] == name }
                    let ours = slots.sorted { (pairs[$0].rank, $0) < (pairs[$1].rank, $1) }.map { pairs[$0] }
                    for (slot, pair) in zip(slots, ours) { pairs[slot] = pair }
                }
            }
            return pairs.map { ($0.cap, $0.offered) }
        }
    }
}

/// RFC 4588 retransmission streams: an `rtx/90000` payload type per video codec, its `apt`
/// naming the codec it repairs.
enum RTXCodec {
    static func isRTX(_ mimeType: String) -> Bool { mimeType.lowercased().hasSuffix("/rtx") }

    /// The payload type an rtx fmtp (`apt=96`) repairs.
    static func associatedPayloadType(_ fmtp: String?) -> UInt8? {
        FormatParameter.parse(fmtp ?? "").value(for: "apt").flatMap { UInt8($0) }.flatMap { $0 <= 127 ? $0 : nil }
    }

    static func parameters(payloadType: UInt8, repairing apt: UInt8) -> RtpCodecParameters {
        RtpCodecParameters(payloadType: payloadType, mimeType: "video/rtx", clockRate: 90000, channels: nil,
                           sdpFmtpLine: "apt=\(apt)", rtcpFeedback: [])
    }

    /// rtx payload type → the payload type it repairs, among `codecs`.
    static func map(_ codecs: [RtpCodecParameters]) -> [UInt8: UInt8] {
        var out: [UInt8: UInt8] = [:]
        for c in codecs where isRTX(c.mimeType) {
            if let apt = associatedPayloadType(c.sdpFmtpLine), codecs.contains(where: { $0.payloadType == apt }) { out[c.payloadType] = apt }
        }
        return out
    }
}

/// The negotiated form (W3C `RTCRtpCodecParameters`).
public struct RtpCodecParameters: Sendable, Hashable {
    public var payloadType: UInt8
    public var mimeType: String
    public var clockRate: Int
    public var channels: Int?
    public var sdpFmtpLine: String?
    public var rtcpFeedback: [RtcpFeedback]
}
