import Testing
@testable import BandwidthEstimation

/// Estimator + pacer + a 30 fps sender against a simulated bottleneck (see `CallSimulation`):
/// 1200-byte packets, 200 ms drop-tail queue, 20 ms each way, feedback every 50 ms.
/// Numbers in comments are what the current code measures (deterministic).
@Suite struct ClosedLoopTests {
    @Test func convergesOnAOneMegabitLink() {
        var sim = CallSimulation()
        sim.capacity = [(0, 1_000_000)]
        let r = sim.run(seconds: 30)
        // Start bitrate respected until feedback arrives.
        #expect(r.target(at: 0) == 300_000)
        // Probing finds the link within a second (measured 821 kbit/s at 1 s).
        #expect(r.target(at: 1) > 700_000)
        // From 5 s on: a sawtooth around just below the link (measured 822–1049 kbit/s, mean 933).
        let late = r.targets(from: 5, to: 30).map(Double.init)
        #expect(mean(late) <= 1_000_000 && mean(late) >= 880_000)
        #expect(late.max() ?? 0 <= 1_080_000)
        #expect(late.min() ?? 0 >= 780_000)
        // Throughput (measured 937 kbit/s = 94%) and bottleneck queueing (measured p95 40 ms,
        // pacer + queue + propagation p95 64 ms); no packet dropped.
        #expect(r.throughput(from: 10, to: 30) >= 880_000)
        #expect(r.queueDelayP95(from: 5, to: 30) <= 100)
        #expect(r.endToEndP95(from: 5, to: 30) <= 150)
        #expect(r.droppedByQueue == 0)
    }

    /// An encoder that makes less than the target (a simple picture, a small size) on a wide link:
    /// the AIMD stops at 1.5 × what is acknowledged, so only probes can show there is more; the
    /// sender's next size up waits for them.
    @Test func anApplicationLimitedSenderStillFindsTheLink() {
        var sim = CallSimulation()
        sim.capacity = [(0, 800_000), (3, 50_000_000)]
        sim.encoderLimit = [(0, 500_000)]
        sim.bounds = [(0, 30_000, 2_500_000)]
        let r = sim.run(seconds: 25)
        // Measured: 0.90 Mbit/s (1.5 × the 0.5 acknowledged + start probes) until the periodic
        // probe at 6.0 s, 2.5 Mbit/s (the maximum) from 6.1 s on.
        #expect(r.targets(from: 2, to: 6).allSatisfy { $0 <= 1_000_000 })
        let up = r.firstTime(from: 3) { $0 >= 1_500_000 }
        #expect(up != nil && up! - 3 <= 10)
    }

    /// What the link was seen to carry (`verifiedBitrate`) stays with the link while the AIMD
    /// runs past it: an encoder making 80 kbit/s on a 100 kbit/s link. Without probes the AIMD
    /// grows to 1.5 × what is acknowledged (118–130 kbit/s) and only the 80 is verified; a
    /// probe's measured rate, the link's (95–97), counts too.
    @Test func theVerifiedRateIsWhatTheLinkCarriedNotTheAIMDsGrowth() {
        func run(probing: Bool) -> (targets: [Int], verified: [Int]) {
            var sim = CallSimulation()
            sim.capacity = [(0, 100_000)]
            sim.encoderLimit = [(0, 80_000)]
            sim.bounds = [(0, 30_000, 2_500_000)]
            if !probing { sim.estimatorConfiguration.periodicProbeInterval = nil }
            let r = sim.run(seconds: 20)
            return (r.targets(from: 8, to: 20), r.verified.filter { $0.t >= 8 }.map { $0.bps ?? 0 })
        }
        let aimd = run(probing: false)
        #expect(aimd.targets.min()! > 110_000)
        #expect(aimd.verified.allSatisfy { $0 >= 75_000 && $0 <= 85_000 }, "\(aimd.verified.min()!)–\(aimd.verified.max()!)")
        let probed = run(probing: true)
        #expect(probed.verified.allSatisfy { $0 >= 88_000 && $0 <= 105_000 }, "\(probed.verified.min()!)–\(probed.verified.max()!)")
    }

