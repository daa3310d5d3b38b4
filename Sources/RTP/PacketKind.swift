/// What a datagram on a shared WebRTC port is (RFC 7983 first-byte ranges; RTP vs RTCP by the
/// RFC 5761 rule that RTCP packet types 192…223 never collide with RTP payload types in use).
public enum PacketKind: Sendable, Equatable {
    case stun, dtls, rtp, rtcp, unknown
}

public func classifyPacket(_ bytes: [UInt8]) -> PacketKind {
    bytes.withUnsafeBytes { classifyPacket($0) }
}

public func classifyPacket(_ bytes: UnsafeRawBufferPointer) -> PacketKind {
    guard let first = bytes.first else { return .unknown }
    switch first {
    case 0...3: return .stun
    case 20...63: return .dtls
    case 128...191:
        guard bytes.count >= 2 else { return .unknown }
        return (192...223).contains(bytes[1]) ? .rtcp : .rtp
    default: return .unknown
    }
}
