// Incremental frame decoding (RFC 6455 §5.2): bytes arrive in chunks of any size, whole frames come
// out. Every rule a single frame can break is checked here; rules across frames (fragmentation,
// UTF-8, message size) are the assembler's.

public struct WebSocketFrameDecoder: Sendable {
    /// Which end decodes: a server requires masked frames (§5.1), a client unmasked ones.
    public enum Role: Sendable { case server, client }

    public let role: Role
    /// Largest payload of one frame; a bigger one fails with 1009 before its payload arrives.
    public let maxFrameBytes: Int
    private var buffer: [UInt8] = []
    private var start = 0

    public init(role: Role, maxFrameBytes: Int) {
        self.role = role
        self.maxFrameBytes = maxFrameBytes
    }

    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        if start > 0 && (start == buffer.count || start >= 64 * 1024) {
            buffer.removeFirst(start)
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// Bytes received and not yet consumed by a frame.
    public var bufferedCount: Int { buffer.count - start }

    /// The next whole frame, or nil when more bytes are needed. After an error the connection
    /// must be failed with the error's close code; the decoder is not used again.
    public mutating func next() throws(WebSocketError) -> WebSocketFrame? {
        let available = buffer.count - start
        guard available >= 2 else { return nil }
        let first = buffer[start], second = buffer[start + 1]
        if first & 0x70 != 0 {
            throw .protocolError("reserved bits \(String((first & 0x70) >> 4, radix: 2)) set in a frame header, but no extension was negotiated")
        }
        guard let opcode = WebSocketOpcode(rawValue: first & 0x0F) else {
            throw .protocolError("unknown opcode 0x\(String(first & 0x0F, radix: 16, uppercase: true))")
        }
        let fin = first & 0x80 != 0
        let masked = second & 0x80 != 0
        switch role {
        case .server where !masked: throw .protocolError("a client frame (opcode \(opcode)) is not masked")
        case .client where masked: throw .protocolError("a server frame (opcode \(opcode)) is masked")
        default: break
        }
        let shortLength = Int(second & 0x7F)
        if opcode.isControl {
            guard fin else { throw .protocolError("fragmented \(opcode) frame: control frames must not be fragmented") }
            guard shortLength <= WebSocketFrame.maxControlPayload else {
                throw .protocolError("\(opcode) frame with a payload of more than \(WebSocketFrame.maxControlPayload) bytes")
            }
        }
        var headerLength = 2
        let length: UInt64
        switch shortLength {
        case 126:
            guard available >= 4 else { return nil }
            length = UInt64(buffer[start + 2]) << 8 | UInt64(buffer[start + 3])
            headerLength = 4
        case 127:
            guard available >= 10 else { return nil }
            var value: UInt64 = 0
            for index in 2..<10 { value = value << 8 | UInt64(buffer[start + index]) }
            guard value >> 63 == 0 else { throw .protocolError("64-bit payload length with the most significant bit set") }
            length = value
            headerLength = 10
        default:
            length = UInt64(shortLength)
        }
        guard length <= UInt64(maxFrameBytes) else {
            throw WebSocketError(WebSocketCloseCode.messageTooBig,
                                 "frame of \(length) bytes exceeds the limit of \(maxFrameBytes) bytes")
        }
        let payloadLength = Int(length)
        let maskOffset = start + headerLength
        if masked { headerLength += 4 }
        guard available - headerLength >= payloadLength else { return nil }
        let payloadStart = start + headerLength
        var payload = Array(buffer[payloadStart..<(payloadStart + payloadLength)])
        if masked {
            let key = (buffer[maskOffset], buffer[maskOffset + 1], buffer[maskOffset + 2], buffer[maskOffset + 3])
            for index in payload.indices {
                switch index & 3 {
                case 0: payload[index] ^= key.0
                case 1: payload[index] ^= key.1
                case 2: payload[index] ^= key.2
                default: payload[index] ^= key.3
                }
            }
        }
        start = payloadStart + payloadLength
        return WebSocketFrame(fin: fin, opcode: opcode, payload: payload)
    }
}
