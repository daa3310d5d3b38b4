// A connection handed over after an `Upgrade` (a WebSocket, say): the server's socket after its
// `101`, or the client's socket (TLS included) after it read one. Reads run on the one thread
// that owns the connection; writes may come from any thread and are serialized. A TLS session
// is never read and written at once: reads try SSL_read without waiting, under the same lock.
import Foundation
import Glibc
import Locks

/// What `HTTPServer` asks of its upgrade handler for each request.
public enum HTTPUpgrade: Sendable {
    /// Answer like a normal handler would (e.g. 400 for a bad handshake).
    case respond(HTTPResponse)
    /// Write `response` (a 101) and then call `run` on the connection's thread; it owns the
    /// connection until it returns, and the socket closes after. From then on the connection
    /// counts against `HTTPLimits.maxUpgradedConnections`, not the plain connections' budget;
    /// with that full, the client gets 503 instead of the 101.
    case accept(HTTPResponse, run: @Sendable (UpgradedConnection) -> Void)
}

/// @unchecked Sendable: the descriptor and transport are fixed at init; the buffered bytes and
/// the closed flag sit in `state`; writes and TLS calls hold `io`.
public final class UpgradedConnection: @unchecked Sendable {
    public enum Read: Sendable, Equatable {
        case data([UInt8])
        case timedOut
        /// The peer closed, the socket failed, `close()` was called or the server is stopping.
        case closed(String)
    }

    /// The peer as `ip:port`.
    public let remoteAddress: String
    private let fd: Int32
    /// Set at init; released in deinit under withoutSIGPIPE (TLS close_notify is a write).
    private var client: ClientConnection?
    private let wake: Int32
    /// The client's own wake pipe, kept as long as the connection.
    private let ownWake: WakePipe?
    private let io = NSLock()
    private let state: Locked<(buffered: [UInt8], closed: Bool)>

    init(fd: Int32, wake: Int32, buffered: [UInt8], remoteAddress: String) {
        self.fd = fd
        self.client = nil
        self.wake = wake
        self.ownWake = nil
        self.remoteAddress = remoteAddress
        self.state = Locked((buffered, false))
    }

    init(client: ClientConnection, wake: WakePipe, buffered: [UInt8], remoteAddress: String) {
        self.fd = client.descriptor
        self.client = client
        self.wake = wake.readFD
        self.ownWake = wake
        self.remoteAddress = remoteAddress
        self.state = Locked((buffered, false))
    }

    deinit {
        Self.withoutSIGPIPE { client = nil }
    }

    /// Waits up to `timeout` for bytes. Bytes that arrived with the handshake come first.
    public func read(timeout: Duration) -> Read {
        let (buffered, closed) = state.withLock { state -> ([UInt8], Bool) in
            defer { state.buffered = [] }
            return (state.buffered, state.closed)
        }
        if !buffered.isEmpty { return .data(buffered) }
        if closed { return .closed("connection closed") }
        let deadline = Deadline(after: timeout)
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)
        guard let client, client.isTLS else {
            switch Sockets.read(fd, into: &scratch, wake: wake, deadline: deadline) {
            case .data(let count): return .data(Array(scratch[0..<count]))
            case .timedOut: return .timedOut
            case .eof: return .closed("connection closed by the peer")
            case .woken: return .closed("stopping")
            case .failed(let code): return .closed(Sockets.errorText(code))
            }
        }
        while true {
            // SSL_read may write too (TLS 1.3 post-handshake messages).
            let result = io.withLock {
                Self.withoutSIGPIPE { client.read(into: &scratch, wake: wake, deadline: Deadline(after: .zero)) }
            }
            switch result {
            case .data(let count): return .data(Array(scratch[0..<count]))
            case .eof: return .closed("connection closed by the peer")
            case .woken: return .closed("stopping")
            case .failed(let text): return .closed(text)
            case .timedOut: break
            }
            switch Sockets.wait(fd, events: Int32(POLLIN), wake: wake, deadline: deadline) {
            case .ready: continue
            case .timedOut: return .timedOut
            case .woken: return .closed("stopping")
            }
        }
    }

    /// Writes all of `bytes` within `timeout`; false (and the connection closed) if it could not.
    @discardableResult
    public func write(_ bytes: [UInt8], timeout: Duration = .seconds(5)) -> Bool {
        guard !bytes.isEmpty else { return true }
        let done: Bool = io.withLock {
            guard !state.withLock({ $0.closed }) else { return false }
            let deadline = Deadline(after: timeout)
            guard let client else {
                if case .done = Sockets.writeAll(fd, bytes, wake: wake, deadline: deadline) { return true }
                return false
            }
            return Self.withoutSIGPIPE {
                if case .done = client.writeAll(bytes, wake: wake, deadline: deadline) { return true }
                return false
            }
        }
        if !done { close() }
        return done
    }

    /// Shuts the socket down both ways: the reader sees the end, later writes fail. The owner
    /// still returns from its loop to release it. Idempotent.
    public func close() {
        state.withLock { state in
            guard !state.closed else { return }
            state.closed = true
            shutdown(fd, Int32(SHUT_RDWR))
        }
    }

    /// The owner returned: no write is in progress or starts after this, and `close()` no longer
    /// touches the descriptor, so the server may close it.
    func finish() {
        io.withLock { state.withLock { $0.closed = true } }
    }

    /// OpenSSL writes with write(2): a peer that went away must give EPIPE, not kill the
    /// process with SIGPIPE. Blocks it on this thread for the call and takes back one it raised.
    /// (HTTPClient's own threads block it for good; an upgraded connection is used from any thread.)
    private static func withoutSIGPIPE<R>(_ body: () -> R) -> R {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        var previous = sigset_t()
        pthread_sigmask(SIG_BLOCK, &pipeSignal, &previous)
        var pending = sigset_t()
        sigpending(&pending)
        let wasPending = sigismember(&pending, SIGPIPE) == 1
        let result = body()
        if !wasPending {
            var now = timespec(tv_sec: 0, tv_nsec: 0)
            while sigtimedwait(&pipeSignal, nil, &now) == SIGPIPE {}
        }
        pthread_sigmask(SIG_SETMASK, &previous, nil)
        return result
    }
}
