@testable import BandwidthEstimation
import SeededRandom

/// Synthetic one-way traces for the delay pipeline: 1200-byte packets through a bottleneck
/// FIFO of `linkBitrate`, sent at a rate that may change over time, reported in 50 ms batches.
struct DelayTrace {
    /// (from seconds, send bitrate)
    var sendRates: [(at: Double, bps: Int)]
    var linkBitrate: Int
    var seconds: Double
    /// Extra random delay per packet, uniform in [0, jitterMs); arrivals stay in order.
    var jitterMs = 0.0
    /// Extra delay (ms) as a function of the send time (s), e.g. a competing flow's sawtooth.
    var extraDelayMs: @Sendable (Double) -> Double = { _ in 0 }
    var seed: UInt64 = 7

    struct Point {
        var t: Double
        var state: DelayState
        var threshold: Double
        var modifiedTrend: Double
    }

    /// Runs the trace through `DelayBasedEstimator` and samples its state after each batch.
    func run() -> [Point] {
        let t0 = Moment(.now)
        var rng = SplitMix64(seed: seed)
        var estimator = DelayBasedEstimator(startBitrate: 1_000_000, minBitrate: 30_000, maxBitrate: 10_000_000)
        var batch: [PacketResult] = []
        var points: [Point] = []
        var sendMs = 0.0
        var busyUntilMs = 0.0
        var lastArrivalMs = 0.0
        var sequence: Int64 = 0
        var nextBatchMs = 50.0
        while sendMs < seconds * 1000 {
            let rate = sendRates.last { $0.at * 1000 <= sendMs }?.bps ?? sendRates[0].bps
            let departure = max(sendMs, busyUntilMs) + 1200 * 8 / Double(linkBitrate) * 1000
            busyUntilMs = departure
            let arrival = max(lastArrivalMs, departure + 20 + extraDelayMs(sendMs / 1000) + (jitterMs > 0 ? rng.unit() * jitterMs : 0))
            lastArrivalMs = arrival
            batch.append(PacketResult(transportSequence: sequence, size: 1200,
                                      sendTime: t0 + .microseconds(Int64(sendMs * 1000)),
                                      arrivalMicroseconds: Int64(arrival * 1000)))
            sequence += 1
            sendMs += 1200 * 8 / Double(rate) * 1000
            if sendMs >= nextBatchMs {
                estimator.onPacketResults(batch, acknowledgedBitrate: Double(linkBitrate), probeBitrate: nil,
                                          at: t0 + .milliseconds(Int64(nextBatchMs) + 20))
                batch.removeAll()
                points.append(Point(t: nextBatchMs / 1000, state: estimator.state,
                                    threshold: estimator.detector.threshold,
                                    modifiedTrend: estimator.detector.modifiedTrend))
                nextBatchMs += 50
            }
        }
        return points
    }
}
