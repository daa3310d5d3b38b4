/// W3C `RTCRtpEncodingParameters` (one encoding: simulcast is not implemented).
public struct RtpEncodingParameters: Sendable, Equatable {
    public var active: Bool
    /// Bits per second the encoder may use at most.
    public var maxBitrate: Int?
    public var minBitrate: Int?
    public var maxFramerate: Double?
    /// ≥ 1: the sent resolution is the source's divided by this.
    public var scaleResolutionDownBy: Double?

    public init(active: Bool = true, maxBitrate: Int? = nil, minBitrate: Int? = nil,
                maxFramerate: Double? = nil, scaleResolutionDownBy: Double? = nil) {
        self.active = active
        self.maxBitrate = maxBitrate
        self.minBitrate = minBitrate
        self.maxFramerate = maxFramerate
        self.scaleResolutionDownBy = scaleResolutionDownBy
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

    /// Checks what `setParameters` accepts; the message names the bad field.
    func validate() throws(PeerConnectionError) {
        guard encodings.count == 1 else {
            throw PeerConnectionError(.unsupported, "setParameters: exactly one encoding is supported (got \(encodings.count))")
        }
        let e = encodings[0]
        if let s = e.scaleResolutionDownBy, !(s >= 1) {
            throw PeerConnectionError(.invalidArgument, "setParameters: scaleResolutionDownBy must be ≥ 1 (got \(s))")
        }
        if let m = e.maxBitrate, m <= 0 { throw PeerConnectionError(.invalidArgument, "setParameters: maxBitrate must be > 0 (got \(m))") }
        if let m = e.minBitrate, m < 0 { throw PeerConnectionError(.invalidArgument, "setParameters: minBitrate must be ≥ 0 (got \(m))") }
        if let lo = e.minBitrate, let hi = e.maxBitrate, lo > hi {
            throw PeerConnectionError(.invalidArgument, "setParameters: minBitrate \(lo) is above maxBitrate \(hi)")
        }
        // 0.01 fps (a frame every 100 s) and up: below that the frame interval overflows nanoseconds.
        if let f = e.maxFramerate, !(f >= 0.01 && f.isFinite) {
            throw PeerConnectionError(.invalidArgument, "setParameters: maxFramerate must be a number ≥ 0.01 (got \(f))")
        }
    }
}
