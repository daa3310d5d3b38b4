// HTTP/1.1 server over POSIX sockets: one accept thread, one thread per connection, keep-alive,
// CORS. Request framing and limits live in HTTPRequestDecoder, which connections are held (and
// which gives way) in ConnectionBudget, each wait's deadline in RequestTimer, Host and Origin
// checks in RequestGuard; this file only moves bytes and threads.
import Glibc
import Locks

/// @unchecked Sendable: the descriptors and limits are immutable after init; everything mutable
/// (phase, thread table, `corsOrigins`) sits in one `Locked` state.
public final class HTTPServer: @unchecked Sendable {
    public typealias Handler = @Sendable (HTTPRequest) async -> HTTPResponse
    /// Asked first about every request, on the connection's thread; nil leaves the request to
    /// the handler. See `HTTPUpgrade`.
    public typealias UpgradeHandler = @Sendable (HTTPRequest) -> HTTPUpgrade?

    public let host: String
    /// The bound port (the kernel's choice when 0 was asked for).
    public let port: UInt16
    public let limits: HTTPLimits

    private let handler: Handler
    private let listenFD: Int32
    private let wake: WakePipe

    private enum Phase { case created, running, stopped }

    private struct State {
        var phase = Phase.created
        var corsOrigins = ["*"]
        var allowedHosts: Set<String>?
        var upgradeHandler: UpgradeHandler?
        var credentialCheck: CredentialCheck?
        var acceptThread: JoinableThread?
        /// Connection threads not yet joined, by connection id.
        var threads: [Int: JoinableThread] = [:]
        /// Connections held (counted before their thread starts), by pool and address.
        var budget: ConnectionBudget
        /// Descriptors of live connections, so one can be shut down to make room for another;
        /// removed (under the lock) before the descriptor is closed.
        var descriptors: [Int: Int32] = [:]
        /// Ids whose thread has finished and can be joined without waiting.
        var finished: [Int] = []
        /// Handler results being waited for, by connection id; stop() abandons them.
        var waits: [Int: (OneShot<HTTPResponse>, Task<Void, Never>)] = [:]
    }

    private let state: Locked<State>

    /// When true, every response carries Access-Control-Allow-Origin: * and OPTIONS requests are
    /// answered 204 as CORS preflights without calling the handler.
    public var cors: Bool {
        get { !corsOrigins.isEmpty }
        set { corsOrigins = newValue ? ["*"] : [] }
    }

    /// The origins whose pages may call this server (`*`: any); a listed origin is echoed back
    /// (with `Vary: Origin`), any other gets no Access-Control-Allow-Origin, so its browser
    /// refuses the response. Empty: no CORS at all (same-origin pages need none). Besides the
    /// server's own, only these origins may make state-changing requests or upgrades (403).
    public var corsOrigins: [String] {
        get { state.withLock { $0.corsOrigins } }
        set { state.withLock { $0.corsOrigins = newValue } }
    }

    /// Host names answered besides IP addresses (see `RequestGuard`); nil: any Host. Others
    /// get 421. A loopback server open to everyone sets this against DNS rebinding.
    public var allowedHosts: Set<String>? {
        get { state.withLock { $0.allowedHosts } }
        set { state.withLock { $0.allowedHosts = newValue } }
    }

    /// Whether a request head carries valid credentials: such requests are never the ones
    /// closed to make room, and may use `HTTPLimits.reservedConnections` once the rest is full.
    /// Called on the connection's thread as soon as a head is in. nil: no reserve.
    public typealias CredentialCheck = @Sendable (HTTPRequestHead) -> Bool
    public var credentialCheck: CredentialCheck? {
        get { state.withLock { $0.credentialCheck } }
        set {
            state.withLock { state in
                state.credentialCheck = newValue
                state.budget.reserveEnabled = newValue != nil
            }
        }
    }

    /// Lets a handler take over connections (WebSocket): see `HTTPUpgrade`.
    public var upgradeHandler: UpgradeHandler? {
        get { state.withLock { $0.upgradeHandler } }
        set { state.withLock { $0.upgradeHandler = newValue } }
    }

    /// Binds and listens at once (so `port` is known); call `start()` to accept connections.
    public init(host: String, port: UInt16, limits: HTTPLimits = .init(), handler: @escaping Handler) throws(HTTPError) {
        self.host = host
        self.limits = limits
        self.handler = handler
        self.state = Locked(State(budget: ConnectionBudget(limits: limits)))
        self.wake = try WakePipe()
        let listener = try Sockets.listen(host: host, port: port, backlog: 128)
        self.listenFD = listener.fd
        self.port = listener.port
    }

