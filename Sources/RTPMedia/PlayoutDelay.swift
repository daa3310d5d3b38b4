/// When a received video frame is shown (sans-I/O). A frame that waited for a retransmission
/// completes one round trip late, and the frames queued behind it with it; shown as they
/// complete, each such wait is a freeze. As libwebrtc's receiver does while NACK is in use, the
/// target delay grows to cover that wait: frames are shown on the sender's clock (their RTP
/// timestamps) plus the smallest transit seen recently plus a target delay, the 95th percentile
/// of how late frames completed over the last few seconds. Loss that stops ages out of the
/// window, so the delay shrinks again; a clean network keeps it near zero.
public struct PlayoutDelay: Sendable {
    public typealias Instant = ContinuousClock.Instant

    public struct Configuration: Sendable {
        /// How far back lateness and the smallest transit are taken from.
        public var window: Duration = .seconds(4)
        /// The quantile of lateness the target covers.
        public var quantile: Double = 0.9
        /// A frame is never held longer than this.
        public var maxDelay: Duration = .milliseconds(400)
        public init() {}
    }

    public let configuration: Configuration
    /// The delay frames are shown with on top of the smallest transit (W3C jitterBufferTargetDelay).
    public private(set) var target: Duration = .zero
    private var reference: Instant?
    private var lastRTP: UInt32 = 0
    private var extended: Int64 = 0
    /// (arrival, transit) of recent frames, seconds since `reference`; oldest first.
    private var recent: [(arrival: Double, transit: Double)] = []
    private var lastRender: Instant?

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    /// A frame left the jitter buffer at `now`: when to show it (never before `now`, never
    /// before the frame shown last).
    public mutating func frameComplete(rtpTimestamp: UInt32, now: Instant) -> Instant {
        guard let reference else {
            self.reference = now
            lastRTP = rtpTimestamp
            recent = [(0, 0)]
            lastRender = now
            return now
        }
        let step = Int64(Int32(bitPattern: rtpTimestamp &- lastRTP))
        lastRTP = rtpTimestamp
        extended += step
        let arrival = seconds(now - reference)
        let transit = arrival - Double(extended) / 90_000
        let windowSeconds = seconds(configuration.window)
        // A jump of the sender's clock (a new stream, a restart after an outage) or a long
        // silence: start over rather than hold frames against a stale base.
        if abs(step) > 90_000 * 5 || (recent.last.map { arrival - $0.arrival > windowSeconds } ?? false) {
            recent = []
            target = .zero
        }
        recent.removeAll { arrival - $0.arrival > windowSeconds }
        recent.append((arrival, transit))
        let base = recent.map(\.transit).min() ?? transit
        let lateness = recent.map { $0.transit - base }.sorted()
        let index = min(lateness.count - 1, Int((Double(lateness.count - 1) * configuration.quantile).rounded()))
        let targetSeconds = min(lateness[index], seconds(configuration.maxDelay))
        target = .seconds(targetSeconds)
        var render = now + .seconds(max(0, base + targetSeconds - transit))
        if let lastRender, render <= lastRender { render = lastRender + .microseconds(1) }
        lastRender = render
        return render
    }

    private func seconds(_ d: Duration) -> Double {
        Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
}
