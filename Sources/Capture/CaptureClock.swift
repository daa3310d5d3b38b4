import Media
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The two clocks a capturer reads: monotonic for frame timestamps (what the pipeline paces and
/// syncs on) and real time for the wall clock the test pattern carries (comparable across processes).
public enum CaptureClock {
    /// CLOCK_MONOTONIC in nanoseconds.
    public static func monotonicNs() -> Int64 { MonotonicClock.nanoseconds() }

    /// CLOCK_REALTIME in milliseconds since the Unix epoch.
    public static func realtimeMs() -> UInt64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return UInt64(max(0, Int64(ts.tv_sec))) * 1000 + UInt64(max(0, ts.tv_nsec)) / 1_000_000
    }
}
