// Messages from frames (RFC 6455 §5.4): a data message may span frames, control frames may arrive
// between its fragments. Checks the size of the whole message and the UTF-8 of text (§8.1).

public enum WebSocketMessage: Sendable, Equatable {
    case text(String)
    case binary([UInt8])
    case ping([UInt8])
    case pong([UInt8])
    /// `code` is nil when the close frame carried none (reported as 1005).
    case close(code: UInt16?, reason: String)
}

public struct WebSocketMessageAssembler: Sendable {
    /// Largest message, all fragments together; one more byte fails with 1009.
    public let maxMessageBytes: Int
    private var opcode: WebSocketOpcode?
    private var fragments: [UInt8] = []

    public init(maxMessageBytes: Int) {
        self.maxMessageBytes = maxMessageBytes
    }

    /// Whether a fragmented message has begun and not ended.
    public var isMidMessage: Bool { opcode != nil }

    /// The message `frame` completes, or nil when it was a fragment of an unfinished one.
    public mutating func push(_ frame: WebSocketFrame) throws(WebSocketError) -> WebSocketMessage? {
        switch frame.opcode {
        case .ping: return .ping(frame.payload)
        case .pong: return .pong(frame.payload)
        case .close: return try Self.close(frame.payload)
        case .text, .binary:
            guard opcode == nil else {
                throw .protocolError("a new \(frame.opcode) message began before the fragmented \(opcode.map { "\($0)" } ?? "") message ended")
            }
            opcode = frame.opcode
            fragments = []
        case .continuation:
            guard opcode != nil else { throw .protocolError("continuation frame without a fragmented message to continue") }
        }
        guard fragments.count + frame.payload.count <= maxMessageBytes else {
            throw WebSocketError(WebSocketCloseCode.messageTooBig,
                                 "message of more than \(maxMessageBytes) bytes exceeds the limit")
        }
        fragments.append(contentsOf: frame.payload)
        guard frame.fin, let kind = opcode else { return nil }
        let bytes = fragments
        opcode = nil
        fragments = []
        if kind == .binary { return .binary(bytes) }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw WebSocketError(WebSocketCloseCode.invalidPayload, "text message is not valid UTF-8")
        }
        return .text(text)
    }

    /// A close frame's code and reason (§5.5.1, §7.4).
    static func close(_ payload: [UInt8]) throws(WebSocketError) -> WebSocketMessage {
        if payload.isEmpty { return .close(code: nil, reason: "") }
        guard payload.count >= 2 else { throw .protocolError("close frame with a 1-byte payload") }
        let code = UInt16(payload[0]) << 8 | UInt16(payload[1])
        guard WebSocketCloseCode.isValidOnWire(code) else { throw .protocolError("invalid close code \(code)") }
        guard let reason = String(validating: payload[2...], as: UTF8.self) else {
            throw WebSocketError(WebSocketCloseCode.invalidPayload, "close reason is not valid UTF-8")
        }
        return .close(code: code, reason: reason)
    }
}
