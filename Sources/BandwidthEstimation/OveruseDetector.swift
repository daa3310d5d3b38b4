/// Compares the delay trend with an adaptive threshold (draft-ietf-rmcat-gcc-02 §5.4–5.5,
/// constants from libwebrtc's `TrendlineEstimator`).
///
/// The threshold follows |trend| slowly up (k_up) and faster down (k_down) so that a path
/// with large natural jitter does not read as permanent overuse, and a competing TCP flow that
/// keeps the queue full does not starve us: with a fixed threshold GCC would yield to it.
struct OveruseDetector: Sendable {
    static let initialThreshold = 12.5
    static let thresholdRange = 6.0...600.0
    static let kUp = 0.0087
    static let kDown = 0.039
    static let thresholdGain = 4.0
    /// The trend is scaled by min(deltas, 60) so that the first seconds are judged gently.
    static let minNumDeltas = 60
    static let overusingTimeThresholdMs = 10.0
    /// Outliers this far above the threshold do not move it (e.g. a route change).
    static let maxAdaptOffsetMs = 15.0

    private(set) var threshold = OveruseDetector.initialThreshold
    private(set) var state = DelayState.normal
    /// The last trend as compared with the threshold (slope × deltas × gain).
    private(set) var modifiedTrend = 0.0
    private var timeOverUsingMs = -1.0
    private var overuseCounter = 0
    private var previousTrend = 0.0
    private var lastUpdateMs: Double?

    /// `trend` from the trendline filter, `sendDeltaMs` of the group that produced it,
    /// `nowMs` the group's arrival time.
    mutating func detect(trend: Double, sendDeltaMs: Double, numDeltas: Int, nowMs: Double) -> DelayState {
        guard numDeltas >= 2 else {
            state = .normal
            return state
        }
        let modified = Double(min(numDeltas, Self.minNumDeltas)) * trend * Self.thresholdGain
        modifiedTrend = modified
        if modified > threshold {
            if timeOverUsingMs < 0 {
                // Assume the overuse started halfway through this group's sampling interval.
                timeOverUsingMs = sendDeltaMs / 2
            } else {
                timeOverUsingMs += sendDeltaMs
            }
            overuseCounter += 1
            // Overuse must last > 10 ms over more than one group and still be rising.
            if timeOverUsingMs > Self.overusingTimeThresholdMs && overuseCounter > 1 && trend >= previousTrend {
                timeOverUsingMs = 0
                overuseCounter = 0
                state = .overusing
            }
        } else if modified < -threshold {
            timeOverUsingMs = -1
            overuseCounter = 0
            state = .underusing
        } else {
            timeOverUsingMs = -1
            overuseCounter = 0
            state = .normal
        }
        previousTrend = trend
        updateThreshold(modified, nowMs: nowMs)
        return state
    }

    private mutating func updateThreshold(_ modified: Double, nowMs: Double) {
        let last = lastUpdateMs ?? nowMs
        lastUpdateMs = nowMs
        let magnitude = abs(modified)
        guard magnitude.isFinite, magnitude <= threshold + Self.maxAdaptOffsetMs else { return }
        let k = magnitude < threshold ? Self.kDown : Self.kUp
        let elapsed = min(max(nowMs - last, 0), 100)
        threshold += k * (magnitude - threshold) * elapsed
        threshold = min(max(threshold, Self.thresholdRange.lowerBound), Self.thresholdRange.upperBound)
    }
}
