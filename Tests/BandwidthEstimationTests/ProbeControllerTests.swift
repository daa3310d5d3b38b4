import Testing
@testable import BandwidthEstimation

/// When the probe controller probes on its own (fake clock, the estimate held).
@Suite struct ProbeControllerTests {
    let t0 = Moment(.now)

    /// Times (seconds from start) of the periodic probes between 3 s and `until` s, the estimate
    /// held at `estimate`, processed every 25 ms as the congestion controller does.
    func periodicProbes(estimate: Double, wanted: Double?, until: Double = 21) -> [Double] {
        var c = ProbeController(enabled: true, periodicInterval: .seconds(5))
        c.wanted = wanted
        _ = c.start(startBitrate: 300_000, maxBitrate: 5_000_000, at: t0)
        var times: [Double] = []
        for tick in 1...Int(until * 40) {
            let t = Double(tick) / 40
            let now = t0 + .milliseconds(tick * 25)
            let clusters = c.process(estimate: estimate, maxBitrate: 5_000_000, state: .normal, allowPeriodic: true, at: now)
            if t >= 3, !clusters.isEmpty {
                #expect(clusters.map(\.bitrate) == [Int(2 * estimate)])
                times.append(t)
            }
        }
        return times
    }

    @Test func probesEveryFiveSecondsWhenTheSenderHasWhatItWants() {
        let times = periodicProbes(estimate: 400_000, wanted: nil)
        #expect(zip(times, times.dropFirst()).allSatisfy { abs($1 - $0 - 5) < 0.05 } && times.count == 3, "\(times)")
        // Wanting no more than the estimate gives is the same.
        #expect(periodicProbes(estimate: 400_000, wanted: 400_000) == times)
    }

    /// A relay's player below the layer it asked for: its link may grow at any moment, and the
    /// next probe is what finds out.
    @Test func probesEveryTwoSecondsWhileTheSenderWantsMore() {
        let times = periodicProbes(estimate: 400_000, wanted: 1_750_000)
        #expect(zip(times, times.dropFirst()).allSatisfy { abs($1 - $0 - 2) < 0.05 } && times.count >= 8, "\(times)")
    }
}
