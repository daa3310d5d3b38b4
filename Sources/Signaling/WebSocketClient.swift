// A WebSocket client for ws:// and wss:// over our HTTP client's sockets (TLS included): the
// opening handshake through HTTPClient.upgrade, then a reader thread of its own that drives the
// sans-I/O WebSocketConnection. Messages arrive as an AsyncStream; sending may happen from any task.
import HTTP
import Locks
import WebSocket

public final class WebSocketClient: Sendable {
    public enum Message: Sendable, Equatable {
        case text(String)
        case binary([UInt8])
        /// The last element: the close code (1006 when the connection ended without a close
        /// frame) and reason.
        case closed(code: UInt16, reason: String)
    }

    public let url: String
    public let messages: AsyncStream<Message>
    private let connection: UpgradedConnection
    /// The protocol state; frames are made and written under this lock so they leave in order.
    private let socket: Locked<WebSocketConnection>
    private let closeTimeout: Duration

    private init(url: String, connection: UpgradedConnection, limits: WebSocketLimits, closeTimeout: Duration) {
        self.url = url
        self.connection = connection
        self.socket = Locked(WebSocketConnection(role: .client, limits: limits))
        self.closeTimeout = closeTimeout
        (messages, continuation) = AsyncStream.makeStream(of: Message.self)
    }

    private let continuation: AsyncStream<Message>.Continuation

    /// Connects and runs the opening handshake. https-style verification for wss:// unless
    /// `insecure` (the CLI's explicit `--insecure`).
    public static func connect(_ url: String, headers: HTTPHeaders = [], insecure: Bool = false, timeout: Duration = .seconds(10),
                               limits: WebSocketLimits = .init(), closeTimeout: Duration = .seconds(2)) async throws -> WebSocketClient {
        let lower = url.lowercased()
        let httpURL: String
        if lower.hasPrefix("ws://") {
            httpURL = "http://" + url.dropFirst(5)
        } else if lower.hasPrefix("wss://") {
            httpURL = "https://" + url.dropFirst(6)
        } else {
            throw SignalingError("\(url): a WebSocket URL starts with ws:// or wss://")
        }
        let key = WebSocketHandshake.makeKey()
        var request = headers
        for (name, value) in WebSocketHandshake.requestHeaders(key: key) { request.set(name, value) }
        let (response, upgraded) = try await HTTPClient(timeout: timeout, insecure: insecure).upgrade(url: httpURL, headers: request)
        do throws(WebSocketHandshakeError) {
            try WebSocketHandshake.validateResponse(status: response.status, key: key) { response.headers.values($0) }
        } catch {
            upgraded?.close()
            let body = response.text.trimmingTrailingNewlines
            throw SignalingError("WebSocket handshake with \(url) failed: \(error.message)" + (body.isEmpty ? "" : ": \(body.prefix(200))"))
        }
        guard let upgraded else { throw SignalingError("WebSocket handshake with \(url) failed: no connection") }
        let client = WebSocketClient(url: url, connection: upgraded, limits: limits, closeTimeout: closeTimeout)
        do {
            try JoinableThread.spawn { [client] in client.readLoop() }.detach()
        } catch {
            upgraded.close()
            throw error
        }
        return client
    }

    /// Sends a text message; false when the connection is closing or gone.
    @discardableResult
    public func send(_ text: String) -> Bool {
        socket.withLock { socket in
            let bytes = socket.text(text)
            return !bytes.isEmpty && connection.write(bytes)
        }
    }

    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        socket.withLock { socket in
            let frame = socket.binary(bytes)
            return !frame.isEmpty && connection.write(frame)
        }
    }

    /// Starts the closing handshake; `messages` ends with `.closed` when the server answers (or
    /// after the close timeout).
    public func close(code: UInt16 = WebSocketCloseCode.normal, reason: String = "") {
        socket.withLock { socket in
            _ = connection.write(socket.close(code: code, reason: reason))
        }
    }

    // MARK: The reader thread

    private func readLoop() {
        var closingSince: ContinuousClock.Instant?
        var ending: Message?
        while ending == nil {
            let closing = socket.withLock { $0.state } == .closing
            if closing && closingSince == nil { closingSince = .now }
            // Wake every second to notice a close we started.
            let wait = closingSince.map { max(closeTimeout - (.now - $0), .zero) } ?? .seconds(1)
            switch connection.read(timeout: wait) {
            case .data(let bytes):
                let events = socket.withLock { socket in
                    let (events, output) = socket.receive(bytes)
                    connection.write(output)
                    return events
                }
                for event in events {
                    switch event {
                    case .text(let text): continuation.yield(.text(text))
                    case .binary(let bytes): continuation.yield(.binary(bytes))
                    case .pong: break
                    case .closed(let code, let reason, _): ending = .closed(code: code, reason: reason)
                    }
                }
            case .timedOut:
                if closingSince != nil {
                    _ = socket.withLock { $0.connectionLost() }
                    ending = .closed(code: WebSocketCloseCode.abnormal, reason: "no answer to our close frame")
                }
            case .closed(let why):
                _ = socket.withLock { $0.connectionLost() }
                ending = .closed(code: WebSocketCloseCode.abnormal, reason: why)
            }
        }
        connection.close()
        if let ending { continuation.yield(ending) }
        continuation.finish()
    }
}
