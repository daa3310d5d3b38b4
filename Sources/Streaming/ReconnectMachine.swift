import PeerConnection

/// What a session tells its app about recovering its connection.
public enum ReconnectEvent: Sendable, Equatable {
    /// ICE is being restarted over the session's signaling (the path was lost); the connection
    /// and media stay.
    case restartingIce
    /// That restart found a path: the connection is up again (no new connection was needed).
    case iceRestarted
    /// The connection is lost; a new one is made after the backoff (attempts count from 1 and
    /// start again from 1 once one connects).
    case reconnecting(attempt: Int)
    /// A new connection carries the same tracks.
    case reconnected
    /// Nothing more will be tried (reconnection is off, the server refused for good, or the
    /// attempts ran out): the session has stopped.
    case failed(String)
}

/// How a signaling exchange of the machine's (an ICE restart, a new connection) ended.
enum ExchangeOutcome: Sendable, Equatable {
    case done
    /// The server could not be reached or asked us to come back later: the connection we have
    /// (a restart) or the next attempt (a new connection) may still work.
    case retry(String)
    /// The server no longer has the session, or cannot restart it: only a new one helps.
    case gone(String)
    /// The server refused us (credentials): no attempt can succeed.
    case fatal(String)
}

/// A session's recovery as a sans-I/O state machine: the current connection's state, the ends
/// of signaling exchanges and time in; what to do out. The driver (StreamingSession, P2PCall)
/// feeds it on the connection's loop and runs its actions.
///
/// - `disconnected` for `restartAfter` restarts ICE (once per disconnection). The connection
///   stays until it fails: its consent checks find a path that comes back within 0.5 s, while
///   a new session would take the server's stream from it and start its checks from scratch.
///   Signaling without ICE restarts (SRS's API) rides a disconnection out on the connection it
///   has (a new session during an outage cannot connect either, and would end the one that
///   can); it makes a new connection when the connection fails or asks for a restart (its
///   path's address went away).
/// - A failed connection (consent expired, DTLS failed), a session the server lost, or a restart
///   it cannot take, make new connections after the backoff until one connects; an attempt
///   that has not connected within `attemptTimeout` gives way to the next.
struct ReconnectMachine {
    enum Phase: Equatable {
        /// The first connection, until it connects (its failure is the session's).
        case connecting(since: ContinuousClock.Instant)
        case connected
        case disconnected(since: ContinuousClock.Instant)
        /// An ICE restart was signalled (or is being); the connection stays until it fails.
        case restarting
        case waiting(attempt: Int, until: ContinuousClock.Instant)
        /// A new connection's exchange is running (`since` nil) or it is connecting.
        case attempting(attempt: Int, since: ContinuousClock.Instant?)
        case stopped
    }

    enum Action: Equatable {
        /// Restart ICE over the session's signaling (the SRS API: a new session instead); not
        /// `force`d, only if the connection wants it (it called `restartIce()` itself).
        case restartIce(force: Bool)
        /// Replace the connection with a new one and run its signaling.
        case reconnect(attempt: Int)
        /// Stop following the current connection now: it is to be replaced whatever its state
        /// (the server dropped its session, or it wants a restart only a new session can make),
        /// so its `connected` must not pass for the replacement's.
        case retireConnection
        case report(ReconnectEvent)
    }

    let policy: ReconnectPolicy
    /// How long the first connection may take (nil: no limit, as for a call waiting for its peer).
    let connectTimeout: Duration?
    /// Whether the signaling can restart ICE; without (SRS's API) a new session takes its place.
    let canRestartIce: Bool
    private(set) var phase: Phase
    /// The restart under way was announced (`restartingIce`): its success is too.
    private var restartAnnounced = false
    private var backoff: Backoff

    init(policy: ReconnectPolicy, connectTimeout: Duration?, canRestartIce: Bool = true,
         seed: UInt64 = UInt64.random(in: 0...UInt64.max), now: ContinuousClock.Instant) {
        self.policy = policy
        self.connectTimeout = connectTimeout
        self.canRestartIce = canRestartIce
        backoff = Backoff(policy: policy, seed: seed)
        phase = .connecting(since: now)
    }

    /// When `timeout(now:)` is due next (nil: nothing is timed).
    var deadline: ContinuousClock.Instant? {
        switch phase {
        case .connecting(let since): connectTimeout.map { since + $0 }
        case .disconnected(let since) where policy.enabled && canRestartIce: since + policy.restartAfter
        case .waiting(_, let until): until
        case .attempting(_, let since?): since + policy.attemptTimeout
        default: nil
        }
    }

    var isStopped: Bool { phase == .stopped }

