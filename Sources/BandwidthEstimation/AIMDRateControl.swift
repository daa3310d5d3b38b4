#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The delay-based rate controller (draft-ietf-rmcat-gcc-02 §5.5; libwebrtc `AimdRateControl`).
///
/// Normal → increase: ×1.08 per second while far from the last known link capacity, else by
/// about one packet per response time (additive, so the queue is probed gently near the limit).
/// Overusing → decrease to 0.85 × the acknowledged bitrate, then hold until the queue settles.
/// Underusing → hold: the queue is draining and the rate that drains it is already right.
struct AIMDRateControl: Sendable {
    enum Phase: Sendable { case hold, increase, decrease }

    static let beta = 0.85
    static let defaultRTT = Duration.milliseconds(200)

    private(set) var minBitrate: Double
    private(set) var maxBitrate: Double
    private(set) var bitrate: Double
    private(set) var phase = Phase.hold
    private(set) var linkCapacity = LinkCapacityEstimator()
    var rtt = AIMDRateControl.defaultRTT
    private var latestThroughput: Double?
    private var lastChange: Moment?
    private var lastDecrease: Moment?

    init(startBitrate: Double, minBitrate: Double, maxBitrate: Double) {
        self.minBitrate = minBitrate
        self.maxBitrate = maxBitrate
        bitrate = min(max(startBitrate, minBitrate), maxBitrate)
    }

    mutating func setBounds(min low: Double, max high: Double) {
        minBitrate = low
        maxBitrate = high
        bitrate = clamp(bitrate)
    }

    /// Overrides the estimate (start, probe result, bounds).
    mutating func setEstimate(_ value: Double, at now: Moment) {
        let previous = bitrate
        bitrate = clamp(value)
        lastChange = now
        if bitrate < previous { lastDecrease = now }
    }

    /// Whether an ongoing overuse warrants another decrease: once per RTT (10–200 ms), or at
    /// once if the acknowledged rate fell below half the estimate.
    func timeToReduceFurther(at now: Moment, throughput: Double) -> Bool {
        let interval = min(max(rtt, .milliseconds(10)), .milliseconds(200))
        if let last = lastChange, now - last < interval {
            return throughput < 0.5 * bitrate
        }
        return true
    }

    /// Decrease pacing for overuse seen before any acknowledged bitrate exists: every 200 ms.
    func initialTimeToReduceFurther(at now: Moment) -> Bool {
        guard let last = lastDecrease else { return true }
        return now - last >= .milliseconds(200)
    }

    mutating func update(_ state: DelayState, throughput: Double?, at now: Moment) {
        if let t = throughput { latestThroughput = t }
        let estimatedThroughput = throughput ?? latestThroughput ?? bitrate
        switch state {
        case .normal: if phase == .hold { lastChange = now; phase = .increase }
        case .overusing: phase = .decrease
        case .underusing: phase = .hold
        }
        var newBitrate: Double?
        switch phase {
        case .hold:
            break
        case .increase:
            if let upper = linkCapacity.upperBound, estimatedThroughput > upper { linkCapacity.reset() }
            // Never run far ahead of what actually gets through (an encoder below target, or
            // feedback that stopped): at most 1.5 × the acknowledged rate + 10 kbit/s.
            let limit = 1.5 * estimatedThroughput + 10_000
            if bitrate < limit {
                let increase = linkCapacity.hasEstimate
                    ? additiveIncrease(at: now) : multiplicativeIncrease(at: now)
                newBitrate = min(bitrate + increase, limit)
            }
            lastChange = now
        case .decrease:
            var decreased = estimatedThroughput * Self.beta
            if decreased > bitrate, let capacity = linkCapacity.estimate { decreased = Self.beta * capacity }
            if decreased < bitrate { newBitrate = decreased }
            if let lower = linkCapacity.lowerBound, estimatedThroughput < lower {
                // Far below the old capacity: the path changed, forget it.
                linkCapacity.reset()
            }
            linkCapacity.onOveruseDetected(acknowledgedBitrate: estimatedThroughput)
            // Stay on hold until the queue has drained.
            phase = .hold
            lastChange = now
            lastDecrease = now
        }
        bitrate = clamp(newBitrate ?? bitrate)
    }

    private func multiplicativeIncrease(at now: Moment) -> Double {
        let elapsed = lastChange.map { min((now - $0).inSeconds, 1) } ?? 1
        let alpha = pow(1.08, elapsed)
        return max(bitrate * (alpha - 1), 1000)
    }

    /// About one average packet per response time (RTT + 100 ms for the detector), assuming
    /// 30 fps video cut in 1200-byte packets.
    private func additiveIncrease(at now: Moment) -> Double {
        let elapsed = lastChange.map { max((now - $0).inSeconds, 0) } ?? 0
        let frameBits = bitrate / 30
        let packetsPerFrame = max(1, (frameBits / (1200 * 8)).rounded(.up))
        let averagePacketBits = frameBits / packetsPerFrame
        let responseTime = (rtt + .milliseconds(100)).inSeconds
        let ratePerSecond = max(4000, averagePacketBits / responseTime)
        return ratePerSecond * elapsed
    }

    private func clamp(_ value: Double) -> Double {
        guard value.isFinite else { return bitrate }
        return min(max(value, minBitrate), max(minBitrate, maxBitrate))
    }
}
