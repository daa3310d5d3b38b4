/// When to send the next regular RTCP report (SR/RR). libwebrtc sends roughly every second for
/// video and every 5 s for audio, each interval scaled by a factor in [0.5, 1.5) (RFC 3550
/// §6.3.1, so participants do not synchronize); the first report goes out after half an interval.
/// The factor comes from a seeded generator, so the schedule is a pure function of the seed
/// and the `now` values passed in.
public struct RTCPScheduler: Sendable {
    public enum MediaKind: Sendable { case audio, video }

    public static let videoInterval: Duration = .seconds(1)
    public static let audioInterval: Duration = .seconds(5)

    public var interval: Duration
    public private(set) var nextReport: ContinuousClock.Instant
    private var rng: UInt64

    public init(interval: Duration, start: ContinuousClock.Instant, seed: UInt64 = 0x5EED_CAFE) {
        self.interval = interval
        self.nextReport = start + interval / 2
        self.rng = seed
    }

    public init(media: MediaKind, start: ContinuousClock.Instant, seed: UInt64 = 0x5EED_CAFE) {
        self.init(interval: media == .video ? Self.videoInterval : Self.audioInterval, start: start, seed: seed)
    }

    public func nextDeadline() -> ContinuousClock.Instant { nextReport }

    /// True when a report is due at `now`; then schedules the next one.
    public mutating func poll(now: ContinuousClock.Instant) -> Bool {
        guard now >= nextReport else { return false }
        nextReport = now + interval * (0.5 + nextUnit())
        return true
    }

    /// SplitMix64 → [0, 1).
    private mutating func nextUnit() -> Double {
        rng &+= 0x9E37_79B9_7F4A_7C15
        var z = rng
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Double(z >> 11) / Double(1 << 53)
    }
}
