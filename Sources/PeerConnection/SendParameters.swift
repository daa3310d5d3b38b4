import SDP
import Media

/// W3C `RTCRtpEncodingParameters`: one encoding, or with a `rid` one layer of a simulcast
/// (`TransceiverInit.sendEncodings`).
public struct RtpEncodingParameters: Sendable, Equatable {
    /// The layer's RTP stream id (RFC 8851); set on every encoding of a simulcast, fixed once the
    /// transceiver is made.
    public var rid: String?
    public var active: Bool
    /// Bits per second the encoder may use at most.
    public var maxBitrate: Int?
    public var minBitrate: Int?
    public var maxFramerate: Double?
    /// ≥ 1: the sent resolution is the source's divided by this.
    public var scaleResolutionDownBy: Double?
    /// W3C webrtc-svc: "L1T1", "L1T2" or "L1T3" (one spatial layer, 1–3 temporal ones). Temporal
    /// layers let a relay halve or quarter a viewer's frame rate without a keyframe. VP8 (in the
    /// payload descriptor) and H.264 (OpenH264 writes the layer into nal_ref_idc).
    public var scalabilityMode: String?

    public init(rid: String? = nil, active: Bool = true, maxBitrate: Int? = nil, minBitrate: Int? = nil,
                maxFramerate: Double? = nil, scaleResolutionDownBy: Double? = nil, scalabilityMode: String? = nil) {
        self.scalabilityMode = scalabilityMode
        self.rid = rid
        self.active = active
        self.maxBitrate = maxBitrate
        self.minBitrate = minBitrate
        self.maxFramerate = maxFramerate
        self.scaleResolutionDownBy = scaleResolutionDownBy
    }

    /// The modes `scalabilityMode` takes, by their temporal layer count.
    public static let scalabilityModes = ["L1T1": 1, "L1T2": 2, "L1T3": 3]

    /// Temporal layers the encoder of `codec` makes for this encoding.
    func temporalLayers(for codec: VideoCodecType) -> Int {
        codec == .vp8 || codec == .h264 ? scalabilityMode.flatMap { Self.scalabilityModes[$0] } ?? 1 : 1
    }
}

/// What to give up first when bandwidth or CPU is short.
public enum DegradationPreference: String, Sendable {
    case maintainFramerate = "maintain-framerate"
    case maintainResolution = "maintain-resolution"
    case balanced
}

/// W3C `RTCRtpSendParameters`.
public struct RtpSendParameters: Sendable, Equatable {
    public var encodings: [RtpEncodingParameters]
    public var degradationPreference: DegradationPreference

    public init(encodings: [RtpEncodingParameters] = [RtpEncodingParameters()],
                degradationPreference: DegradationPreference = .balanced) {
        self.encodings = encodings
        self.degradationPreference = degradationPreference
    }

    /// At most this many simulcast layers (libwebrtc's limit).
    public static let maxLayers = 4

    /// Checks what `setParameters` (and `sendEncodings`) accepts; the message names the bad field.
    func validate(_ context: String = "setParameters") throws(PeerConnectionError) {
        guard (1...Self.maxLayers).contains(encodings.count) else {
            throw PeerConnectionError(.invalidArgument, "\(context): 1 to \(Self.maxLayers) encodings (got \(encodings.count))")
        }
        if encodings.count > 1 {
            let rids = encodings.map { $0.rid ?? "" }
            guard rids.allSatisfy(RID.isValidID) else {
                throw PeerConnectionError(.invalidArgument, "\(context): every simulcast encoding needs a rid of letters, digits, - and _ (got \(rids))")
            }
            guard Set(rids).count == rids.count else {
                throw PeerConnectionError(.invalidArgument, "\(context): simulcast rids must differ (got \(rids))")
            }
        }
        for e in encodings { try Self.validate(e, context) }
    }

    private static func validate(_ e: RtpEncodingParameters, _ context: String) throws(PeerConnectionError) {
        if let s = e.scaleResolutionDownBy, !(s >= 1) {
            throw PeerConnectionError(.invalidArgument, "\(context): scaleResolutionDownBy must be ≥ 1 (got \(s))")
        }
        if let mode = e.scalabilityMode, RtpEncodingParameters.scalabilityModes[mode] == nil {
            throw PeerConnectionError(.invalidArgument, "\(context): scalabilityMode \(mode) is not supported (L1T1, L1T2, L1T3)")
        }
        if let m = e.maxBitrate, m <= 0 { throw PeerConnectionError(.invalidArgument, "\(context): maxBitrate must be > 0 (got \(m))") }
        if let m = e.minBitrate, m < 0 { throw PeerConnectionError(.invalidArgument, "\(context): minBitrate must be ≥ 0 (got \(m))") }
        if let lo = e.minBitrate, let hi = e.maxBitrate, lo > hi {
            throw PeerConnectionError(.invalidArgument, "\(context): minBitrate \(lo) is above maxBitrate \(hi)")
        }
        // 0.01 fps (a frame every 100 s) and up: below that the frame interval overflows nanoseconds.
        if let f = e.maxFramerate, !(f >= 0.01 && f.isFinite) {
            throw PeerConnectionError(.invalidArgument, "\(context): maxFramerate must be a number ≥ 0.01 (got \(f))")
        }
    }
}
