// The P2P signaling endpoint `GET /rtc/v1/signal/?room=NAME[&key=KEY]` on an HTTPServer: access
// and the WebSocket handshake, then one thread per peer drives its WebSocketConnection and the
// shared rooms. Idle peers are pinged; one that stays silent for another interval is dropped.
import HTTP
import Locks
import WebSocket

public final class SignalServer: Sendable {
    public static let path = "/rtc/v1/signal/"

    public struct Options: Sendable {
        /// Silence after which a peer is pinged; as long again without a byte and it is dropped.
        public var pingInterval: Duration
        /// Frame and message limits; over them the peer is closed with 1009.
        public var limits: WebSocketLimits
        /// How long a peer has to answer our close frame.
        public var closeTimeout: Duration
        /// Who may join: anyone, token holders (then every room needs a key), or no one.
        public var access: SignalAccess
        /// How long the seat of a peer (joined with `seat=`) whose connection died is held for it.
        public var rejoinGrace: Duration

        public init(pingInterval: Duration = .seconds(20), limits: WebSocketLimits = .init(maxFrameBytes: 256 * 1024, maxMessageBytes: 256 * 1024),
                    closeTimeout: Duration = .seconds(2), access: SignalAccess = .open, rejoinGrace: Duration = .seconds(15)) {
            self.pingInterval = pingInterval
            self.limits = limits
            self.closeTimeout = closeTimeout
            self.access = access
            self.rejoinGrace = rejoinGrace
        }
    }

    private struct State {
        var rooms = SignalingRooms()
        var connections: [SignalingRooms.PeerID: UpgradedConnection] = [:]
        var nextID = 0
    }

    public let options: Options
    private let state = Locked(State())
    private let log: @Sendable (String) -> Void
    /// The server this one started itself (nil when mounted on someone else's).
    private let owned: HTTPServer?

    /// Mounts the endpoint on `server` (its other requests go to its handler as before).
    public init(mountingOn server: HTTPServer, options: Options = .init(), log: @escaping @Sendable (String) -> Void = { _ in }) {
        self.options = options
        self.log = log
        self.owned = nil
        state.withLock { $0.rooms.rejoinGrace = options.rejoinGrace }
        mount(on: server)
    }

    /// A server of its own on host:port (0: any free port), started; `stop()` ends it.
    /// `allowedHosts` and `corsOrigins` are its HTTP server's (see `RequestGuard`).
    public init(host: String, port: UInt16, options: Options = .init(), allowedHosts: Set<String>? = nil, corsOrigins: [String] = ["*"],
                log: @escaping @Sendable (String) -> Void = { _ in }) throws {
        self.options = options
        self.log = log
        let server = try HTTPServer(host: host, port: port) { request in
            if request.method == "GET", request.path == "/call/" || request.path == "/call" { return .html(200, callPage) }
            return .text(404, "not found: \(request.method) \(request.path); signaling is at \(SignalServer.path)?room=NAME, "
                         + "the call page at /call/?room=NAME\n")
        }
        self.owned = server
        state.withLock { $0.rooms.rejoinGrace = options.rejoinGrace }
        server.allowedHosts = allowedHosts
        server.corsOrigins = corsOrigins
        if case .token(let token) = options.access {
            server.credentialCheck = { head in SignalAccess.presentedToken(head.headers).map { Credentials.matches($0, token) } ?? false }
        }
        mount(on: server)
        server.start()
    }

    /// `ws://host:port/rtc/v1/signal/` of the server this one started.
    public var url: String? {
        owned.map { "ws://\($0.host.contains(":") ? "[\($0.host)]" : $0.host):\($0.port)\(Self.path)" }
    }

    /// The port of the server this one started.
    public var port: UInt16? { owned?.port }

    public func stop() { owned?.stop() }

    private func mount(on server: HTTPServer) {
        server.upgradeHandler = { [weak self] request in self?.upgrade(request) }
    }

    /// The endpoint: nil for other paths; 401/403 without access; 400 without a valid room,
    /// key or handshake.
    func upgrade(_ request: HTTPRequest) -> HTTPUpgrade? {
        let path = request.path.hasSuffix("/") ? request.path : request.path + "/"
        guard path == Self.path else { return nil }
        if let refusal = options.access.refusal(request.headers) { return .respond(refusal) }
        guard let room = SignalingRooms.validRoom(request.queryValue("room")) else {
            return .respond(.text(400, "missing or invalid room: ?room=NAME with 1-64 letters, digits, '-', '_' or '.'\n"))
        }
        let key = request.queryValue("key")
        let seat = request.queryValue("seat")
        if let seat, seat != "new", !RoomKey.isValid(seat) {
            return .respond(.text(400, "invalid seat: new, or the token a joined message gave\n"))
        }
        if let key, !RoomKey.isValid(key) {
            return .respond(.text(400, "invalid room key: 16-128 letters, digits, '-', '_' or '.'\n"))
        }
        if key == nil, options.access != .open {
            return .respond(.text(400, "this server needs a room key: ?room=NAME&key=KEY (16-128 letters, digits, '-', '_' or '.'; "
                                  + "whoever creates the room chooses it, whoever joins brings the same)\n"))
        }
        let accept: String
        do throws(WebSocketHandshakeError) {
            accept = try WebSocketHandshake.validateRequest(method: request.method, httpVersion: request.version) { request.headers.values($0) }
        } catch {
            var response = HTTPResponse.text(error.status, error.message + "\n")
            if error.status == 426 { response.headers.add("Sec-WebSocket-Version", WebSocketHandshake.version) }
            return .respond(response)
        }
        var headers = HTTPHeaders(WebSocketHandshake.responseHeaders(accept: accept))
        if SignalAccess.offersSubprotocol(request.headers) { headers.add("Sec-WebSocket-Protocol", SignalAccess.subprotocol) }
        return .accept(HTTPResponse(status: 101, headers: headers)) { [self] connection in
            serve(connection, room: room, key: key, seat: seat)
        }
    }

