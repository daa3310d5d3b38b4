/// ChannelData messages (RFC 8656 §12.4): channel number, length, application data.
public enum ChannelData {
    public static let channelRange: ClosedRange<UInt16> = 0x4000...0x7FFF

    /// The first byte of a ChannelData message is 0x40–0x7F (RFC 7983 puts TURN channels there).
    public static func isChannelData(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 4 && (0x40...0x7F).contains(bytes[0])
    }

    /// Frames `data` for `channel`. Over UDP padding is optional and we leave it out; over TCP
    /// and TLS the message is padded to a multiple of 4 (§12.5). The length field never counts the padding.
    public static func encode(channel: UInt16, data: [UInt8], transport: TURNTransport) -> [UInt8] {
        let length = UInt16(clamping: data.count)
        var out: [UInt8] = [UInt8(channel >> 8), UInt8(channel & 0xff), UInt8(length >> 8), UInt8(length & 0xff)]
        out.reserveCapacity(4 + data.count + 3)
        out += data.prefix(Int(length))
        if transport.isStream { out += [UInt8](repeating: 0, count: (4 - Int(length) % 4) % 4) }
        return out
    }

    /// Channel and data of one ChannelData datagram; nil when the header's length runs past the end.
    /// Trailing bytes (padding) are ignored.
    public static func decode(_ bytes: [UInt8]) -> (channel: UInt16, data: [UInt8])? {
        guard isChannelData(bytes) else { return nil }
        let channel = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
        let length = Int(UInt16(bytes[2]) << 8 | UInt16(bytes[3]))
        guard 4 + length <= bytes.count else { return nil }
        return (channel, Array(bytes[4..<(4 + length)]))
    }
}

/// Splits a TCP byte stream from a TURN server into whole STUN messages and ChannelData frames.
public struct TURNStreamFramer: Sendable {
    private var buffer: [UInt8] = []
    /// Bounds what a server can make us hold.
    public var maxBuffered = 256 * 1024

    public init() {}

    public enum FramingError: Error, Equatable { case notTURN(firstByte: UInt8), overflow }

    /// Appends received bytes; returns the complete frames now available.
    public mutating func append(_ bytes: [UInt8]) throws(FramingError) -> [[UInt8]] {
        buffer += bytes
        guard buffer.count <= maxBuffered else {
            buffer.removeAll()
            throw .overflow
        }
        var frames: [[UInt8]] = []
        var offset = 0
        while buffer.count - offset >= 4 {
            let first = buffer[offset]
            let length = Int(UInt16(buffer[offset + 2]) << 8 | UInt16(buffer[offset + 3]))
            let total: Int
            switch first {
            case 0x00...0x3F: total = 20 + length
            case 0x40...0x7F: total = 4 + length + (4 - length % 4) % 4
            default:
                buffer.removeAll()
                throw .notTURN(firstByte: first)
            }
            guard buffer.count - offset >= total else { break }
            frames.append(Array(buffer[offset..<(offset + total)]))
            offset += total
        }
        buffer.removeFirst(offset)
        return frames
    }
}