    deinit {
        // Running threads hold the server, so reaching deinit means it never started or has
        // stopped; only a never-started listener is still open.
        if state.withLock({ $0.phase }) == .created { close(listenFD) }
    }

    /// Starts the accept thread. Calling it again, or after stop(), does nothing.
    public func start() {
        // Spawned under the lock so a concurrent stop() always sees the accept thread it must join.
        state.withLock { state in
            guard state.phase == .created,
                  let thread = try? JoinableThread.spawn({ [self] in acceptLoop() }) else { return }
            state.phase = .running
            state.acceptThread = thread
        }
    }

    /// Closes the listener and every connection and joins their threads. Handlers still running
    /// are cancelled and not waited for (their responses are dropped): stop() never depends on
    /// the concurrency pool, so calling it from async code cannot deadlock. Idempotent.
    public func stop() {
        let (previous, acceptThread, waits) = state.withLock { state in
            let previous = state.phase
            state.phase = .stopped
            let thread = state.acceptThread
            state.acceptThread = nil
            let waits = Array(state.waits.values)
            state.waits = [:]
            return (previous, thread, waits)
        }
        guard previous != .stopped else { return }
        for (slot, task) in waits {
            slot.abandon()   // first: the handler, once cancelled, may reply at once
            task.cancel()
        }
        wake.signal()
        acceptThread?.join()
        // The accept thread is gone, so no thread can be added any more.
        let threads = state.withLock { state -> [JoinableThread] in
            let all = Array(state.threads.values)
            state.threads = [:]
            state.finished = []
            return all
        }
        for thread in threads { thread.join() }
        close(listenFD)
    }

    /// Connection threads not yet joined (for tests: zero after stop()).
    var threadCount: Int { state.withLock { $0.threads.count + ($0.acceptThread == nil ? 0 : 1) } }

    // MARK: Accepting

    /// "1.2.3.4:5" → "1.2.3.4", "[::1]:5" → "::1".
    public static func ipAddress(of remote: String) -> String {
        if remote.hasPrefix("["), let close = remote.firstIndex(of: "]") {
            return String(remote[remote.index(after: remote.startIndex)..<close])
        }
        return remote.lastIndex(of: ":").map { String(remote[..<$0]) } ?? remote
    }