    /// The current connection's state changed.
    mutating func connection(_ state: PeerConnectionState, now: ContinuousClock.Instant) -> [Action] {
        switch (state, phase) {
        case (_, .stopped):
            return []
        case (.connected, .connecting), (.connected, .disconnected):
            phase = .connected
            return []
        case (.connected, .restarting):
            phase = .connected
            defer { restartAnnounced = false }
            return restartAnnounced ? [.report(.iceRestarted)] : []
        case (.connected, .waiting), (.connected, .attempting):
            phase = .connected
            return [.report(.reconnected)]
        case (.disconnected, .connected):
            phase = .disconnected(since: now)
            return []
        case (.failed, .connecting):
            return stop("the connection failed")
        case (.failed, .connected), (.failed, .disconnected), (.failed, .restarting):
            return reconnect(attempt: 1, why: "the connection failed", now: now)
        case (.failed, .attempting(let attempt, _)):
            return reconnect(attempt: attempt + 1, why: "the connection failed", now: now)
        case (.closed, .connecting):
            return stop("the server closed the session")
        case (.closed, .attempting(let attempt, _)):
            return replace(attempt: attempt + 1, why: "the server closed the session", now: now)
        case (.closed, .connected), (.closed, .disconnected), (.closed, .restarting):
            // Not ours (close() stops the machine first): the server ended the session (it
            // restarted, or dropped us) — a new one, as when it no longer knows the session.
            return replace(attempt: 1, why: "the server closed the session", now: now)
        default:
            return []
        }
    }

    /// The server no longer has the session (a PATCH or DELETE answered 404).
    mutating func sessionGone(_ why: String, now: ContinuousClock.Instant) -> [Action] {
        switch phase {
        case .stopped, .waiting: return []
        case .connecting: return stop(why)
        case .attempting(let attempt, _): return replace(attempt: attempt + 1, why: why, now: now)
        default: return replace(attempt: 1, why: why, now: now)
        }
    }

    /// The connection asked for an ICE restart (`negotiationneeded` after `restartIce()`).
    mutating func restartRequested(now: ContinuousClock.Instant) -> [Action] {
        switch phase {
        case .connected, .disconnected:
            guard policy.enabled else { return [] }
            guard canRestartIce else { return replace(attempt: 1, why: "the connection asked for an ICE restart", now: now) }
            // Asked for on a connection that is up (the app's restartIce(), an address that
            // appeared): signalled, but nothing was lost, so nothing is announced.
            let lost = phase != .connected
            phase = .restarting
            restartAnnounced = lost
            return lost ? [.restartIce(force: false), .report(.restartingIce)] : [.restartIce(force: false)]
        case .restarting:
            return [.restartIce(force: false)]   // another change of path while one restart is under way
        default:
            return []
        }
    }

    /// The signaling of the last `restartIce` or `reconnect` action ended.
    mutating func exchangeFinished(_ outcome: ExchangeOutcome, now: ContinuousClock.Instant) -> [Action] {
        if case .fatal(let why) = outcome, phase != .stopped { return stop(why) }
        switch (phase, outcome) {
        case (.restarting, .gone(let why)):
            return reconnect(attempt: 1, why: why, now: now)
        case (.attempting(let attempt, nil), .done):
            phase = .attempting(attempt: attempt, since: now)
            return []
        case (.attempting(let attempt, nil), .retry(let why)), (.attempting(let attempt, nil), .gone(let why)):
            return reconnect(attempt: attempt + 1, why: why, now: now)
        default:
            return []
        }
    }

    /// Time has reached `deadline`.
    mutating func timeout(now: ContinuousClock.Instant) -> [Action] {
        guard let deadline, now >= deadline else { return [] }
        switch phase {
        case .connecting:
            return stop("not connected after \(connectTimeout ?? .zero)")
        case .disconnected:
            phase = .restarting
            restartAnnounced = true
            return [.restartIce(force: true), .report(.restartingIce)]
        case .waiting(let attempt, _):
            phase = .attempting(attempt: attempt, since: nil)
            return [.reconnect(attempt: attempt)]
        case .attempting(let attempt, _):
            return reconnect(attempt: attempt + 1, why: "not connected after \(policy.attemptTimeout)", now: now)
        default:
            return []
        }
    }

    /// The app closed the session.
    mutating func close() {
        phase = .stopped
    }

    private mutating func reconnect(attempt: Int, why: String, now: ContinuousClock.Instant) -> [Action] {
        guard policy.enabled else { return stop(why) }
        if let max = policy.maxAttempts, attempt > max { return stop("\(why); gave up after \(max) attempts") }
        phase = .waiting(attempt: attempt, until: now + backoff.delay(attempt: attempt))
        return [.report(.reconnecting(attempt: attempt))]
    }

    /// `reconnect`, the current connection no longer followed.
    private mutating func replace(attempt: Int, why: String, now: ContinuousClock.Instant) -> [Action] {
        let actions = reconnect(attempt: attempt, why: why, now: now)
        return isStopped ? actions : [.retireConnection] + actions
    }

    private mutating func stop(_ why: String) -> [Action] {
        phase = .stopped
        return [.report(.failed(why))]
    }
}