    @Test func followsACapacityStepDownAndBackUp() {
        var sim = CallSimulation()
        sim.capacity = [(0, 2_500_000), (10, 500_000), (25, 2_500_000)]
        let r = sim.run(seconds: 40)
        #expect(r.targets(from: 2, to: 10).allSatisfy { $0 >= 2_300_000 })
        // Down: ≤ 1.1 × the new capacity 0.6 s after the step (measured); 2 s asserted.
        let down = r.firstTime(from: 10) { $0 <= 550_000 }
        #expect(down != nil && down! - 10 <= 2)
        // While at 500 kbit/s (measured mean 434 kbit/s, 295–544k, queue p95 81 ms of the 200 ms buffer).
        let low = r.targets(from: 12, to: 25).map(Double.init)
        #expect(mean(low) <= 520_000 && mean(low) >= 380_000)
        #expect(r.queueDelayP95(from: 12, to: 25) <= 250)
        // Up: periodic probing finds the capacity again (measured ≥ 2 Mbit/s 1.3 s after the step,
        // 2.50 Mbit/s throughput over 33–40 s).
        let up = r.firstTime(from: 25) { $0 >= 2_000_000 }
        #expect(up != nil && up! - 25 <= 10)
        #expect(r.throughput(from: 33, to: 40) >= 0.8 * 2_500_000)
    }

    /// The step again with an encoder that makes 700 kbit/s (a simple picture): only probes can
    /// show the link came back, and the sender's larger sizes wait for them. After the drop they
    /// come every 2 s, not 5: whenever the link comes back, ≥ 2 Mbit/s within 1.5 s (measured
    /// 0.5–1.5 s; every 5 s it took up to 4.8 s), for ~7% of the narrow spell's mean (measured
    /// 438 kbit/s, was 470; queue p95 67 ms, was 82).
    @Test(arguments: [25.0, 26, 27, 28, 29])
    func anApplicationLimitedSenderFindsTheLinkBackAfterANarrowSpell(backAt: Double) {
        var sim = CallSimulation()
        sim.capacity = [(0, 2_500_000), (10, 500_000), (backAt, 2_500_000)]
        sim.encoderLimit = [(0, 700_000)]
        sim.bounds = [(0, 30_000, 2_500_000)]
        let r = sim.run(seconds: backAt + 10)
        let up = r.firstTime(from: backAt) { $0 >= 2_000_000 }
        #expect(up != nil && up! - backAt <= 1.5, "\(up.map { $0 - backAt } ?? -1) s")
        let low = r.targets(from: 12, to: backAt).map(Double.init)
        #expect(mean(low) >= 400_000 && mean(low) <= 520_000)
        #expect(r.queueDelayP95(from: 12, to: backAt) <= 100)
    }

    /// Loopback, start 1 Mbit/s as PeerConnection starts: the receiver reads nothing for the
    /// first 10 ms, so the one start cluster (2.5 Mbit/s, 15 ms) arrives as a batch and gives no
    /// result. Without a second try the estimate crept up at 8%/s (measured 1.11 Mbit/s at 1.5 s).
    @Test func aSpoiledStartProbeIsRepeated() {
        func run(stalls: [(from: Double, to: Double)]) -> CallSimulation.Result {
            var sim = CallSimulation()
            sim.capacity = [(0, 50_000_000)]
            sim.propagation = .milliseconds(1)
            sim.returnDelay = .milliseconds(1)
            sim.estimatorConfiguration.startBitrate = 1_000_000
            sim.receiveStalls = stalls
            return sim.run(seconds: 3)
        }
        let spoiled = run(stalls: [(0, 0.010)])
        #expect(spoiled.target(at: 0.9) < 1_200_000)
        #expect(spoiled.probeLog.map(\.t) == [0, 1])
        #expect(spoiled.targets(from: 1.5, to: 3).allSatisfy { $0 >= 2_300_000 })
        // Read late rather than not at all: a 1.1 Mbit/s "bottleneck" (measured), also retried.
        let slow = run(stalls: [(0.005, 0.030)])
        #expect(slow.probeLog.count == 2 && slow.target(at: 1.5) >= 2_300_000)
        // A probe that went through is not repeated.
        let clean = run(stalls: [])
        #expect(clean.probeLog.count == 1 && clean.target(at: 0.5) >= 2_300_000)
    }

