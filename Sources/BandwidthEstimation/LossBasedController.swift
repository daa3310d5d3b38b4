/// The loss-based half of GCC (draft-ietf-rmcat-gcc-02 §6; libwebrtc's classic
/// `SendSideBandwidthEstimation`). Its rate is also the combined target: it never rises above
/// the delay-based estimate, the REMB and the maximum ("upper limit").
///
/// Loss below 2%: grow to 1.08 × the lowest rate of the last second (so at most 8% per second).
/// 2–10%: random loss of a few percent says nothing about congestion, and backing off on it
/// would collapse the rate on a lossy but empty link. With transport-cc the delay-based
/// estimate says whether a queue is building, so the rate still grows (4% per second, up to
/// that estimate); with receiver reports alone it holds. Above 10%: rate × (1 − loss/2), at
/// most once per 300 ms + RTT and once per loss report.
struct LossBasedController: Sendable {
    static let lowLoss = 0.02
    static let highLoss = 0.1
    static let increaseInterval = Duration.seconds(1)
    static let decreaseInterval = Duration.milliseconds(300)
    /// Without loss in the first 2 s the delay-based estimate (and its probes) lead alone.
    static let startPhase = Duration.seconds(2)
    /// A loss fraction needs at least this many packets behind it.
    static let minPacketsPerReport = 20

    private(set) var minBitrate: Double
    private(set) var maxBitrate: Double
    private(set) var bitrate: Double
    /// The last reported loss fraction in 1/256 units, as RTCP carries it.
    private(set) var fractionLost: UInt8 = 0
    var rtt = Duration.milliseconds(200)
    /// Another estimator's cap (delay-based, REMB); nil = none.
    var delayBasedLimit: Double?
    var receiverLimit: Double?

    private var firstReport: Moment?
    private var lastReport: Moment?
    private var lastDecrease: Moment?
    private var decreasedSinceLastReport = false
    private var pendingLost = 0
    private var pendingExpected = 0
    /// Increasing minimum of the rate over the last second (a monotonic deque).
    private var minHistory: [(time: Moment, bitrate: Double)] = []

    init(startBitrate: Double, minBitrate: Double, maxBitrate: Double) {
        self.minBitrate = minBitrate
        self.maxBitrate = maxBitrate
        bitrate = min(max(startBitrate, minBitrate), maxBitrate)
    }

    var lossRate: Double { Double(fractionLost) / 256 }

    var upperLimit: Double {
        min(maxBitrate, delayBasedLimit ?? .infinity, receiverLimit ?? .infinity)
    }

    /// Packet counts from feedback; a loss fraction is formed once `minPacketsPerReport` have
    /// accumulated. Returns whether a new fraction was formed.
    @discardableResult
    mutating func onPacketsLost(_ lost: Int, of expected: Int, at now: Moment) -> Bool {
        guard expected > 0 else { return false }
        pendingLost += max(0, lost)
        pendingExpected += expected
        guard pendingExpected >= Self.minPacketsPerReport else { return false }
        let q8 = (min(pendingLost, pendingExpected) << 8) / pendingExpected
        pendingLost = 0
        pendingExpected = 0
        onFractionLost(UInt8(min(q8, 255)), at: now)
        return true
    }

    /// A loss fraction as an RTCP receiver report carries it (lost/expected × 256).
    mutating func onFractionLost(_ fraction: UInt8, at now: Moment) {
        fractionLost = fraction
        firstReport = firstReport ?? now
        lastReport = now
        decreasedSinceLastReport = false
        update(at: now)
    }

    mutating func setBounds(min low: Double, max high: Double) {
        minBitrate = low
        maxBitrate = high
        bitrate = max(minBitrate, min(bitrate, upperLimit))
    }

    /// A probe (or other trusted measurement) resets the rate outright.
    mutating func setBitrate(_ value: Double, at now: Moment) {
        minHistory.removeAll(keepingCapacity: true)
        apply(value, at: now)
    }

    /// Re-evaluates the rate; call on every report and periodically.
    mutating func update(at now: Moment) {
        if lossRate <= Self.highLoss, delayBasedLimit != nil, isInStartPhase(now) {
            // Trust the delay-based estimate (and its probes) at the start unless loss is heavy:
            // a lossy link from the first packet would otherwise hold the start rate.
            let target = upperLimit
            if target != bitrate {
                minHistory.removeAll(keepingCapacity: true)
                minHistory.append((now, max(minBitrate, target)))
            }
            apply(target, at: now)
            return
        }
        updateMinHistory(now)
        guard lastReport != nil else {
            apply(bitrate, at: now)
            return
        }
        let loss = lossRate
        if loss <= Self.lowLoss {
            // 1 kbit/s extra so very low rates cannot get stuck.
            let floor = minHistory.first?.bitrate ?? bitrate
            apply(max(bitrate, floor * 1.08 + 1000), at: now)
            return
        }
        if loss <= Self.highLoss, delayBasedLimit != nil {
            let floor = minHistory.first?.bitrate ?? bitrate
            apply(max(bitrate, floor * 1.04 + 1000), at: now)
            return
        }
        if loss > Self.highLoss, !decreasedSinceLastReport,
           lastDecrease.map({ now - $0 >= Self.decreaseInterval + rtt }) ?? true {
            lastDecrease = now
            decreasedSinceLastReport = true
            apply(bitrate * (512 - Double(fractionLost)) / 512, at: now)
            return
        }
        apply(bitrate, at: now)
    }

    private func isInStartPhase(_ now: Moment) -> Bool {
        guard let first = firstReport else { return true }
        return now - first < Self.startPhase
    }

    private mutating func updateMinHistory(_ now: Moment) {
        // The extra millisecond lets the rate grow even when reports come exactly 1 s apart.
        while let first = minHistory.first, now - first.time + .milliseconds(1) > Self.increaseInterval {
            minHistory.removeFirst()
        }
        while let last = minHistory.last, bitrate <= last.bitrate { minHistory.removeLast() }
        minHistory.append((now, bitrate))
    }

    private mutating func apply(_ value: Double, at now: Moment) {
        guard value.isFinite else { return }
        bitrate = max(minBitrate, min(value, upperLimit))
    }
}
