/// NTP timestamps as RTCP uses them: 64-bit 32.32 fixed point seconds since 1900-01-01, and the
/// "compact" middle 32 bits (16.16) carried in LSR / DLSR and used for round-trip time.
public enum NTPTime {
    /// Seconds from 1900-01-01 to the Unix epoch.
    public static let unixEpochOffset: UInt64 = 2_208_988_800

    /// 64-bit NTP from seconds since 1900 (negative and non-finite values give 0).
    public static func ntp(secondsSince1900 seconds: Double) -> UInt64 {
        guard seconds.isFinite, seconds > 0 else { return 0 }
        guard seconds < 4_294_967_296 else { return UInt64.max }
        let whole = seconds.rounded(.down)
        let fraction = ((seconds - whole) * 4_294_967_296).rounded(.down)
        return UInt64(whole) << 32 | UInt64(min(fraction, 4_294_967_295))
    }

    /// 64-bit NTP from seconds since the Unix epoch (what a wall clock gives).
    public static func ntp(unixSeconds: Double) -> UInt64 {
        ntp(secondsSince1900: unixSeconds + Double(unixEpochOffset))
    }

    public static func secondsSince1900(_ ntp: UInt64) -> Double {
        Double(ntp >> 32) + Double(ntp & 0xFFFF_FFFF) / 4_294_967_296
    }

    /// The middle 32 bits (LSR field of a reception report for the SR with this timestamp).
    public static func compact(_ ntp: UInt64) -> UInt32 {
        UInt32(truncatingIfNeeded: ntp >> 16)
    }

    /// A duration in 1/65536 s units (the DLSR field); negative gives 0, huge saturates.
    public static func compact(_ duration: Duration) -> UInt32 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0 else { return 0 }
        guard seconds < 65_536 else { return UInt32.max }
        // 1/65536 s = 1e18 / 65536 attoseconds.
        let fraction = UInt64(attoseconds) / 15_258_789_062_500
        return UInt32(seconds) << 16 | UInt32(min(fraction, 0xFFFF))
    }

    /// `ntp` moved by a non-negative duration (32.32 arithmetic, wrapping as the field does).
    public static func adding(_ duration: Duration, to ntp: UInt64) -> UInt64 {
        let (seconds, attoseconds) = duration.components
        guard seconds >= 0, attoseconds >= 0 else { return ntp }
        // The fraction: attoseconds × 2^32 / 10^18, in two steps that stay within 64 bits.
        let fraction = UInt64(attoseconds / 1_000_000_000) * (1 << 32) / 1_000_000_000
        return ntp &+ (UInt64(seconds) << 32) &+ fraction
    }

    public static func duration(compact: UInt32) -> Duration {
        .seconds(Int64(compact >> 16)) + .nanoseconds(Int64(compact & 0xFFFF) * 1_000_000_000 / 65_536)
    }

    /// RTT from a reception report (RFC 3550 §6.4.1): arrival − LSR − DLSR, all compact; nil
    /// when the report has no LSR or the result would be negative (clock trouble).
    public static func roundTripTime(arrival: UInt32, lastSR: UInt32, delaySinceLastSR: UInt32) -> Duration? {
        guard lastSR != 0 else { return nil }
        let rtt = Int64(arrival &- lastSR) - Int64(delaySinceLastSR)
        guard rtt >= 0, arrival &- lastSR < 0x8000_0000 else { return nil }
        return duration(compact: UInt32(rtt))
    }
}