    // MARK: One peer, on its connection's thread

    private func serve(_ connection: UpgradedConnection, room: String, key: String?, seat: String?) {
        let id = state.withLock { state -> SignalingRooms.PeerID in
            state.nextID += 1
            state.connections[state.nextID] = connection
            return state.nextID
        }
        log("signal: \(connection.remoteAddress) joins room \(room)\(seat.map { $0 == "new" ? " (rejoinable)" : " (taking its seat back)" } ?? "")")
        var socket = WebSocketConnection(role: .server, limits: options.limits)
        var outputs = state.withLock { $0.rooms.join(id, room: room, key: key, seat: seat) }
        // Gone without a close frame (a dead path, not a goodbye): a seat is held for a rejoin.
        var abrupt = false
        var silentSince = ContinuousClock.now
        var pinged = false
        var closingSince: ContinuousClock.Instant?
        reading: while true {
            // What the rooms said: our own closes are done through our WebSocketConnection.
            for output in outputs {
                switch output {
                case .send(let peer, let text) where peer == id:
                    connection.write(socket.text(text))
                case .send(let peer, let text):
                    send(text, to: peer)
                case .close(let peer, let code, let reason) where peer == id:
                    log("signal: \(connection.remoteAddress) refused: \(reason)")
                    connection.write(socket.close(code: code, reason: reason))
                    closingSince = .now
                case .close(let peer, _, _):
                    state.withLock { $0.connections[peer] }?.close()
                }
            }
            outputs = []
            if socket.state == .closed { break }
            let wait: Duration
            if let closingSince {
                wait = options.closeTimeout - (.now - closingSince)
            } else {
                wait = options.pingInterval - (.now - silentSince)
            }
            switch connection.read(timeout: max(wait, .zero)) {
            case .data(let bytes):
                silentSince = .now
                pinged = false
                let (events, output) = socket.receive(bytes)
                connection.write(output)
                for event in events {
                    switch event {
                    case .text(let text):
                        outputs += state.withLock { $0.rooms.receive(text, from: id) }
                    case .binary:
                        connection.write(socket.text(SignalMessage.error("binary messages are not part of the protocol").json))
                    case .pong:
                        break
                    case .closed(let code, let reason, let error):
                        if let error {
                            log("signal: \(connection.remoteAddress) failed: \(error)")
                            // Out of the room before the lingering drain: the close frame is
                            // already on its way, and the peer may rejoin at once.
                            leaveRoom(id)
                            linger(connection)
                        } else {
                            log("signal: \(connection.remoteAddress) closed (\(code)\(reason.isEmpty ? "" : " \(reason)"))")
                        }
                    }
                }
            case .timedOut:
                if closingSince != nil { break reading }
                if pinged {
                    log("signal: \(connection.remoteAddress) silent for \(options.pingInterval * 2), dropped")
                    abrupt = true
                    break reading
                }
                connection.write(socket.ping())
                pinged = true
                silentSince = .now
            case .closed(let why):
                if socket.state != .closed {
                    log("signal: \(connection.remoteAddress) gone: \(why)")
                    abrupt = true
                }
                break reading
            }
        }
        leaveRoom(id, abrupt: abrupt)
    }

    /// Idempotent: the room forgets the peer once and tells the other one (`abrupt`: or holds
    /// its seat, see SignalingRooms, and checks again when the grace ends).
    private func leaveRoom(_ id: SignalingRooms.PeerID, abrupt: Bool = false) {
        let (left, held) = state.withLock { state -> ([SignalingRooms.Output], Bool) in
            state.connections[id] = nil
            let out = state.rooms.leave(id, abrupt: abrupt)
            return (out, abrupt && state.rooms.nextExpiry != nil)
        }
        for case .send(let peer, let text) in left { send(text, to: peer) }
        if held {
            let grace = options.rejoinGrace + .milliseconds(10)
            Task { [weak self] in
                try? await Task.sleep(for: grace)
                self?.expireSeats()
            }
        }
    }

    private func expireSeats() {
        let out = state.withLock { $0.rooms.expire(now: .now) }
        for case .send(let peer, let text) in out { send(text, to: peer) }
    }

    /// A text frame to another peer's connection (server frames are not masked: no state needed).
    private func send(_ text: String, to peer: SignalingRooms.PeerID) {
        guard let connection = state.withLock({ $0.connections[peer] }) else { return }
        connection.write(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: Array(text.utf8))))
    }

    /// After failing a connection: read and drop what the peer still sends (the rest of a
    /// message over the limit) for a moment, so closing does not reset the connection before
    /// the peer has read our close frame.
    private func linger(_ connection: UpgradedConnection) {
        let until = ContinuousClock.now + options.closeTimeout
        var drained = 0
        while drained < 8 * 1024 * 1024, case .data(let bytes) = connection.read(timeout: max(until - .now, .zero)) {
            drained += bytes.count
        }
    }
}