    private func acceptLoop() {
        while true {
            reapFinished()
            // Wake up once a second to join finished connection threads.
            switch Sockets.wait(listenFD, events: Int32(POLLIN), wake: wake.readFD, deadline: Deadline(after: .seconds(1))) {
            case .woken: return
            case .timedOut: continue
            case .ready: break
            }
            var address = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept(listenFD, $0, &length)
                }
            }
            if fd < 0 {
                let code = errno
                if code == EAGAIN || code == EWOULDBLOCK || code == EINTR || code == ECONNABORTED { continue }
                // Out of descriptors or memory: back off instead of spinning on a ready listener.
                if case .woken = Sockets.wait(wake.readFD, events: Int32(POLLIN), wake: nil, deadline: Deadline(after: .milliseconds(100))) { return }
                continue
            }
            Sockets.configure(fd)
            let remote = Sockets.format(address)
            let accepted = ContinuousClock.now
            let admission = state.withLock { state -> ConnectionBudget.Admission in
                let admission = state.budget.admit(ip: Self.ipAddress(of: remote), now: accepted)
                guard case .admitted(let id, _, let victim) = admission else { return admission }
                // The victim's thread sees the end of its stream and leaves; its descriptor
                // stays open until that thread has removed it from the table.
                if let victim, let victimFD = state.descriptors[victim] { shutdown(victimFD, Int32(SHUT_RDWR)) }
                state.descriptors[id] = fd
                return admission
            }
            guard case .admitted(let id, _, _) = admission else {
                if case .refused(let refusal) = admission {
                    let busy = HTTPResponse.text(503, refusal + "\n").serialize(headOnly: false, close: true)
                    _ = Sockets.writeAll(fd, busy, wake: nil, deadline: Deadline(after: .zero))
                }
                close(fd)
                continue
            }
            do {
                let thread = try JoinableThread.spawn { [self] in
                    serve(fd, id: id, remote: remote, acceptedAt: accepted)
                    state.withLock { state in
                        state.descriptors[id] = nil
                        state.budget.release(id)
                        state.finished.append(id)
                    }
                    close(fd)
                }
                state.withLock { $0.threads[id] = thread }
            } catch {
                state.withLock { state in
                    state.descriptors[id] = nil
                    state.budget.release(id)
                }
                close(fd)
            }
        }
    }

    private func reapFinished() {
        let done = state.withLock { state -> [JoinableThread] in
            var joinable: [JoinableThread] = []
            // A thread may finish before its creator records it; such ids wait for the next round.
            state.finished.removeAll { id in
                guard let thread = state.threads.removeValue(forKey: id) else { return false }
                joinable.append(thread)
                return true
            }
            return joinable
        }
        for thread in done { thread.join() }
    }

    // MARK: Serving one connection

    private func serve(_ fd: Int32, id: Int, remote: String, acceptedAt accepted: ContinuousClock.Instant) {
        Sockets.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        var decoder = HTTPRequestDecoder(limits: limits, remoteAddress: remote)
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        var timer = RequestTimer(limits: limits, acceptedAt: accepted)
        /// The current request's head has been judged (credentials, the reserve).
        var judged = false
        while true {
            let output: HTTPRequestDecoder.Output
            do {
                output = try decoder.next()
            } catch {
                let status = error.responseStatus ?? 400
                finishWithError(fd, HTTPResponse.text(status, error.message + "\n"), scratch: &scratch)
                return
            }
            if !judged, let head = decoder.pendingHead ?? output.request?.head {
                judged = true
                guard mayServe(head, connection: id) else {
                    var busy = HTTPResponse.text(503, "the server is at its connection limit: only requests with valid "
                                                 + "credentials (Authorization: Bearer) are served now\n")
                    busy.headers.add("Retry-After", "1")
                    finishWithError(fd, busy, scratch: &scratch)
                    return
                }
            }
            switch output {
            case .needMoreData:
                if decoder.isMidRequest { timer.received(at: .now, inBody: decoder.pendingHead != nil) }
                switch Sockets.read(fd, into: &scratch, wake: wake.readFD, deadline: Deadline(at: timer.deadline)) {
                case .data(let count):
                    decoder.append(scratch[0..<count])
                case .timedOut:
                    // An idle connection is simply closed; a half-sent request gets 408.
                    if let expiry = timer.expiry { finishWithError(fd, expiry, scratch: &scratch) }
                    return
                case .eof, .woken, .failed:
                    return
                }
            case .sendContinue:
                let interim = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
                guard case .done = Sockets.writeAll(fd, interim, wake: wake.readFD, deadline: Deadline(after: limits.writeTimeout)) else { return }
            case .request(let request):
                judged = false
                // Busy on our side: not a connection to close for a newcomer. False: it was closed.
                guard state.withLock({ $0.budget.waiting(id, since: nil) }) else { return }
                let requestGuard = state.withLock { RequestGuard(allowedHosts: $0.allowedHosts, allowedOrigins: $0.corsOrigins) }
                var answer: HTTPResponse
                if var refusal = requestGuard.refusal(method: request.method, headers: request.headers) {
                    refusal.headers.set("Connection", "close")
                    answer = refusal
                } else {
                    switch upgradeHandler?(request) {
                    case .accept(let response, let run)?:
                        handOver(fd, id: id, response: response, decoder: &decoder, remote: remote, run: run, scratch: &scratch)
                        return
                    case .respond(let response)?:
                        answer = addingCORS(response, origin: request.headers["Origin"])
                    case nil:
                        guard let response = respond(to: request, connection: id) else { return }  // stopping
                        answer = response
                    }
                }
                let stopping = state.withLock { $0.phase == .stopped }
                let close = stopping || !request.keepAlive || answer.headers.hasToken("Connection", "close")
                if !close && request.version == "HTTP/1.0" { answer.headers.set("Connection", "keep-alive") }
                let bytes = answer.serialize(headOnly: request.method == "HEAD", close: close)
                timer.writing(at: .now)
                guard state.withLock({ $0.budget.waiting(id, since: .now) }) else { return }
                let written = Sockets.writeAll(fd, bytes, wake: wake.readFD, deadline: Deadline(at: timer.deadline))
                guard case .done = written, !close else { return }
                timer.responded(at: .now)
                guard state.withLock({ $0.budget.waiting(id, since: .now) }) else { return }
            }
        }
    }

    /// Whether this connection may serve a request with this head: credentials are checked
    /// (they keep it from being closed for a newcomer); on the reserve only credentialed ones.
    private func mayServe(_ head: HTTPRequestHead, connection id: Int) -> Bool {
        let check = state.withLock { $0.credentialCheck }
        let valid = check?(head) ?? false
        return state.withLock { $0.budget.credentials(id, valid: valid) }
    }

    /// Writes the `101` and gives the connection to the upgrade handler's `run`, on this thread,
    /// once the upgraded budget has room for it (else 503).
    private func handOver(_ fd: Int32, id: Int, response: HTTPResponse, decoder: inout HTTPRequestDecoder, remote: String,
                          run: @Sendable (UpgradedConnection) -> Void, scratch: inout [UInt8]) {
        if let refusal = state.withLock({ $0.budget.upgrade(id) }) {
            finishWithError(fd, .text(503, refusal + "\n"), scratch: &scratch)
            return
        }
        var head = response
        head.body = []
        let bytes = head.serialize(headOnly: true, close: false)
        guard case .done = Sockets.writeAll(fd, bytes, wake: wake.readFD, deadline: Deadline(after: limits.writeTimeout)) else { return }
        let connection = UpgradedConnection(fd: fd, wake: wake.readFD, buffered: decoder.takeBuffered(), remoteAddress: remote)
        run(connection)
        connection.finish()
    }

    /// Answers an OPTIONS preflight itself or calls the handler, then adds the CORS headers.
    /// Nil when the server stopped while the handler ran.
    private func respond(to request: HTTPRequest, connection: Int) -> HTTPResponse? {
        let origins = corsOrigins
        let cors = !origins.isEmpty
        var response: HTTPResponse
        if cors && request.method == "OPTIONS" {
            var allowed = "content-type, authorization, if-match"
            if let requested = request.headers["Access-Control-Request-Headers"], !requested.isEmpty {
                let known = Set(["content-type", "authorization", "if-match"])
                let extra = requested.split(separator: ",").map { $0.trimmingSpaces.lowercased() }
                    .filter { !$0.isEmpty && !known.contains($0) }
                if !extra.isEmpty { allowed += ", " + extra.joined(separator: ", ") }
            }
            response = HTTPResponse(status: 204, headers: [
                "Access-Control-Allow-Methods": "GET, POST, DELETE, PATCH, OPTIONS",
                "Access-Control-Allow-Headers": allowed,
                "Access-Control-Max-Age": "86400",
            ])
        } else {
            guard let answer = callHandler(request, connection: connection) else { return nil }
            response = answer
        }
        return addingCORS(response, origin: request.headers["Origin"])
    }

    /// Access-Control-Allow-Origin for a listed origin (echoed, with Vary) or `*`; nothing for
    /// an origin not on the list (its browser then refuses the response) or when CORS is off.
    private func addingCORS(_ response: HTTPResponse, origin: String?) -> HTTPResponse {
        let origins = corsOrigins
        guard let allowed = origins.contains("*") ? "*" : origin.flatMap({ origins.contains($0) ? $0 : nil }) else { return response }
        var response = response
        if !response.headers.contains("Access-Control-Allow-Origin") {
            response.headers.add("Access-Control-Allow-Origin", allowed)
            if allowed != "*" { response.headers.add("Vary", "Origin") }
        }
        if !response.headers.contains("Access-Control-Expose-Headers") {
            response.headers.add("Access-Control-Expose-Headers", "Location, Link, Content-Type, ETag, Accept-Patch")
        }
        return response
    }

    /// Runs the async handler in a Task and blocks this connection thread (ours, not one of the
    /// concurrency pool's) until it answers, so the pool never waits on a socket. stop() can
    /// abandon the wait. Nil when stopping.
    private func callHandler(_ request: HTTPRequest, connection: Int) -> HTTPResponse? {
        let slot = OneShot<HTTPResponse>()
        let handler = self.handler
        let registered = state.withLock { state -> Bool in
            guard state.phase != .stopped else { return false }
            let task = Task.detached { slot.put(await handler(request)) }
            state.waits[connection] = (slot, task)
            return true
        }
        guard registered else { return nil }
        let response = slot.take()
        state.withLock { _ = $0.waits.removeValue(forKey: connection) }
        return response
    }

    /// Sends an error response and closes gracefully: half-close, then read and discard what the
    /// client still sends for a moment, so our close does not reset the connection (which could
    /// destroy the response before the client reads it).
    private func finishWithError(_ fd: Int32, _ response: HTTPResponse, scratch: inout [UInt8]) {
        // No request to read an Origin from: only a server open to any origin adds CORS here.
        let bytes = addingCORS(response, origin: nil).serialize(headOnly: false, close: true)
        guard case .done = Sockets.writeAll(fd, bytes, wake: wake.readFD, deadline: Deadline(after: .seconds(1))) else { return }
        shutdown(fd, Int32(SHUT_WR))
        // Lingering close: read what the client is still sending (a refused 2 MB upload) so
        // closing does not reset the connection before it has read our answer; bounded by
        // time and by 8 MiB.
        let linger = Deadline(after: .seconds(1))
        var drained = 0
        while drained < 8 * 1024 * 1024 {
            guard case .data(let count) = Sockets.read(fd, into: &scratch, wake: wake.readFD, deadline: linger) else { return }
            drained += count
        }
    }
}
