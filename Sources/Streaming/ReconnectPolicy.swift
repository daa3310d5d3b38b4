import SeededRandom

/// How a `StreamingSession` or `P2PCall` recovers when the network or the server lets it down:
/// a disconnected path gets an ICE restart, a failed connection or a session the server dropped
/// gets a new connection after an exponential backoff, for as long as it takes (by default).
public struct ReconnectPolicy: Sendable, Equatable {
    /// Off, the first failure ends the session (what scripts that must fail fast want).
    public var enabled = true
    /// The delay before the first attempt; it doubles per attempt up to `maxDelay`.
    public var initialDelay: Duration = .milliseconds(300)
    public var maxDelay: Duration = .seconds(7)
    /// Each delay is drawn from `[base × (1 − jitter), base]`, so that clients cut off together do
    /// not all come back at the same instant, and the cap stays a cap.
    public var jitter = 0.2
    /// nil: no limit.
    public var maxAttempts: Int?
    /// ICE `disconnected` this long (no consent, no packets) restarts ICE over the session's signaling.
    public var restartAfter: Duration = .seconds(3)
    /// How long a reconnect attempt's connection may take before the next attempt replaces it.
    /// Short, because ICE checks that find no path back off (0.5, 1, 2, 4 s apart) while a new
    /// connection starts them densely again: by 4 s an attempt has had its dense checks.
    public var attemptTimeout: Duration = .seconds(4)

    public init() {}

    public static var off: ReconnectPolicy {
        var policy = ReconnectPolicy()
        policy.enabled = false
        return policy
    }
}

/// The delays between reconnect attempts: `initialDelay × 2^(attempt − 1)` up to `maxDelay`,
/// jittered downwards. Deterministic for a seed.
public struct Backoff: Sendable {
    public let policy: ReconnectPolicy
    private var random: SplitMix64

    public init(policy: ReconnectPolicy, seed: UInt64 = UInt64.random(in: 0...UInt64.max)) {
        self.policy = policy
        random = SplitMix64(seed: seed)
    }

    /// The un-jittered delay before attempt `attempt` (1-based).
    public func baseDelay(attempt: Int) -> Duration {
        // Doubling past 2^20 cannot stay under any sensible cap; stop before Duration overflows.
        let doublings = min(max(attempt - 1, 0), 20)
        return min(policy.initialDelay * (1 << doublings), policy.maxDelay)
    }

    /// The delay before attempt `attempt`, jittered (each call draws anew).
    public mutating func delay(attempt: Int) -> Duration {
        let base = baseDelay(attempt: attempt)
        let jitter = min(max(policy.jitter, 0), 1)
        return base * (1 - jitter * random.unit())
    }
}