    @Test func randomLossDoesNotCollapseTheRate() {
        var sim = CallSimulation()
        sim.capacity = [(0, 2_500_000)]
        sim.lossRate = 0.05
        let r = sim.run(seconds: 30)
        // 5% is in the 2–10% hold band: the rate stays where probing put it (measured 2424 kbit/s).
        #expect(r.targets(from: 3, to: 30).allSatisfy { Double($0) >= 0.7 * 2_500_000 })
        #expect(r.finalStats.map { $0.lossRate > 0.02 && $0.lossRate < 0.1 } == true)
    }

    @Test func heavyLossBacksOff() {
        var sim = CallSimulation()
        sim.capacity = [(0, 2_500_000)]
        sim.lossRate = 0.25
        let r = sim.run(seconds: 20)
        // 25% loss → × 0.875 per loss report (1 s); probes no longer raise it (measured 2.48 Mbit/s
        // at 1 s before any loss report, 186 kbit/s at 20 s).
        #expect(r.target(at: 20) < 300_000)
    }

    @Test func rembIsAnUpperBound() {
        var sim = CallSimulation()
        sim.capacity = [(0, 2_500_000)]
        sim.rembs = [(5, 600_000), (15, 1_500_000)]
        let r = sim.run(seconds: 25)
        #expect(r.target(at: 4.9) >= 2_300_000)
        #expect(r.targets(from: 5, to: 15).allSatisfy { $0 <= 600_000 })
        #expect(r.targets(from: 15, to: 25).allSatisfy { $0 <= 1_500_000 })
        // Raised again: probing reaches the new cap at 15.2 s; the jump reads as overuse at 15.4 s
        // (back to 977 kbit/s, 0.85 × an acknowledged rate that still includes 600k), and the
        // next periodic probe restores 1.5 Mbit/s at 20.2 s (all measured).
        #expect(r.targets(from: 15, to: 15.4).contains(1_500_000))
        #expect(r.targets(from: 21, to: 25).allSatisfy { $0 >= 1_400_000 })
        #expect(r.finalStats?.rembBitrate == 1_500_000)
    }

    @Test func boundsAreHonoured() {
        // A 5 Mbit/s link with max 1 Mbit/s; at 10 s the sender's parameters change to 200–700k.
        var sim = CallSimulation()
        sim.capacity = [(0, 5_000_000)]
        sim.estimatorConfiguration = .init(startBitrate: 400_000, minBitrate: 100_000, maxBitrate: 1_000_000)
        sim.bounds = [(10, 200_000, 700_000)]
        let r = sim.run(seconds: 20)
        #expect(r.target(at: 0) == 400_000)
        #expect(r.targets(from: 0, to: 10).allSatisfy { $0 <= 1_000_000 })
        #expect(r.target(at: 9) == 1_000_000)
        #expect(r.targets(from: 10, to: 20).allSatisfy { $0 <= 700_000 && $0 >= 200_000 })

        // A 150 kbit/s link with min 300 kbit/s: the target never goes below the minimum.
        var slow = CallSimulation()
        slow.capacity = [(0, 150_000)]
        slow.estimatorConfiguration = .init(startBitrate: 500_000, minBitrate: 300_000)
        let s = slow.run(seconds: 10)
        #expect(s.targets.allSatisfy { $0.bps >= 300_000 })
    }

