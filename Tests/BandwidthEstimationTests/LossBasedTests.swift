import Testing
@testable import BandwidthEstimation

/// The loss-based controller driven by RTCP receiver reports only (no transport-cc), one per
/// second, as a sender without transport-cc sees them.
@Suite struct LossBasedTests {
    let t0 = Moment(.now)

    func run(fractionLost: UInt8, seconds: Int, start: Int = 1_000_000) -> [Int] {
        var bwe = BandwidthEstimator(configuration: .init(startBitrate: start, maxBitrate: 10_000_000))
        var targets = [bwe.targetBitrate]
        for s in 1...seconds {
            let now = t0.advanced(by: .seconds(s))
            bwe.onReceiverReport(fractionLost: fractionLost, rtt: .milliseconds(50), at: now)
            bwe.process(at: now)
            targets.append(bwe.targetBitrate)
        }
        return targets
    }

    @Test func lowLossGrowsEightPercentPerSecond() {
        let targets = run(fractionLost: 2, seconds: 5)  // 0.8%
        for (a, b) in zip(targets.dropFirst(), targets.dropFirst(2)) {
            #expect(Double(b) / Double(a) > 1.07 && Double(b) / Double(a) < 1.09)
        }
        #expect(targets.last ?? 0 > 1_400_000 && targets.last ?? 0 < 1_500_000)
    }

    @Test func moderateLossHolds() {
        let targets = run(fractionLost: 13, seconds: 10)  // 5%
        #expect(targets.allSatisfy { $0 == 1_000_000 })
    }

    @Test func heavyLossBacksOffByHalfTheLoss() {
        let targets = run(fractionLost: 64, seconds: 3)  // 25% → × 0.875 per report
        #expect(targets == [1_000_000, 875_000, 765_625, 669_921])
        #expect(abs(BandwidthEstimator().lossRate) == 0)
    }

    @Test func decreasesAreSpacedAndNeverBelowTheMinimum() {
        var bwe = BandwidthEstimator(configuration: .init(startBitrate: 100_000, minBitrate: 50_000))
        bwe.onReceiverReport(fractionLost: 255, rtt: .milliseconds(100), at: t0)
        #expect(bwe.targetBitrate == 50_195)
        // A second report within 300 ms + RTT does not cut again.
        bwe.onReceiverReport(fractionLost: 255, rtt: nil, at: t0.advanced(by: .milliseconds(200)))
        #expect(bwe.targetBitrate == 50_195)
        bwe.onReceiverReport(fractionLost: 255, rtt: nil, at: t0.advanced(by: .milliseconds(500)))
        #expect(bwe.targetBitrate == 50_000)
        #expect(bwe.lossRate > 0.99)
    }
}

@Suite struct AcknowledgedBitrateTests {
    let t0 = Moment(.now)

    /// 1200-byte packets at `bitrate` for `seconds`, received 20 ms later, fed in order.
    func feed(_ e: inout AcknowledgedBitrateEstimator, bitrate: Int, from: Double, seconds: Double) -> Double {
        let interval = 1200 * 8 / Double(bitrate)
        var t = from
        while t < from + seconds {
            e.update(PacketResult(transportSequence: 0, size: 1200, sendTime: t0 + .secondsClamped(t),
                                  arrivalMicroseconds: Int64((t + 0.02) * 1e6)))
            t += interval
        }
        return t
    }

    @Test func measuresASteadyRateAndFollowsAStepWithinTheWindow() {
        var e = AcknowledgedBitrateEstimator()
        #expect(e.bitrate == nil)
        var t = feed(&e, bitrate: 1_000_000, from: 0, seconds: 2)
        #expect(abs((e.bitrate ?? 0) / 1_000_000 - 1) < 0.02)
        t = feed(&e, bitrate: 400_000, from: t, seconds: 0.55)
        #expect(abs((e.bitrate ?? 0) / 400_000 - 1) < 0.03)
    }

    @Test func oneNetworkStallDoesNotReadAsACollapse() {
        // The sender keeps going; the network holds packets for 100 ms, then delivers them at
        // once. The largest receive gap is discounted, so the rate stays near 1 Mbit/s.
        var e = AcknowledgedBitrateEstimator()
        let interval = 1200 * 8 / 1_000_000.0
        var t = 0.0
        var minimum = Double.infinity
        while t < 2 {
            let stalled = t >= 1.2 && t < 1.3
            let arrival = stalled ? 1.32 : t + 0.02
            e.update(PacketResult(transportSequence: 0, size: 1200, sendTime: t0 + .secondsClamped(t),
                                  arrivalMicroseconds: Int64(arrival * 1e6)))
            if t > 1 { minimum = min(minimum, e.bitrate ?? 0) }
            t += interval
        }
        #expect(minimum > 850_000)
    }
}

/// The controller itself with a delay-based estimate above it (transport-cc, no queue): random
/// loss of a few percent is no reason to stay at the start rate.
@Suite struct LossWithDelayEstimateTests {
    @Test func moderateLossGrowsTowardTheDelayEstimateWhenNoQueueBuilds() {
        let t0 = Moment(.now)
        var loss = LossBasedController(startBitrate: 300_000, minBitrate: 30_000, maxBitrate: 2_500_000)
        loss.delayBasedLimit = 2_000_000
        var rates: [Double] = []
        for s in 1...40 {
            let now = t0.advanced(by: .milliseconds(250 * s))
            loss.onFractionLost(13, at: now)   // 5%
            rates.append(loss.bitrate)
        }
        // In the first 2 s the delay-based estimate (its probes) leads; then +4% a second, capped by it.
        #expect(rates[3] == 2_000_000, "\(rates.prefix(8))")
        loss.delayBasedLimit = 800_000       // a queue: the delay-based side caps it
        loss.update(at: t0.advanced(by: .seconds(11)))
        #expect(loss.bitrate == 800_000)
        loss.onFractionLost(13, at: t0.advanced(by: .seconds(12)))
        #expect(loss.bitrate == 800_000)
    }

    @Test func moderateLossAfterTheStartGrowsFourPercentASecond() {
        let t0 = Moment(.now)
        var loss = LossBasedController(startBitrate: 500_000, minBitrate: 30_000, maxBitrate: 2_500_000)
        loss.onFractionLost(0, at: t0)   // the start phase passes without loss, the rate stays
        loss.delayBasedLimit = 5_000_000
        var last = 0.0
        for s in 3...8 {
            loss.onFractionLost(13, at: t0.advanced(by: .seconds(s)))
            if s > 3 { #expect(loss.bitrate / last > 1.03 && loss.bitrate / last < 1.05, "\(last) → \(loss.bitrate)") }
            last = loss.bitrate
        }
    }
}
