// Frame encoding (RFC 6455 §5.2): 7-, 16- or 64-bit payload lengths, and the masking every
// client-to-server frame needs (§5.3).

public enum WebSocketFrameEncoder {
    /// The bytes of `frame`; with `maskKey` (client frames) the payload is masked with it.
    public static func encode(_ frame: WebSocketFrame, maskKey: UInt32? = nil) -> [UInt8] {
        let count = frame.payload.count
        var out: [UInt8] = []
        out.reserveCapacity(count + 14)
        out.append((frame.fin ? 0x80 : 0) | frame.opcode.rawValue)
        let maskBit: UInt8 = maskKey == nil ? 0 : 0x80
        if count <= 125 {
            out.append(maskBit | UInt8(count))
        } else if count <= 0xFFFF {
            out.append(maskBit | 126)
            out.append(UInt8(count >> 8))
            out.append(UInt8(count & 0xFF))
        } else {
            out.append(maskBit | 127)
            let length = UInt64(count)
            for shift in stride(from: 56, through: 0, by: -8) { out.append(UInt8(truncatingIfNeeded: length >> UInt64(shift))) }
        }
        guard let maskKey else {
            out.append(contentsOf: frame.payload)
            return out
        }
        let key = [UInt8(maskKey >> 24), UInt8(truncatingIfNeeded: maskKey >> 16),
                   UInt8(truncatingIfNeeded: maskKey >> 8), UInt8(truncatingIfNeeded: maskKey)]
        out.append(contentsOf: key)
        for (index, byte) in frame.payload.enumerated() { out.append(byte ^ key[index & 3]) }
        return out
    }

    /// A close frame's payload (§5.5.1): the code, then the reason cut to fit 125 bytes on a
    /// character boundary.
    public static func closePayload(code: UInt16, reason: String) -> [UInt8] {
        var out = [UInt8(code >> 8), UInt8(code & 0xFF)]
        var used = 0
        for character in reason {
            let bytes = Array(String(character).utf8)
            guard used + bytes.count <= WebSocketFrame.maxControlPayload - 2 else { break }
            out.append(contentsOf: bytes)
            used += bytes.count
        }
        return out
    }
}
