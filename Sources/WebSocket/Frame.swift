// One WebSocket frame (RFC 6455 §5.2) with its payload already unmasked.

public enum WebSocketOpcode: UInt8, Sendable {
    case continuation = 0x0
    case text = 0x1
    case binary = 0x2
    case close = 0x8
    case ping = 0x9
    case pong = 0xA

    /// Close, ping and pong (§5.5): at most 125 bytes, never fragmented.
    public var isControl: Bool { rawValue & 0x8 != 0 }
}

public struct WebSocketFrame: Sendable, Equatable {
    public var fin: Bool
    public var opcode: WebSocketOpcode
    public var payload: [UInt8]

    public init(fin: Bool = true, opcode: WebSocketOpcode, payload: [UInt8]) {
        self.fin = fin
        self.opcode = opcode
        self.payload = payload
    }

    /// Largest payload of a control frame (§5.5).
    public static let maxControlPayload = 125
}
