// HTTP/1.1 server over POSIX sockets: one accept thread, one thread per connection (bounded by
// HTTPLimits.maxConnections), keep-alive, CORS. Request framing and limits live in
// HTTPRequestDecoder; this file only moves bytes and threads.
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
        mutating func release(_ ip: String) {
            let left = perAddress[ip, default: 1] - 1
            perAddress[ip] = left > 0 ? left : nil
        }
        var phase = Phase.created
        var corsOrigins = ["*"]
        var upgradeHandler: UpgradeHandler?
        var acceptThread: JoinableThread?
        /// Connection threads not yet joined, by connection id.
        var threads: [Int: JoinableThread] = [:]
        /// Connections being served (counted before their thread starts).
        var live = 0
        /// Live connections per remote IP address.
        var perAddress: [String: Int] = [:]
        /// Ids whose thread has finished and can be joined without waiting.
        var finished: [Int] = []
        var nextID = 0
        /// Handler results being waited for, by connection id; stop() abandons them.
        var waits: [Int: (OneShot<HTTPResponse>, Task<Void, Never>)] = [:]
    }

    private let state = Locked(State())

    /// When true, every response carries Access-Control-Allow-Origin: * and OPTIONS requests are
    /// answered 204 as CORS preflights without calling the handler.
    public var cors: Bool {
        get { !corsOrigins.isEmpty }
        set { corsOrigins = newValue ? ["*"] : [] }
    }

    /// The origins whose pages may call this server (`*`: any); a listed origin is echoed back
    /// (with `Vary: Origin`), any other gets no Access-Control-Allow-Origin, so its browser
    /// refuses the response. Empty: no CORS at all (same-origin pages need none).
    public var corsOrigins: [String] {
        get { state.withLock { $0.corsOrigins } }
        set { state.withLock { $0.corsOrigins = newValue } }
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
            let ip = Self.ipAddress(of: remote)
            let (admitted, refusal) = state.withLock { state -> (Int?, String) in
                guard state.live < limits.maxConnections else { return (nil, "too many connections") }
                guard state.perAddress[ip, default: 0] < limits.maxConnectionsPerAddress else {
                    return (nil, "too many connections from \(ip)")
                }
                state.live += 1
                state.perAddress[ip, default: 0] += 1
                state.nextID += 1
                return (state.nextID, "")
            }
            guard let id = admitted else {
                let busy = HTTPResponse.text(503, refusal + "\n").serialize(headOnly: false, close: true)
                _ = Sockets.writeAll(fd, busy, wake: nil, deadline: Deadline(after: .zero))
                close(fd)
                continue
            }
            do {
                let thread = try JoinableThread.spawn { [self] in
                    serve(fd, id: id, remote: remote)
                    // The slot is free before the close: a peer that sees the end can reconnect.
                    state.withLock { state in
                        state.live -= 1
                        state.release(ip)
                        state.finished.append(id)
                    }
                    close(fd)
                }
                state.withLock { $0.threads[id] = thread }
            } catch {
                close(fd)
                state.withLock { state in
                    state.live -= 1
                    state.release(ip)
                }
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

    private func serve(_ fd: Int32, id: Int, remote: String) {
        Sockets.setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
        var decoder = HTTPRequestDecoder(limits: limits, remoteAddress: remote)
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        var deadline = Deadline(after: limits.readTimeout)
        while true {
            let output: HTTPRequestDecoder.Output
            do {
                output = try decoder.next()
            } catch {
                let status = error.responseStatus ?? 400
                finishWithError(fd, HTTPResponse.text(status, error.message + "\n"), scratch: &scratch)
                return
            }
            switch output {
            case .needMoreData:
                switch Sockets.read(fd, into: &scratch, wake: wake.readFD, deadline: deadline) {
                case .data(let count):
                    decoder.append(scratch[0..<count])
                case .timedOut:
                    // An idle keep-alive connection is simply closed; a half-sent request gets 408.
                    if decoder.isMidRequest {
                        let message = "request not received within \(Sockets.describe(limits.readTimeout))\n"
                        finishWithError(fd, HTTPResponse.text(408, message), scratch: &scratch)
                    }
                    return
                case .eof, .woken, .failed:
                    return
                }
            case .sendContinue:
                let interim = Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)
                guard case .done = Sockets.writeAll(fd, interim, wake: wake.readFD, deadline: deadline) else { return }
            case .request(let request):
                var upgraded: HTTPResponse?
                switch upgradeHandler?(request) {
                case .accept(let response, let run)?:
                    var head = response
                    head.body = []
                    let bytes = head.serialize(headOnly: true, close: false)
                    guard case .done = Sockets.writeAll(fd, bytes, wake: wake.readFD, deadline: Deadline(after: limits.readTimeout)) else { return }
                    let connection = UpgradedConnection(fd: fd, wake: wake.readFD, buffered: decoder.takeBuffered(), remoteAddress: remote)
                    run(connection)
                    connection.finish()
                    return
                case .respond(let response)?:
                    upgraded = addingCORS(response, origin: request.headers["Origin"])
                case nil:
                    break
                }
                guard var response = upgraded ?? respond(to: request, connection: id) else { return }  // stopping
                let stopping = state.withLock { $0.phase == .stopped }
                let close = stopping || !request.keepAlive || response.headers.hasToken("Connection", "close")
                if !close && request.version == "HTTP/1.0" { response.headers.set("Connection", "keep-alive") }
                let bytes = response.serialize(headOnly: request.method == "HEAD", close: close)
                let written = Sockets.writeAll(fd, bytes, wake: wake.readFD, deadline: Deadline(after: limits.readTimeout))
                guard case .done = written, !close else { return }
                deadline = Deadline(after: limits.readTimeout)
            }
        }
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
