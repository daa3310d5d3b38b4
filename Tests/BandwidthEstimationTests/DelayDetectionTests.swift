import Testing
@testable import BandwidthEstimation

@Suite struct TrendlineFilterTests {
    @Test func constantDelayHasZeroSlope() {
        var filter = TrendlineFilter()
        var slope = 1.0
        for i in 0..<100 { slope = filter.update(delayDeltaMs: 0, arrivalMs: Double(i) * 10) }
        #expect(abs(slope) < 1e-9)
    }

    @Test func growingDelayGivesItsRate() {
        // The queue grows 1 ms every 10 ms: slope 0.1 once the smoothing has caught up.
        var filter = TrendlineFilter()
        var slope = 0.0
        for i in 0..<200 { slope = filter.update(delayDeltaMs: 1, arrivalMs: Double(i) * 10) }
        #expect(abs(slope - 0.1) < 0.005)
    }

    @Test func slopeWaitsForAFullWindow() {
        var filter = TrendlineFilter(windowSize: 20)
        for i in 0..<19 { #expect(filter.update(delayDeltaMs: 1, arrivalMs: Double(i) * 10) == 0) }
        #expect(filter.update(delayDeltaMs: 1, arrivalMs: 190) > 0)
    }
}

@Suite struct OveruseDetectionTests {
    @Test func steadyTraceNeverOveruses() {
        // 960 kbit/s into 2 Mbit/s with 1 ms of jitter for 10 s.
        let points = DelayTrace(sendRates: [(0, 960_000)], linkBitrate: 2_000_000, seconds: 10, jitterMs: 1).run()
        #expect(points.count == 200)
        #expect(!points.contains { $0.state == .overusing })
    }

    @Test func growingQueueIsDetectedQuickly() {
        // 800 kbit/s into 1 Mbit/s for 3 s, then 1.2 Mbit/s: the queue grows 20 ms per 100 ms.
        let points = DelayTrace(sendRates: [(0, 800_000), (3, 1_200_000)], linkBitrate: 1_000_000, seconds: 5).run()
        #expect(!points.contains { $0.t < 3 && $0.state == .overusing })
        let detected = points.first { $0.t >= 3 && $0.state == .overusing }?.t
        #expect(detected != nil)
        // Measured: 0.10 s after the onset (including the 50 ms feedback batching).
        #expect((detected ?? 99) - 3 <= 0.35)
    }

    @Test func drainingQueueReadsAsUnderuse() {
        // 1.5 Mbit/s into 1 Mbit/s for 1 s builds ~500 ms of queue; 500 kbit/s then drains it.
        let points = DelayTrace(sendRates: [(0, 500_000), (2, 1_500_000), (3, 500_000)], linkBitrate: 1_000_000,
                                seconds: 5).run()
        #expect(points.contains { $0.t >= 2 && $0.t < 3.2 && $0.state == .overusing })
        let underuse = points.first { $0.t >= 3 && $0.state == .underusing }?.t
        #expect(underuse != nil)
        #expect((underuse ?? 99) - 3 <= 0.35)  // measured 0.30 s
        // Once empty the queue reads normal again.
        #expect(points.last?.state == .normal)
    }

    @Test func thresholdFollowsTheTrendUpSlowlyAndDownFast() {
        var detector = OveruseDetector()
        // Modified trend = 60 deltas × slope × gain 4 = 20 (slope 1/12), a group every 5 ms.
        var now = 0.0
        for _ in 0..<200 {
            _ = detector.detect(trend: 1.0 / 12, sendDeltaMs: 5, numDeltas: 60, nowMs: now)
            now += 5
        }
        #expect(detector.state == .overusing)
        #expect(detector.threshold > 19 && detector.threshold < 20)
        // k_down is 4.5× k_up: with no trend it is back at the 6 ms floor within 300 ms.
        for _ in 0..<60 {
            _ = detector.detect(trend: 0, sendDeltaMs: 5, numDeltas: 60, nowMs: now)
            now += 5
        }
        #expect(detector.state == .normal)
        #expect(detector.threshold == 6)
        // An outlier more than 15 ms above the threshold does not drag it up.
        _ = detector.detect(trend: 1, sendDeltaMs: 5, numDeltas: 60, nowMs: now + 5)
        #expect(detector.threshold == 6)
    }

    @Test func thresholdRisesOnAnOscillatingQueue() {
        // Quiet path: the threshold decays from 12.5 to its 6 ms floor.
        let quiet = DelayTrace(sendRates: [(0, 500_000)], linkBitrate: 2_000_000, seconds: 10).run()
        #expect(quiet.first?.threshold ?? 0 > 6.5)
        #expect(quiet.last?.threshold == 6)
        // A queue swinging 0–80 ms every 2 s (a competing flow's sawtooth): the threshold
        // climbs to the trend (slope 0.08 → modified trend ≈ 19; measured 20.8) instead of staying at 12.5.
        var swinging = DelayTrace(sendRates: [(0, 1_000_000)], linkBitrate: 4_000_000, seconds: 10)
        swinging.extraDelayMs = { t in
            let phase = t.truncatingRemainder(dividingBy: 2)
            return 40 * (phase < 1 ? phase : 2 - phase) * 2
        }
        let points = swinging.run()
        #expect(points.map(\.threshold).max() ?? 0 > 18)
    }
}
