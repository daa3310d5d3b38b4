#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// CLOCK_MONOTONIC, the clock capture timestamps (`VideoFrame.timestampNs`, audio frames) are on:
/// the one reader of it, so an age computed anywhere compares like with like.
public enum MonotonicClock {
    public static func nanoseconds() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_MONOTONIC, &ts)
        return Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec)
    }

    public static func seconds() -> Double {
        Double(nanoseconds()) / 1e9
    }
}
