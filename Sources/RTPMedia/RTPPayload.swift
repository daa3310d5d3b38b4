import RTP

/// One RTP payload a packetizer produced: the bytes after the RTP header and whether the
/// packet carrying it gets the marker bit (last packet of a video frame, talkspurt start for audio).
public struct RTPPayload: Sendable, Equatable {
    public var bytes: [UInt8]
    public var marker: Bool

    public init(bytes: [UInt8], marker: Bool) {
        self.bytes = bytes
        self.marker = marker
    }
}

public enum RTPPayloadLimits {
    /// 1152 bytes: a 1200-byte datagram (libwebrtc's default, safe on every path MTU) minus the
    /// 12-byte RTP header, 16 bytes of SRTP tag (the larger of AES-CM-80's 10 and GCM's 16) and
    /// 20 bytes reserved for RFC 8285 header extensions (mid, transport-wide sequence number,
    /// abs-send-time in one-byte form, with the 4-byte block header).
    public static let defaultMaxPayloadSize = 1200 - 12 - 16 - 20
}

/// A malformed RTP payload: the format, which payload of the frame (0-based), the byte offset in
/// that payload and what was wrong.
public struct PayloadError: Error, CustomStringConvertible, Sendable, Equatable {
    public var format: String
    public var packetIndex: Int
    public var offset: Int
    public var message: String

    public init(format: String, packetIndex: Int, offset: Int, _ message: String) {
        self.format = format
        self.packetIndex = packetIndex
        self.offset = offset
        self.message = message
    }

    public var description: String { "\(format) payload \(packetIndex) at offset \(offset): \(message)" }
}

/// What a depacketizer makes of the payloads of one frame.
public struct DepacketizedFrame: Sendable, Equatable {
    /// H.264: Annex-B (4-byte start codes); VP8: the raw frame.
    public var data: [UInt8]
    public var isKeyframe: Bool
    /// From a VP8 keyframe header; 0 when unknown.
    public var width: Int
    public var height: Int
    /// VP8 PictureID when the descriptor carried one.
    public var pictureID: UInt16?

    public init(data: [UInt8], isKeyframe: Bool, width: Int = 0, height: Int = 0, pictureID: UInt16? = nil) {
        self.data = data
        self.isKeyframe = isKeyframe
        self.width = width
        self.height = height
        self.pictureID = pictureID
    }
}

/// Turns payloads into RTP packets of one stream: consecutive sequence numbers, one timestamp
/// per call (a frame, or an audio packet).
public struct RTPSequencer: Sendable {
    public var ssrc: UInt32
    public var payloadType: UInt8
    public private(set) var nextSequenceNumber: UInt16

    public init(ssrc: UInt32, payloadType: UInt8, initialSequenceNumber: UInt16) {
        self.ssrc = ssrc
        self.payloadType = payloadType
        self.nextSequenceNumber = initialSequenceNumber
    }

    public mutating func packets(for payloads: [RTPPayload], timestamp: UInt32) -> [RTPPacket] {
        payloads.map { p in
            let packet = RTPPacket(marker: p.marker, payloadType: payloadType, sequenceNumber: nextSequenceNumber,
                                   timestamp: timestamp, ssrc: ssrc, payload: p.bytes)
            nextSequenceNumber &+= 1
            return packet
        }
    }
}

/// Splits `total` bytes into the fewest chunks of at most `capacity`, sizes differing by at
/// most one (even packets pace better than one full-size run and a tiny tail).
func evenChunkSizes(total: Int, capacity: Int) -> [Int] {
    guard total > 0 else { return [] }
    let cap = max(capacity, 1)
    let count = (total + cap - 1) / cap
    let base = total / count
    let extra = total % count
    return (0..<count).map { $0 < extra ? base + 1 : base }
}