    @Test func availableBitrateShowsAnEstimateBelowTheMinimum() {
        var bwe = BandwidthEstimator(configuration: .init(minBitrate: 30_000))
        bwe.onREMB(bitrate: 10_000, at: Moment(.now))
        #expect(bwe.targetBitrate == 30_000)
        #expect(bwe.availableOutgoingBitrate == 10_000)
        #expect(bwe.stats.availableOutgoingBitrate == 10_000)
    }

    @Test func withoutProbingRampsAtEightPercentPerSecond() {
        var sim = CallSimulation()
        sim.capacity = [(0, 1_000_000)]
        sim.estimatorConfiguration.probing = false
        let r = sim.run(seconds: 30)
        #expect(r.probeClusters == 0 && r.paddingBytes == 0)
        // 300 → 1000 kbit/s at ~8%/s takes ~16 s (measured 15.8 s), then the same sawtooth.
        let reached = r.firstTime { $0 >= 1_000_000 }
        #expect(reached != nil && reached! > 12 && reached! < 20)
        #expect(r.throughput(from: 20, to: 30) >= 850_000)
    }

    /// Issue 20 part 1: start into a 500 kbit/s uplink whose FIFO holds 25 packets (480 ms of
    /// 1200-byte packets at that rate). From the 300 kbit/s start the probes (900 kbit/s and
    /// 1.8 Mbit/s, 15 ms each) fit in the queue and find the link without a drop; a 1 Mbit/s
    /// start (what PeerConnection used before) overshoots it until the delay side catches up.
    @Test func startsIntoANarrowUplinkWithoutOverflowingItsQueue() {
        func run(start: Int) -> CallSimulation.Result {
            var sim = CallSimulation()
            sim.capacity = [(0, 500_000)]
            sim.queueLimit = .milliseconds(480)
            sim.estimatorConfiguration.startBitrate = start
            return sim.run(seconds: 15)
        }
        let r = run(start: 300_000)
        print("500 kbit/s from 300k: dropped \(r.droppedByQueue), probes \(r.probeLog), target at 1/2/5 s "
              + "\(r.target(at: 1))/\(r.target(at: 2))/\(r.target(at: 5)), queue p95 \(r.queueDelayP95(from: 0, to: 15)) ms, "
              + "throughput 2–15 s \(r.throughput(from: 2, to: 15))")
        #expect(r.droppedByQueue == 0)
        #expect(r.targets(from: 0, to: 15).allSatisfy { $0 <= 600_000 }, "no overshoot past 1.2 × the link")
        #expect(r.throughput(from: 2, to: 15) >= 400_000)
        let cold = run(start: 1_000_000)
        print("500 kbit/s from 1M: dropped \(cold.droppedByQueue), queue p95 \(cold.queueDelayP95(from: 0, to: 15)) ms")
        #expect(cold.droppedByQueue > r.droppedByQueue)
    }

    /// The start above, with the far end reading late once in the first 0.2 s (a loaded host, or
    /// an emulator whose timer slipped: CI's run measured 848 kbit/s from the 900 kbit/s probe and
    /// dropped 4% at the FIFO). What waited is stamped as one batch, the span from the cluster's
    /// first packet is too short, and the probe read the link as its own rate: before the fix up to
    /// 1.8 Mbit/s and 104 packets dropped on this grid. Measuring after the held batch: no drops,
    /// at most 652 kbit/s (a first packet held in the previous cluster's batch still hides under
    /// the queue's growth).
    @Test func aProbeStampedInABatchDoesNotOvershootANarrowUplink() {
        var worst = (target: 0, dropped: 0, stall: "")
        for from in stride(from: 0.0, through: 0.1, by: 0.01) {
            for length in [0.02, 0.04, 0.06, 0.1] {
                var sim = CallSimulation()
                sim.capacity = [(0, 500_000)]
                sim.queueLimit = .milliseconds(480)
                sim.estimatorConfiguration.startBitrate = 300_000
                sim.receiveStalls = [(from, from + length)]
                let r = sim.run(seconds: 6)
                let top = r.targets(from: 0, to: 6).max() ?? 0
                if top > worst.target { worst.target = top; worst.stall = "\(from)+\(length) s" }
                worst.dropped = max(worst.dropped, r.droppedByQueue)
                #expect(r.droppedByQueue == 0, "stall \(from)+\(length) s")
                #expect(top <= 700_000, "stall \(from)+\(length) s")
            }
        }
        print("batch-stamped start probes: highest target \(worst.target) (stall \(worst.stall)), most dropped \(worst.dropped)")
    }

