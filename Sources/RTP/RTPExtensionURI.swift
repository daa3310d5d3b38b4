/// URIs of the header extensions WebRTC negotiates with `a=extmap` (RFC 8285).
public enum RTPExtensionURI {
    public static let sdesMID = "urn:ietf:params:rtp-hdrext:sdes:mid"                                 // RFC 9143
    public static let rtpStreamID = "urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"                   // RFC 8852
    public static let repairedRTPStreamID = "urn:ietf:params:rtp-hdrext:sdes:repaired-rtp-stream-id"  // RFC 8852
    public static let absSendTime = "http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time"
    public static let transportWideCC = "http://www.ietf.org/id/draft-holmer-rmcat-transport-wide-cc-extensions-01"
    public static let videoOrientation = "urn:3gpp:video-orientation"                                 // 3GPP TS 26.114
    public static let audioLevel = "urn:ietf:params:rtp-hdrext:ssrc-audio-level"                      // RFC 6464
}

/// Encoders and decoders for the data of the well-known header extensions.
public enum RTPExtensionCodec {
    // MARK: mid / rid / repaired-rid: a UTF-8 string.

    /// MID or RID bytes (UTF-8). RFC 8285 one-byte elements carry at most 16 bytes.
    public static func encodeMID(_ mid: String) -> [UInt8] { Array(mid.utf8) }

    /// nil when empty or not valid UTF-8.
    public static func decodeMID(_ data: [UInt8]) -> String? {
        // Some senders pad the string with NULs.
        var bytes = data[...]
        while bytes.last == 0 { bytes = bytes.dropLast() }
        guard !bytes.isEmpty else { return nil }
        var decoded = ""
        var iterator = bytes.makeIterator()
        var codec = UTF8()
        loop: while true {
            switch codec.decode(&iterator) {
            case .scalarValue(let s): decoded.unicodeScalars.append(s)
            case .emptyInput: break loop
            case .error: return nil
            }
        }
        return decoded
    }

    // MARK: abs-send-time: 24-bit 6.18 fixed-point seconds, wrapping every 64 s.

    /// The 24-bit value for a send time in seconds (any epoch; only seconds mod 64 survive).
    public static func absSendTime(seconds: Double) -> UInt32 {
        guard seconds.isFinite else { return 0 }
        let fixed = (seconds * 262_144).rounded(.down)   // 2^18 per second
        let wrapped = fixed.truncatingRemainder(dividingBy: 16_777_216)  // 2^24
        let positive = wrapped < 0 ? wrapped + 16_777_216 : wrapped
        return UInt32(positive) & 0xFF_FFFF
    }

    /// The 24-bit value from a 64-bit NTP timestamp (its bits 14…37).
    public static func absSendTime(ntp: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: ntp >> 14) & 0xFF_FFFF
    }

    public static func encodeAbsSendTime(_ value: UInt32) -> [UInt8] {
        [UInt8(truncatingIfNeeded: value >> 16), UInt8(truncatingIfNeeded: value >> 8), UInt8(truncatingIfNeeded: value)]
    }

    public static func encodeAbsSendTime(seconds: Double) -> [UInt8] {
        encodeAbsSendTime(absSendTime(seconds: seconds))
    }

    /// The 24-bit value; nil unless exactly 3 bytes.
    public static func decodeAbsSendTime(_ data: [UInt8]) -> UInt32? {
        guard data.count == 3 else { return nil }
        return UInt32(data[0]) << 16 | UInt32(data[1]) << 8 | UInt32(data[2])
    }

    /// Seconds (0 ..< 64) of a 24-bit abs-send-time value.
    public static func absSendTimeSeconds(_ value: UInt32) -> Double {
        Double(value & 0xFF_FFFF) / 262_144
    }

    // MARK: transport-wide-cc: the 16-bit transport sequence number.

    public static func encodeTransportSequence(_ sequence: UInt16) -> [UInt8] {
        [UInt8(truncatingIfNeeded: sequence >> 8), UInt8(truncatingIfNeeded: sequence)]
    }

    /// nil unless at least 2 bytes (a later draft appends feedback-request bytes).
    public static func decodeTransportSequence(_ data: [UInt8]) -> UInt16? {
        guard data.count >= 2 else { return nil }
        return UInt16(data[0]) << 8 | UInt16(data[1])
    }

    // MARK: ssrc-audio-level (RFC 6464): V flag + level in −dBov (0 loudest … 127 silence).

    public static func encodeAudioLevel(_ level: AudioLevel) -> [UInt8] {
        [(level.voiceActivity ? 0x80 : 0) | min(level.level, 127)]
    }

    /// nil when empty.
    public static func decodeAudioLevel(_ data: [UInt8]) -> AudioLevel? {
        guard let b = data.first else { return nil }
        return AudioLevel(level: b & 0x7F, voiceActivity: b & 0x80 != 0)
    }

    // MARK: video-orientation (CVO): C F R1 R0 in the low four bits.

    public static func encodeVideoOrientation(_ o: VideoOrientation) -> [UInt8] {
        [(o.backFacingCamera ? 0x08 : 0) | (o.horizontalFlip ? 0x04 : 0) | (o.rotation.rawValue & 0x03)]
    }

    /// nil when empty.
    public static func decodeVideoOrientation(_ data: [UInt8]) -> VideoOrientation? {
        guard let b = data.first, let rotation = VideoOrientation.Rotation(rawValue: b & 0x03) else { return nil }
        return VideoOrientation(rotation: rotation, horizontalFlip: b & 0x04 != 0, backFacingCamera: b & 0x08 != 0)
    }
}

/// RFC 6464 audio level.
public struct AudioLevel: Sendable, Equatable, Hashable {
    /// −dBov, 0…127 (127 = silence); larger values are clamped when encoded.
    public var level: UInt8
    public var voiceActivity: Bool

    public init(level: UInt8, voiceActivity: Bool) {
        self.level = level
        self.voiceActivity = voiceActivity
    }
}

/// 3GPP coordination of video orientation (the rotation the receiver must apply).
public struct VideoOrientation: Sendable, Equatable, Hashable {
    public enum Rotation: UInt8, Sendable {
        case degrees0 = 0, degrees90 = 1, degrees180 = 2, degrees270 = 3
    }

    public var rotation: Rotation
    public var horizontalFlip: Bool
    public var backFacingCamera: Bool

    public init(rotation: Rotation, horizontalFlip: Bool = false, backFacingCamera: Bool = false) {
        self.rotation = rotation
        self.horizontalFlip = horizontalFlip
        self.backFacingCamera = backFacingCamera
    }
}
