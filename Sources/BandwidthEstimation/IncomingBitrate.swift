/// Bytes received over the last second on the local clock (libwebrtc `RateStatistics` with a
/// 1 s window), kept in 100 buckets of 10 ms so memory is fixed whatever the packet rate; a
/// shorter trailing window can be read from the same buckets. Times are microseconds and must
/// not go backwards (the caller passes a monotonic clock; earlier ones count as the newest).
struct IncomingBitrate: Sendable {
    static let bucketMicroseconds: Int64 = 10_000
    static let bucketCount = 100
    static let window: Int64 = bucketMicroseconds * Int64(bucketCount)
    /// Until this much has been seen the rate is not reported (the first frame's burst alone
    /// would read as a huge rate).
    static let minimumSpan: Int64 = 500_000

    private(set) var buckets: [Int]
    private var newest: Int64?
    private var first: Int64 = 0

    init() { buckets = Array(repeating: 0, count: Self.bucketCount) }

    mutating func add(bytes: Int, at t: Int64) {
        let b = Self.bucket(t)
        guard let n = newest else {
            newest = b
            first = t
            buckets[Self.slot(b)] = max(0, bytes)
            return
        }
        if b > n {
            if b - n >= Int64(Self.bucketCount) {
                for i in buckets.indices { buckets[i] = 0 }
            } else {
                for i in (n + 1)...b { buckets[Self.slot(i)] = 0 }
            }
            newest = b
        } else if n - b >= Int64(Self.bucketCount) {
            return  // older than the window
        }
        let (sum, overflow) = buckets[Self.slot(b)].addingReportingOverflow(max(0, bytes))
        buckets[Self.slot(b)] = overflow ? .max : sum
    }

    /// Bits per second over the `window` (µs, at most `Self.window`) ending at `t`, or over the
    /// time since the first byte while that is shorter; nil during the first `minimumSpan`.
    func bitrate(at t: Int64, window: Int64 = IncomingBitrate.window) -> Double? {
        guard let n = newest else { return nil }
        let buckets = min(max(window / Self.bucketMicroseconds, 1), Int64(Self.bucketCount))
        let span = min(t - first, buckets * Self.bucketMicroseconds)
        guard span >= Self.minimumSpan else { return nil }
        let oldest = max(Self.bucket(t), n) - buckets + 1
        var bytes = 0.0
        if n >= oldest {
            for b in oldest...n { bytes += Double(self.buckets[Self.slot(b)]) }
        }
        return bytes * 8 / (Double(span) / 1e6)
    }

    private static func bucket(_ t: Int64) -> Int64 {
        t >= 0 ? t / bucketMicroseconds : -((-(t + 1)) / bucketMicroseconds) - 1
    }

    private static func slot(_ bucket: Int64) -> Int {
        let c = Int64(bucketCount)
        return Int(((bucket % c) + c) % c)
    }
}
