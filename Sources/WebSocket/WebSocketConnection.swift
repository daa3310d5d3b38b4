// One end of a WebSocket connection, sans-I/O: bytes from the socket go in, messages and the
// bytes to write come out. Answers pings, runs the closing handshake (§7), and fails the
// connection with the right close code on bad input. A driver owns the socket and the clock.

public struct WebSocketLimits: Sendable, Equatable {
    public var maxFrameBytes: Int
    public var maxMessageBytes: Int

    public init(maxFrameBytes: Int = 1 << 20, maxMessageBytes: Int = 1 << 20) {
        self.maxFrameBytes = maxFrameBytes
        self.maxMessageBytes = maxMessageBytes
    }
}

public struct WebSocketConnection: Sendable {
    public enum Event: Sendable, Equatable {
        case text(String)
        case binary([UInt8])
        case pong([UInt8])
        /// The closing handshake finished, or the connection was failed (`error` set): the driver
        /// writes the output, then closes the socket.
        case closed(code: UInt16, reason: String, error: WebSocketError?)
    }

    public enum State: Sendable, Equatable {
        case open
        /// We sent a close frame and wait for the peer's.
        case closing
        case closed
    }

    public let role: WebSocketFrameDecoder.Role
    public private(set) var state = State.open
    private var decoder: WebSocketFrameDecoder
    private var assembler: WebSocketMessageAssembler
    private var random = SystemRandomNumberGenerator()

    public init(role: WebSocketFrameDecoder.Role, limits: WebSocketLimits = .init()) {
        self.role = role
        decoder = WebSocketFrameDecoder(role: role, maxFrameBytes: limits.maxFrameBytes)
        assembler = WebSocketMessageAssembler(maxMessageBytes: limits.maxMessageBytes)
    }

    /// Feeds received bytes; returns the events they complete and the bytes to write (pongs,
    /// the close answer).
    public mutating func receive<C: Collection>(_ bytes: C) -> (events: [Event], output: [UInt8]) where C.Element == UInt8 {
        guard state != .closed else { return ([], []) }
        decoder.append(bytes)
        var events: [Event] = []
        var output: [UInt8] = []
        while state != .closed {
            let message: WebSocketMessage
            do throws(WebSocketError) {
                guard let frame = try decoder.next() else { break }
                guard let complete = try assembler.push(frame) else { continue }
                message = complete
            } catch {
                output += fail(error)
                events.append(.closed(code: error.closeCode, reason: error.message, error: error))
                break
            }
            switch message {
            case .text(let text): if state == .open { events.append(.text(text)) }
            case .binary(let bytes): if state == .open { events.append(.binary(bytes)) }
            case .ping(let payload): if state == .open { output += frame(.pong, payload) }
            case .pong(let payload): events.append(.pong(payload))
            case .close(let code, let reason):
                // Echo the code (§5.5.1) unless we already sent our close.
                if state == .open {
                    output += frame(.close, code.map { WebSocketFrameEncoder.closePayload(code: $0, reason: "") } ?? [])
                }
                state = .closed
                events.append(.closed(code: code ?? WebSocketCloseCode.noStatus, reason: reason, error: nil))
            }
        }
        return (events, output)
    }

    /// A text message's bytes (empty once closing: nothing more may be sent).
    public mutating func text(_ text: String) -> [UInt8] {
        state == .open ? frame(.text, Array(text.utf8)) : []
    }

    public mutating func binary(_ bytes: [UInt8]) -> [UInt8] {
        state == .open ? frame(.binary, bytes) : []
    }

    public mutating func ping(_ payload: [UInt8] = []) -> [UInt8] {
        state == .open ? frame(.ping, Array(payload.prefix(WebSocketFrame.maxControlPayload))) : []
    }

    /// Starts the closing handshake: the close frame's bytes; `receive` reports `.closed` when
    /// the peer answers.
    public mutating func close(code: UInt16 = WebSocketCloseCode.normal, reason: String = "") -> [UInt8] {
        guard state == .open else { return [] }
        state = .closing
        return frame(.close, WebSocketFrameEncoder.closePayload(code: code, reason: reason))
    }

    /// The socket ended without a finished closing handshake: 1006.
    public mutating func connectionLost() -> Event? {
        guard state != .closed else { return nil }
        state = .closed
        return .closed(code: WebSocketCloseCode.abnormal, reason: "connection closed without a close frame", error: nil)
    }

    /// Fails the connection (§7.1.7): our close frame with the error's code and message.
    private mutating func fail(_ error: WebSocketError) -> [UInt8] {
        let bytes = state == .open ? frame(.close, WebSocketFrameEncoder.closePayload(code: error.closeCode, reason: error.message)) : []
        state = .closed
        return bytes
    }

    /// One whole frame; masked when we are the client (§5.3).
    private mutating func frame(_ opcode: WebSocketOpcode, _ payload: [UInt8]) -> [UInt8] {
        let key: UInt32? = role == .client ? UInt32.random(in: 0...UInt32.max, using: &random) : nil
        return WebSocketFrameEncoder.encode(WebSocketFrame(opcode: opcode, payload: payload), maskKey: key)
    }
}
