/// Conversions the estimators need: libwebrtc's filters are tuned in milliseconds and the
/// transport-cc clock ticks in microseconds, so both sides meet in those units.
extension Duration {
    /// Whole microseconds, truncated toward zero.
    var inMicroseconds: Int64 {
        let c = components
        return c.seconds &* 1_000_000 &+ c.attoseconds / 1_000_000_000_000
    }

    var inMilliseconds: Double { Double(components.seconds) * 1000 + Double(components.attoseconds) / 1e15 }

    var inSeconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }

    /// A duration from a (finite, non-negative) number of seconds, saturating instead of trapping.
    static func secondsClamped(_ s: Double) -> Duration {
        guard s.isFinite, s > 0 else { return .zero }
        return .nanoseconds(Int64(min(s, 1e9) * 1e9))
    }
}
