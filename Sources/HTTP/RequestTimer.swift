// When a server connection stops waiting for its client (sans-I/O: the connection loop reports
// what happened and when; this keeps the deadline). Each phase has its own allowance, so a
// slow-loris sending a byte now and then is cut off after `headerTimeout`, however it paces them.

struct RequestTimer: Sendable {
    typealias Instant = ContinuousClock.Instant

    enum Phase: Sendable, Equatable {
        /// Between requests on a keep-alive connection.
        case idle
        /// Receiving a request head (a new connection starts here).
        case head
        /// Receiving the body of a request whose head has arrived.
        case body
        /// Writing a response.
        case writing
    }

    let limits: HTTPLimits
    private(set) var phase: Phase
    private(set) var deadline: Instant
    /// Bytes of the current request have arrived (a timeout is then the client's fault: 408).
    private var started = false

    /// A connection accepted at `now` must deliver its first request's head in time.
    init(limits: HTTPLimits, acceptedAt now: Instant) {
        self.limits = limits
        phase = .head
        deadline = now + limits.headerTimeout
    }

    /// Bytes of a request are buffered at `now`; `inBody`: its head is complete and the body
    /// is awaited. The head's clock starts with its first byte, the body's with the head.
    mutating func received(at now: Instant, inBody: Bool) {
        if phase == .idle || phase == .writing {
            phase = .head
            deadline = now + limits.headerTimeout
        }
        started = true
        if inBody && phase == .head {
            phase = .body
            deadline = now + limits.bodyTimeout
        }
    }

    mutating func writing(at now: Instant) {
        phase = .writing
        deadline = now + limits.writeTimeout
    }

    /// A response went out at `now`: the connection idles until the next request starts.
    mutating func responded(at now: Instant) {
        phase = .idle
        started = false
        deadline = now + limits.idleTimeout
    }

    /// What the client is told when `deadline` passes; nil: close without a word (an idle
    /// connection, or one that never sent anything).
    var expiry: HTTPResponse? {
        switch phase {
        case .head where started:
            return .text(408, "request head not received within \(Sockets.describe(limits.headerTimeout))\n")
        case .body:
            return .text(408, "request body not received within \(Sockets.describe(limits.bodyTimeout))\n")
        default:
            return nil
        }
    }
}