    /// Issue 20 part 1: after a loss-based cut the rate comes back when the loss stops. 2.5 Mbit/s
    /// link, 30 % random loss from 5 s to 10 s, then clean. Measured: down to 1.04 Mbit/s; 1.2 s
    /// after the loss ends a probe finds the link (2.5 Mbit/s), the overuse that follows sets
    /// 1.72 Mbit/s, and from there the 8 %/s growth is back at 2.5 Mbit/s by ~16.5 s.
    @Test func recoversQuicklyAfterALossBasedCut() {
        var sim = CallSimulation()
        sim.capacity = [(0, 2_500_000)]
        sim.lossChanges = [(5, 0.3), (10, 0)]
        let r = sim.run(seconds: 25)
        let cut = r.targets(from: 10, to: 12).min() ?? 0
        let back = r.firstTime(from: 10) { $0 >= 2_000_000 }
        print("loss cut: \(r.target(at: 4.9)) before, lowest \(cut), back at 2 Mbit/s \(back.map { $0 - 10 } ?? -1) s after the loss ended")
        #expect(cut < 1_500_000, "the loss cut the rate")
        #expect(back != nil && back! - 10 <= 2)
        #expect(r.targets(from: 12, to: 25).allSatisfy { $0 >= 1_500_000 })
        #expect(r.targets(from: 18, to: 25).allSatisfy { $0 >= 2_300_000 })
    }

    /// Issue 20 part 4: a starved CPU is not congestion. 2.5 Mbit/s link; from 5 s to 25 s the
    /// sender's loop stalls 150 ms in every 250 ms (feedback read late, sends bunched after each
    /// stall) and the receiver reads nothing for 150 ms in every 250 ms (arrivals bunched), then
    /// the CPU is back. Measured: the target stays ≥ 1.55 Mbit/s (mean 1.93) while starved — the
    /// burst grouping (InterArrival) takes the bunches for what they are — and is at 2.5 Mbit/s
    /// 2 s after. (60 ms stalls: ≥ 1.74, mean 2.14.)
    @Test func cpuStarvationIsNotReadAsCongestion() {
        func stalls(offset: Double) -> [(from: Double, to: Double)] {
            stride(from: 5.0, to: 25.0, by: 0.25).map { ($0 + offset, $0 + offset + 0.15) }
        }
        var sim = CallSimulation()
        sim.capacity = [(0, 2_500_000)]
        sim.sendStalls = stalls(offset: 0)
        sim.receiveStalls = stalls(offset: 0.12)
        let r = sim.run(seconds: 35)
        let starved = r.targets(from: 5, to: 25)
        print("CPU starvation: target min \(starved.min() ?? 0) mean \(Int(mean(starved.map(Double.init)))) during, "
              + "at 27/30/35 s \(r.target(at: 27))/\(r.target(at: 30))/\(r.target(at: 34.9)), dropped \(r.droppedByQueue)")
        #expect(Double(starved.min() ?? 0) >= 0.5 * 2_500_000)
        #expect(r.targets(from: 28, to: 35).allSatisfy { $0 >= 2_300_000 })
    }
}
