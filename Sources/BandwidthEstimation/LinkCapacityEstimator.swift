/// Running estimate of the bottleneck capacity, taken from the acknowledged rate at each
/// overuse, with its deviation (libwebrtc `LinkCapacityEstimator`). AIMD increases additively
/// while it is near this estimate and multiplicatively once it is clearly past it.
struct LinkCapacityEstimator: Sendable {
    private(set) var estimateKbps: Double?
    private var deviationVariance = 0.4

    var hasEstimate: Bool { estimateKbps != nil }

    private var deviationKbps: Double { ((estimateKbps ?? 0) * deviationVariance).squareRoot() }

    /// Bits per second, or nil without an estimate.
    var upperBound: Double? { estimateKbps.map { ($0 + 3 * deviationKbps) * 1000 } }
    var lowerBound: Double? { estimateKbps.map { max(0, $0 - 3 * deviationKbps) * 1000 } }
    var estimate: Double? { estimateKbps.map { $0 * 1000 } }

    mutating func reset() { estimateKbps = nil }

    mutating func onOveruseDetected(acknowledgedBitrate: Double) { update(acknowledgedBitrate, alpha: 0.05) }

    private mutating func update(_ sample: Double, alpha: Double) {
        let sampleKbps = sample / 1000
        let estimate = estimateKbps.map { (1 - alpha) * $0 + alpha * sampleKbps } ?? sampleKbps
        estimateKbps = estimate
        // Normalize the variance by the estimate so it is comparable across rates.
        let error = estimate - sampleKbps
        deviationVariance = (1 - alpha) * deviationVariance + alpha * error * error / max(estimate, 1)
        deviationVariance = min(max(deviationVariance, 0.4), 2.5)
    }
}
