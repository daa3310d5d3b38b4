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
    public static let h264 = RtpCodecCapability(
        mimeType: "video/H264", clockRate: 90000,
        sdpFmtpLine: "level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f",
        rtcpFeedback: videoFeedback, preferredPayloadType: 102)

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

    /// Whether an offered codec is one we can take, per RFC 6184 §8.2.2 for H.264
    /// (same packetization-mode and profile; the level may differ).
    func matches(_ codec: SDP.Codec) -> Bool {
        guard codec.name.lowercased() == name.lowercased(), codec.clockRate == clockRate else { return false }
        if kind == .audio, let channels, (codec.channels ?? 1) != channels { return false }
        guard let mine = sdpFmtpLine, name.lowercased() == "h264" else { return true }
        let a = FormatParameter.parse(mine), b = FormatParameter.parse(codec.fmtp ?? "")
        guard (a.value(for: "packetization-mode") ?? "0") == (b.value(for: "packetization-mode") ?? "0") else { return false }
        return H264Profile(a.value(for: "profile-level-id")) == H264Profile(b.value(for: "profile-level-id"))
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

/// profile_idc plus the constraint that makes a stream constrained baseline, from profile-level-id.
struct H264Profile: Equatable {
    var idc: UInt8
    var constrainedBaseline: Bool
    init(_ profileLevelID: String?) {
        let hex = profileLevelID ?? "42000a"   // RFC 6184 default
        let bytes = stride(from: 0, to: min(hex.count, 6), by: 2).compactMap { i -> UInt8? in
            let start = hex.index(hex.startIndex, offsetBy: i)
            let end = hex.index(start, offsetBy: 2, limitedBy: hex.endIndex) ?? hex.endIndex
            return UInt8(hex[start..<end], radix: 16)
        }
        idc = bytes.first ?? 0x42
        let iop = bytes.count > 1 ? bytes[1] : 0
        // Baseline with constraint_set1 (0x40) is constrained baseline (RFC 6184 table 5).
        constrainedBaseline = (idc == 0x42 && iop & 0x40 != 0) || (idc == 0x4d && iop & 0x80 != 0)
    }
}
