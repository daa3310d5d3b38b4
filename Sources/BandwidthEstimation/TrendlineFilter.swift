/// Least-squares slope of the smoothed accumulated one-way delay variation over the last
/// `windowSize` packet groups (libwebrtc `TrendlineEstimator`, which replaced the draft's
/// Kalman filter). A positive slope means the bottleneck queue is growing: 0.1 means it grows
/// by 100 µs per millisecond, i.e. we send about 10% above what drains.
struct TrendlineFilter: Sendable {
    let windowSize: Int
    let smoothing: Double

    private var accumulatedDelay = 0.0
    private var smoothedDelay = 0.0
    private var firstArrivalMs: Double?
    private var history: [(x: Double, y: Double)] = []
    /// Deltas seen so far (capped): early on the detector scales its gain down with this.
    private(set) var numDeltas = 0
    private(set) var slope = 0.0

    init(windowSize: Int = 20, smoothing: Double = 0.9) {
        self.windowSize = max(2, windowSize)
        self.smoothing = smoothing
        history.reserveCapacity(self.windowSize + 1)
    }

    /// Adds one group delta (arrival delta minus send delta, ms) at an arrival time (ms) and
    /// returns the current slope; the previous slope is kept until the window is full.
    mutating func update(delayDeltaMs: Double, arrivalMs: Double) -> Double {
        numDeltas = min(numDeltas + 1, 1000)
        let first = firstArrivalMs ?? arrivalMs
        firstArrivalMs = first
        accumulatedDelay += delayDeltaMs
        smoothedDelay = smoothing * smoothedDelay + (1 - smoothing) * accumulatedDelay
        history.append((arrivalMs - first, smoothedDelay))
        if history.count > windowSize { history.removeFirst() }
        if history.count == windowSize, let s = Self.linearFitSlope(history) { slope = s }
        return slope
    }

    static func linearFitSlope(_ points: [(x: Double, y: Double)]) -> Double? {
        guard points.count >= 2 else { return nil }
        let n = Double(points.count)
        let meanX = points.reduce(0) { $0 + $1.x } / n
        let meanY = points.reduce(0) { $0 + $1.y } / n
        var numerator = 0.0
        var denominator = 0.0
        for p in points {
            numerator += (p.x - meanX) * (p.y - meanY)
            denominator += (p.x - meanX) * (p.x - meanX)
        }
        guard denominator != 0, numerator.isFinite, denominator.isFinite else { return nil }
        return numerator / denominator
    }
}
