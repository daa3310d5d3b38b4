import RTP

extension Duration {
    /// Seconds as a Double (for rates and logs, not for exact arithmetic).
    public var inSeconds: Double {
        let (s, a) = components
        return Double(s) + Double(a) / 1e18
    }

    /// Whole nanoseconds (saturating far outside ±292 years).
    var inNanoseconds: Int64 {
        let (s, a) = components
        let (ns, overflow) = s.multipliedReportingOverflow(by: 1_000_000_000)
        return overflow ? (s < 0 ? Int64.min : Int64.max) : ns + a / 1_000_000_000
    }

    /// This duration in ticks of a `clockRate` Hz RTP clock, rounded toward zero.
    func rtpTicks(clockRate: Int) -> Int64 {
        let (s, a) = components
        return s * Int64(clockRate) + (a / 1_000_000_000) * Int64(clockRate) / 1_000_000_000
    }
}

/// Maps the monotonic clock to wall-clock NTP time: one reading of both clocks taken together,
/// then NTP for any instant follows from the monotonic distance (so wall-clock steps do not
/// bend RTCP timing).
public struct NTPClock: Sendable {
    public let reference: ContinuousClock.Instant
    public let unixSeconds: Double

    /// `unixSeconds`: the wall clock (seconds since 1970) at `reference`.
    public init(reference: ContinuousClock.Instant, unixSeconds: Double) {
        self.reference = reference
        self.unixSeconds = unixSeconds
    }

    public func ntp(at instant: ContinuousClock.Instant) -> UInt64 {
        NTPTime.ntp(unixSeconds: unixSeconds + (instant - reference).inSeconds)
    }
}
