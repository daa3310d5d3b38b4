import Testing
import RTP
import SeededRandom
@testable import Relay

/// One player's layer from its estimate (`LayerAllocator`) on a written clock: down at once
/// when the estimate falls or loss sets it (else after a hold), up to the largest layer the estimate carried for `upHold` (each layer on its own hold), padding towards the next layer
/// while probing (above the estimate for its first second), probes that fail back off; and the resend budget.
@Suite struct ViewerAllocationTests {
    let t0 = ContinuousClock.now
    let layers = [LayerAllocator.Layer(ssrc: 1, bitrate: 150_000), .init(ssrc: 2, bitrate: 500_000), .init(ssrc: 3, bitrate: 2_000_000)]

    @Test func withoutAnEstimateTheLargest() {
        let a = Allocator()
        #expect(a.decide(layers: layers, current: nil, estimate: nil, now: t0) == .init(ssrc: 3, padding: 0))
        #expect(a.decide(layers: [], current: nil, estimate: 1_000_000, now: t0) == nil)
    }

    @Test func downAtOnceToWhatFitsWithHeadroomWhenTheEstimateFalls() {
        let a = Allocator()
        // 2.2 Mbit/s carries the high layer (no headroom needed to stay).
        #expect(a.decide(layers: layers, current: 3, estimate: 2_200_000, now: t0)?.ssrc == 3)
        // It falls to 400 kbit/s: the high layer does not fit; mid (500k) does not either; low does.
        #expect(a.decide(layers: layers, current: 3, estimate: 400_000, now: t0)?.ssrc == 1)
        #expect(a.decide(layers: layers, current: 3, estimate: 2_200_000, now: t0)?.ssrc == 3)
        #expect(a.decide(layers: layers, current: 3, estimate: 560_000, now: t0)?.ssrc == 1, "560k × 0.85 < 500k")
        #expect(a.decide(layers: layers, current: 3, estimate: 2_200_000, now: t0)?.ssrc == 3)
        #expect(a.decide(layers: layers, current: 3, estimate: 600_000, now: t0)?.ssrc == 2)
        // A layer that vanished (retired): straight to what fits.
        #expect(a.decide(layers: layers, current: 9, estimate: 1_000_000, now: t0)?.ssrc == 2)
    }

    @Test func anEstimateBelowTheLayerThatDidNotFallWaitsForTheHoldOrLoss() {
        // A player's first REMB (from a part second after its join), or one from before its
        // layer grew: below the layer, yet the link is not full. The next REMB decides.
        let a = Allocator()
        #expect(a.decide(layers: layers, current: 3, estimate: 1_500_000, now: t0)?.ssrc == 3)
        #expect(a.decide(layers: layers, current: 3, estimate: 1_500_000, now: t0 + .seconds(1))?.ssrc == 3)
        #expect(a.decide(layers: layers, current: 3, estimate: 2_800_000, now: t0 + .milliseconds(1500))?.ssrc == 3)
        #expect(a.decide(layers: layers, current: 3, estimate: 1_900_000, now: t0 + .seconds(3))?.ssrc == 2, "fell 32%")
        // The hold ends 2 s on with no REMB that says otherwise.
        let b = Allocator()
        #expect(b.decide(layers: layers, current: 3, estimate: 1_500_000, now: t0)?.ssrc == 3)
        #expect(b.decide(layers: layers, current: 3, estimate: 1_500_000, now: t0 + .milliseconds(1999))?.ssrc == 3)
        #expect(b.decide(layers: layers, current: 3, estimate: 1_500_000, now: t0 + .seconds(2))?.ssrc == 2)
        // Loss setting the estimate is evidence on its own, and so is an estimate under half the layer.
        let c = Allocator()
        #expect(c.decide(layers: layers, current: 3, estimate: 1_100_000, limitedByLoss: true, now: t0)?.ssrc == 2)
        let d = Allocator()
        #expect(d.decide(layers: layers, current: 3, estimate: 1_000_000, now: t0)?.ssrc == 3)
        #expect(d.decide(layers: layers, current: 3, estimate: 999_000, now: t0 + .milliseconds(100))?.ssrc == 2)
    }

    /// A send-side estimate that starts low (a busy receiver spoiled its start probes) while
    /// the link delivers the layer (`carriedShare` of it): no distance below the layer ends
    /// the hold, and it is `carriedHold` long; a fall (the delay detector saw a queue), loss, or
    /// a link that delivers less ends it as before.
    @Test func anEstimateBelowALayerTheLinkDeliversHoldsUntilItFalls() {
        let a = Allocator()
        #expect(a.decide(layers: layers, current: 3, estimate: 900_000, delivered: 2_300_000, now: t0)?.ssrc == 3, "far below")
        for tenth in 1...50 {
            let estimate = 900_000 + tenth * 20_000
            #expect(a.decide(layers: layers, current: 3, estimate: estimate, delivered: 2_300_000, now: t0 + .milliseconds(100 * tenth))?.ssrc == 3)
        }
        #expect(a.decide(layers: layers, current: 3, estimate: 1_800_000, delivered: 2_300_000, now: t0 + .seconds(6))?.ssrc == 2, "fell")
        // Its probes had `carriedHold` to pass the layer.
        let e = Allocator()
        #expect(e.decide(layers: layers, current: 3, estimate: 1_500_000, delivered: 1_700_000, now: t0)?.ssrc == 3, "0.85 of the layer delivered")
        #expect(e.decide(layers: layers, current: 3, estimate: 1_500_000, delivered: 1_700_000, now: t0 + .milliseconds(9999))?.ssrc == 3)
        #expect(e.decide(layers: layers, current: 3, estimate: 1_500_000, delivered: 1_700_000, now: t0 + .seconds(10))?.ssrc == 2)
        let b = Allocator()
        #expect(b.decide(layers: layers, current: 3, estimate: 1_500_000, delivered: 2_300_000, now: t0)?.ssrc == 3)
        #expect(b.decide(layers: layers, current: 3, estimate: 1_500_000, limitedByLoss: true, delivered: 2_300_000, now: t0 + .seconds(1))?.ssrc == 2)
        let c = Allocator()
        #expect(c.decide(layers: layers, current: 3, estimate: 1_500_000, delivered: 1_500_000, now: t0)?.ssrc == 3)
        #expect(c.decide(layers: layers, current: 3, estimate: 1_500_000, delivered: 1_500_000, now: t0 + .seconds(2))?.ssrc == 2,
                "the link delivers less than the layer: the hold ends")
        let d = Allocator()
        #expect(d.decide(layers: layers, current: 3, estimate: 900_000, delivered: 1_500_000, now: t0)?.ssrc == 2, "far below, not delivered")
    }

    /// A transport-cc player that joined on the largest layer behind a narrow link: its
    /// estimator says so before it settles (`CongestionController.linkIsFull`), while a
    /// Chromium publisher's layers are still ramping (the interop run's rates at that moment:
    /// l 281, m 246, h 746 kbit/s). Settled, 358 kbit/s picks m, which then grows past the link
    /// (a second switch and freeze); provisional, it picks the smallest at once.
    @Test func aProvisionalEstimateStepsDownAtOnceToTheSmallest() {
        let ramping = [LayerAllocator.Layer(ssrc: 1, bitrate: 281_000), .init(ssrc: 2, bitrate: 246_000), .init(ssrc: 3, bitrate: 746_000)]
        #expect(Allocator().decide(layers: ramping, current: 3, estimate: 358_000, provisional: true, now: t0)?.ssrc == 1)
        #expect(Allocator().decide(layers: ramping, current: 3, estimate: 358_000, now: t0)?.ssrc == 2)
        // Not under half the layer and not fallen: a settled estimate waits for the hold; a
        // provisional one (the link is full) does not.
        #expect(Allocator().decide(layers: layers, current: 3, estimate: 1_200_000, now: t0)?.ssrc == 3)
        #expect(Allocator().decide(layers: layers, current: 3, estimate: 1_200_000, provisional: true, now: t0)?.ssrc == 1)
        // A layer that fits stays.
        #expect(Allocator().decide(layers: layers, current: 1, estimate: 358_000, provisional: true, now: t0)?.ssrc == 1)
        var e = ViewerEstimate()
        e.sendSide(358_000, settled: false)
        #expect(e.provisional && e.bitrate == 358_000)
        e.sendSide(420_000)
        #expect(!e.provisional)
    }

    @Test func upAfterTheHoldToTheLargestLayerThatFittedAllThatTime() {
        let a = Allocator()
        var current: UInt32 = 1
        var t = t0
        // The estimate carries even the high layer (a probe found a grown link): straight to
        // high after 2 s, not mid first and high after another hold.
        var ups: [(Duration, UInt32)] = []
        for _ in 0..<12 {
            let d = a.decide(layers: layers, current: current, estimate: 3_000_000, now: t)!
            if d.ssrc != current { ups.append((t - t0, d.ssrc)) }
            current = d.ssrc
            t += .milliseconds(500)
        }
        #expect(ups.map(\.1) == [3])
        #expect(ups.map(\.0) == [.seconds(2)])
        // High fitted for part of the hold only: mid, the largest that fitted throughout.
        let m = Allocator()
        #expect(m.decide(layers: layers, current: 1, estimate: 3_000_000, now: t0)?.ssrc == 1)
        #expect(m.decide(layers: layers, current: 1, estimate: 700_000, now: t0 + .seconds(1))?.ssrc == 1)
        #expect(m.decide(layers: layers, current: 1, estimate: 3_000_000, now: t0 + .seconds(2))?.ssrc == 2)
        // A rising estimate (probes passing): mid after its hold, high after its own, which
        // began before the step to mid.
        let r = Allocator()
        #expect(r.decide(layers: layers, current: 1, estimate: 700_000, now: t0)?.ssrc == 1)
        #expect(r.decide(layers: layers, current: 1, estimate: 3_000_000, now: t0 + .milliseconds(500))?.ssrc == 1)
        #expect(r.decide(layers: layers, current: 1, estimate: 3_000_000, now: t0 + .seconds(2))?.ssrc == 2)
        #expect(r.decide(layers: layers, current: 2, estimate: 3_000_000, now: t0 + .milliseconds(2499))?.ssrc == 2)
        #expect(r.decide(layers: layers, current: 2, estimate: 3_000_000, now: t0 + .milliseconds(2500))?.ssrc == 3)
        // A dip below the next layer restarts the hold.
        let b = Allocator()
        #expect(b.decide(layers: layers, current: 1, estimate: 700_000, now: t0)?.ssrc == 1)
        #expect(b.decide(layers: layers, current: 1, estimate: 400_000, now: t0 + .seconds(1))?.ssrc == 1)
        #expect(b.decide(layers: layers, current: 1, estimate: 700_000, now: t0 + .milliseconds(2500))?.ssrc == 1)
        #expect(b.decide(layers: layers, current: 1, estimate: 700_000, now: t0 + .milliseconds(4500))?.ssrc == 2)
    }

    @Test func probesPadTowardsTheNextLayerUpToTheEstimateAfterABurst() {
        let a = Allocator()
        // On low with a 250k estimate: padded to the estimate (100k on top of 150k), for the
        // first second to 1.5 × it (225k), past the receiver's last link capacity so that its
        // AIMD grows by 8% a second again.
        let d = a.decide(layers: layers, current: 1, estimate: 250_000, now: t0)
        #expect(d == .init(ssrc: 1, padding: 100_000, burst: .init(padding: 225_000, until: t0 + .seconds(1))))
        #expect(a.decide(layers: layers, current: 1, estimate: 250_000, now: t0 + .milliseconds(500))?.burst?.padding == 225_000)
        #expect(a.probing && a.probes == 1)
        // The estimate grows: padding follows, up to what mid needs with headroom (588k).
        #expect(a.decide(layers: layers, current: 1, estimate: 400_000, now: t0 + .seconds(1))?.padding == 250_000)
        #expect(a.decide(layers: layers, current: 1, estimate: 580_000, now: t0 + .seconds(2))?.padding == 430_000)
        // Once it carries mid: padding stops, and mid follows the hold.
        #expect(a.decide(layers: layers, current: 1, estimate: 620_000, now: t0 + .seconds(3)) == .init(ssrc: 1, padding: 0))
        #expect(a.decide(layers: layers, current: 1, estimate: 620_000, now: t0 + .seconds(5))?.ssrc == 2)
        #expect(a.failedProbes == 0)
        // At the top layer nothing is probed.
        let top = Allocator()
        #expect(top.decide(layers: layers, current: 3, estimate: 2_100_000, now: t0) == .init(ssrc: 3, padding: 0))
        #expect(!top.probing)
    }

    /// A send-side estimate steps up only as far as the link was seen to carry (`verified`): its
    /// AIMD grows to 1.5 × what is acknowledged with nothing sent to show it, the whole step
    /// between two temporal choices. A choice it fits but the link was not seen to carry is
    /// probed for, padded at most `verifiedStep` over what the link carried.
    @Test func aSendSideEstimateStepsUpOnlyAsFarAsTheLinkWasSeenToCarry() {
        let rungs = [LayerAllocator.Layer(ssrc: 1, bitrate: 70_000), .init(ssrc: 2, bitrate: 105_000), .init(ssrc: 3, bitrate: 165_000)]
        let a = Allocator()
        // 130k fits 2 (105k ≤ 0.85 × 130k); the link carried 80k: padded to 88k, burst too.
        let d = a.decide(layers: rungs, current: 1, estimate: 130_000, delivered: 80_000, verified: 80_000, now: t0)
        #expect(d == .init(ssrc: 1, padding: 18_000, burst: .init(padding: 18_000, until: t0 + .seconds(1))))
        // Past the hold, still not carried: no step up; the padding follows what it carries.
        #expect(a.decide(layers: rungs, current: 1, estimate: 130_000, delivered: 90_000, verified: 90_000,
                         now: t0 + .seconds(2)) == .init(ssrc: 1, padding: 29_000))
        // It carried 125k (105k ≤ 0.85 × 125k): up.
        #expect(a.decide(layers: rungs, current: 1, estimate: 130_000, delivered: 125_000, verified: 125_000,
                         now: t0 + .seconds(3))?.ssrc == 2)
        // A probe's measured rate counts as carried: 3 at once after its hold, no padding first.
        let b = Allocator()
        #expect(b.decide(layers: rungs, current: 1, estimate: 400_000, delivered: 70_000, verified: 390_000, now: t0)?.padding == 0)
        #expect(b.decide(layers: rungs, current: 1, estimate: 400_000, delivered: 70_000, verified: 390_000,
                         now: t0 + .seconds(2))?.ssrc == 3)
        // With REMB (nothing verified) the estimate alone steps up, as before.
        let c = Allocator()
        _ = c.decide(layers: rungs, current: 1, estimate: 130_000, now: t0)
        #expect(c.decide(layers: rungs, current: 1, estimate: 130_000, now: t0 + .seconds(2))?.ssrc == 2)
    }

    @Test func aProbeThatFailsBacksOffDoubling() {
        let a = Allocator()
        #expect(a.decide(layers: layers, current: 1, estimate: 300_000, now: t0)?.padding == 150_000)
        // The link is full: the estimate falls (overuse). The probe ends, the player stays on low;
        // for 2 s it is padded to 0.85 × the estimate (the queue drains, but what the receiver
        // gets does not fall to the layer alone while its detector still sees overuse).
        #expect(a.decide(layers: layers, current: 1, estimate: 240_000, now: t0 + .seconds(1)) == .init(ssrc: 1, padding: 54_000))
        #expect(a.decide(layers: layers, current: 1, estimate: 240_000, now: t0 + .seconds(3)) == .init(ssrc: 1, padding: 0))
        #expect(a.failedProbes == 1 && !a.probing)
        // No new probe before the 5 s backoff.
        #expect(a.decide(layers: layers, current: 1, estimate: 300_000, now: t0 + .seconds(5))?.padding == 0)
        #expect(a.decide(layers: layers, current: 1, estimate: 300_000, now: t0 + .seconds(6))?.padding == 150_000)
        // This one sees the estimate hold for 5 s without rising: failed (stalled), next backoff 10 s.
        #expect(a.decide(layers: layers, current: 1, estimate: 310_000, now: t0 + .seconds(9))?.padding == 160_000)
        #expect(a.decide(layers: layers, current: 1, estimate: 305_000, now: t0 + .seconds(11))?.padding == 109_250)
        #expect(a.failedProbes == 2)
        #expect(a.decide(layers: layers, current: 1, estimate: 300_000, now: t0 + .seconds(20))?.padding == 0)
        #expect(a.decide(layers: layers, current: 1, estimate: 300_000, now: t0 + .seconds(21))?.padding == 150_000)
        #expect(a.probes == 3)
        // After a burst into a full link the estimate falls only a few percent (to 0.85 × what
        // got through): that fails the probe too.
        #expect(a.decide(layers: layers, current: 1, estimate: 290_000, now: t0 + .seconds(22)) == .init(ssrc: 1, padding: 96_500))
        #expect(a.failedProbes == 3)
    }

    /// The backoff is for the link as it was: an estimate past where it was last full (its
    /// estimator's own probe clusters found room) says it has grown, and padding starts at once
    /// — it is what lets that estimate grow on to the next layer (a weak viewer's limit lifted
    /// in a 10 s backoff: back on the high layer 12–14 s later in simulation, 4–7 s now).
    @Test func anEstimatePastWhereTheLinkWasFullProbesWithoutWaitingOutTheBackoff() {
        let a = Allocator()
        _ = a.decide(layers: layers, current: 1, estimate: 300_000, now: t0)
        _ = a.decide(layers: layers, current: 1, estimate: 240_000, now: t0 + .seconds(1))   // failed: full at 300k
        _ = a.decide(layers: layers, current: 1, estimate: 330_000, now: t0 + .seconds(2))
        #expect(a.probes == 1, "330k is not past 1.1 × 300k")
        #expect(a.decide(layers: layers, current: 1, estimate: 331_000, now: t0 + .seconds(3))
                == .init(ssrc: 1, padding: 181_000, burst: .init(padding: 346_500, until: t0 + .seconds(4))))
        #expect(a.probes == 2)
    }

    @Test func aProbeBurstsOnlyPastWhereTheLinkWasFull() {
        let a = Allocator()
        #expect(a.decide(layers: layers, current: 1, estimate: 300_000, now: t0)?.burst != nil)
        // Full at 300k (the probe's peak): the next probes pad to the estimate, and burst once it
        // is over 330k.
        _ = a.decide(layers: layers, current: 1, estimate: 240_000, now: t0 + .seconds(1))
        #expect(a.decide(layers: layers, current: 1, estimate: 300_000, now: t0 + .seconds(6)) == .init(ssrc: 1, padding: 150_000))
        #expect(a.decide(layers: layers, current: 1, estimate: 330_000, now: t0 + .seconds(7)) == .init(ssrc: 1, padding: 180_000))
        #expect(a.decide(layers: layers, current: 1, estimate: 340_000, now: t0 + .seconds(8))
                == .init(ssrc: 1, padding: 190_000, burst: .init(padding: 360_000, until: t0 + .seconds(9))))
        // One burst a probe.
        #expect(a.decide(layers: layers, current: 1, estimate: 400_000, now: t0 + .seconds(10)) == .init(ssrc: 1, padding: 250_000))
        // A step down sets it too: the estimate then over the headroom (mid stops fitting at
        // 450k: full at 529k, bursts from 582k).
        let b = Allocator()
        _ = b.decide(layers: layers, current: 2, estimate: 450_000, limitedByLoss: true, now: t0)
        #expect(b.decide(layers: layers, current: 1, estimate: 580_000, now: t0 + .seconds(5))?.burst == nil)
        #expect(b.decide(layers: layers, current: 1, estimate: 583_000, now: t0 + .seconds(6))?.burst != nil)
        // Where it was full last, not at its highest: the link got worse (a probe fails at 400k),
        // and the next probe bursts from 440k.
        let c = Allocator()
        _ = c.decide(layers: layers, current: 2, estimate: 450_000, limitedByLoss: true, now: t0)
        #expect(c.decide(layers: layers, current: 1, estimate: 400_000, now: t0 + .seconds(5))?.burst == nil)
        _ = c.decide(layers: layers, current: 1, estimate: 380_000, now: t0 + .seconds(6))
        #expect(c.decide(layers: layers, current: 1, estimate: 445_000, now: t0 + .seconds(11))?.burst != nil)
    }

    @Test func aProbeEndsWhenTheLayerStopsFitting() {
        let a = Allocator()
        #expect(a.decide(layers: layers, current: 2, estimate: 700_000, now: t0)?.padding == 200_000)
        #expect(a.decide(layers: layers, current: 2, estimate: 450_000, now: t0 + .seconds(1)) == .init(ssrc: 1, padding: 0))
        #expect(a.failedProbes == 1)
        // After a step down no probe for 5 s, even with room for the next layer's padding.
        #expect(a.decide(layers: layers, current: 1, estimate: 400_000, now: t0 + .seconds(5))?.padding == 0)
        #expect(a.decide(layers: layers, current: 1, estimate: 400_000, now: t0 + .seconds(6))?.padding == 250_000)
        let fresh = Allocator()
        #expect(fresh.decide(layers: layers, current: 3, estimate: 300_000, limitedByLoss: true, now: t0)?.ssrc == 1)
        #expect(fresh.decide(layers: layers, current: 1, estimate: 300_000, now: t0 + .seconds(4))?.padding == 0)
        #expect(fresh.decide(layers: layers, current: 1, estimate: 300_000, now: t0 + .seconds(5))?.padding == 150_000)
    }

    @Test func theResendBudgetRefillsAtTheRateGiven() {
        let b = Budget()
        // 80 kbit/s = 10 kB/s; the bucket holds max(6 kB, 250 ms) = 6 kB to start with.
        var sent = 0
        while b.take(1200, bitrate: 80_000, now: t0) { sent += 1 }
        #expect(sent == 5)
        // 120 ms later: 1.2 kB more.
        #expect(b.take(1200, bitrate: 80_000, now: t0 + .milliseconds(120)))
        #expect(!b.take(1200, bitrate: 80_000, now: t0 + .milliseconds(120)))
        // After a long pause it holds no more than its cap.
        sent = 0
        while b.take(1200, bitrate: 80_000, now: t0 + .seconds(10)) { sent += 1 }
        #expect(sent == 5)
        // At 2 Mbit/s the cap is 250 ms of it (62.5 kB).
        sent = 0
        while b.take(1000, bitrate: 2_000_000, now: t0 + .seconds(20)) { sent += 1 }
        #expect(sent == 62)
    }

    @Test func theEstimateIsTheREMBCappedByLoss() {
        var e = ViewerEstimate()
        var reports = ReportFeed(&e, from: t0)
        func second(packets: Int, lostNow: Int) { reports.second(&e, packets: packets, lostNow: lostNow) }
        #expect(!e.lossy, "no measurement yet")
        second(packets: 100, lostNow: 0)
        #expect(e.bitrate == nil)
        // Before any REMB, heavy loss gives one: what got through of what it was sent (1 Mbit/s).
        second(packets: 100, lostNow: 60)
        #expect(e.bitrate == 400_000)
        #expect(e.limitedByLoss)
        e.remb(3_000_000)
        #expect(e.bitrate == 400_000, "the REMB does not lift it at once")
        #expect(e.limitedByLoss)
        second(packets: 100, lostNow: 0)
        #expect(e.bitrate == 433_000)
        e.remb(400_000)
        #expect(e.lossCap == nil, "gone once the REMB is below it")
        #expect(!e.limitedByLoss)
        e.remb(400_000)
        #expect(e.bitrate == 400_000)
        // The REMB is taken as it comes, up as well as down.
        e.remb(3_000_000)
        #expect(e.bitrate == 3_000_000)
        e.remb(400_000)
        // A few percent lost says nothing.
        second(packets: 100, lostNow: 5)
        #expect(e.bitrate == 400_000)
        #expect(!e.lossy)
        // Heavy loss (25%) cuts below the REMB: estimate × (1 − loss/2).
        second(packets: 100, lostNow: 25)
        #expect(e.bitrate == 350_000)
        #expect(!e.lossy, "one lossy measurement may be a burst")
        e.remb(500_000)
        #expect(e.bitrate == 350_000, "capped until loss stops")
        second(packets: 100, lostNow: 5)
        #expect(e.bitrate == 350_000, "held at a few percent")
        // Loss gone: the cap grows 8% a measurement and goes once above the REMB.
        var seen: [Int] = []
        for _ in 0..<6 {
            second(packets: 100, lostNow: 0)
            seen.append(e.bitrate ?? 0)
        }
        #expect(seen == [379_000, 410_320, 444_145, 480_676, 500_000, 500_000], "\(seen)")
        #expect(e.lossCap == nil)
    }

    /// A transport-cc player: heavy loss before its send-side estimate settles caps it (it joined
    /// on the largest layer); once the send-side estimate comes it is taken alone — its estimator
    /// runs the loss rule on the feedback itself, and a report cap growing 8% a measurement held
    /// a weak viewer low long after its probes found the link lifted.
    @Test func aSendSideEstimateIsTakenAloneOnceItComes() {
        var e = ViewerEstimate()
        var reports = ReportFeed(&e, from: t0)
        func second(packets: Int, lostNow: Int) { reports.second(&e, packets: packets, lostNow: lostNow) }
        second(packets: 100, lostNow: 70)
        #expect(e.bitrate == 300_000, "before an estimate, heavy loss gives one")
        #expect(e.limitedByLoss)
        e.sendSide(450_000)   // settled: what the feedback says the link carries now
        #expect(e.bitrate == 450_000)
        #expect(e.lossCap == nil && !e.limitedByLoss)
        second(packets: 100, lostNow: 0)
        e.sendSide(3_900_000)   // a probe passed
        #expect(e.bitrate == 3_900_000, "no report cap crawling up behind it")
        second(packets: 100, lostNow: 30)
        #expect(e.bitrate == 3_900_000, "loss is the estimator's to weigh, from its feedback")
        second(packets: 100, lostNow: 30)
        #expect(e.lossy, "the resend budget still hears of a lossy link")
        e.remb(500_000)
        #expect(e.bitrate == 3_900_000, "a REMB alongside is only shown")
    }

    /// A player whose path was out sends no reports; its first one after counts everything
    /// sent into the outage as lost. That is no measure of its link.
    @Test func anOutageIsNotLoss() {
        var e = ViewerEstimate()
        e.remb(2_000_000)
        e.report(ReceptionReport(ssrc: 1, highestSequence: 100), sending: 1_000_000, now: t0)
        e.report(ReceptionReport(ssrc: 1, highestSequence: 300), sending: 1_000_000, now: t0 + .seconds(1))
        #expect(!e.lossy)
        // 15 s without reports, 3,000 packets lost into it.
        e.report(ReceptionReport(ssrc: 1, cumulativeLost: 3000, highestSequence: 3400), sending: 1_000_000, now: t0 + .seconds(16))
        #expect(e.lossCap == nil && e.bitrate == 2_000_000)
        e.report(ReceptionReport(ssrc: 1, cumulativeLost: 3000, highestSequence: 3600), sending: 1_000_000, now: t0 + .seconds(17))
        #expect(!e.lossy && e.lossCap == nil)
        // The publisher's own outage: its players' reports go on, and the first ones after it
        // count what it sent into the outage (here 300 packets) as lost.
        for second in 18...20 {
            e.report(ReceptionReport(ssrc: 1, cumulativeLost: 3000, highestSequence: 3600), sending: 0, now: t0 + .seconds(second))
        }
        e.publisherResumed(now: t0 + .seconds(20))
        e.report(ReceptionReport(ssrc: 1, cumulativeLost: 3300, highestSequence: 4000), sending: 1_000_000, now: t0 + .milliseconds(20_200))
        e.report(ReceptionReport(ssrc: 1, cumulativeLost: 3300, highestSequence: 4100), sending: 1_000_000, now: t0 + .milliseconds(21_000))
        #expect(e.lossCap == nil && !e.lossy)
        e.report(ReceptionReport(ssrc: 1, cumulativeLost: 3300, highestSequence: 4300), sending: 1_000_000, now: t0 + .seconds(22))
        #expect(e.lossCap == nil && !e.lossy && e.lastLoss == 0)
    }

    /// Chromium sends a receiver report with each NACK: tens a second, each counting as lost
    /// what its resend will recover. At 5% random loss, all recovered, they are no reason to cut.
    @Test func reportsWithEveryNACKAreMeasuredOverASecond() {
        var e = ViewerEstimate()
        e.remb(3_000_000)
        var highest: UInt32 = 0, lost: Int32 = 0, t = t0
        var rng = SplitMix64(seed: 7)
        for _ in 0..<400 {   // 20 s of reports every 50 ms, 12 packets each
            highest += 12
            // Lost in this interval, recovered in the next: the counter steps up and back down.
            let now = (0..<12).filter { _ in Double.random(in: 0..<1, using: &rng) < 0.05 }.count
            lost = Int32(now)
            t = t + .milliseconds(50)
            e.report(ReceptionReport(ssrc: 1, fractionLost: UInt8(min(255, now * 256 / 12)), cumulativeLost: lost,
                                     highestSequence: highest), sending: 1_000_000, now: t)
        }
        #expect(e.lossCap == nil)
        #expect(e.bitrate == 3_000_000)
        // A full queue (a third lost, for good) does cut.
        for _ in 0..<60 {
            highest += 12
            lost += 4
            t = t + .milliseconds(50)
            e.report(ReceptionReport(ssrc: 1, cumulativeLost: lost, highestSequence: highest), sending: 1_000_000, now: t)
        }
        #expect((e.bitrate ?? 0) < 3_000_000)
        #expect(e.lossy, "two lossy measurements in a row")
    }
}

/// The sans-I/O structs behind a reference, so `#expect` can call their mutating methods.
private final class Allocator {
    var allocator = LayerAllocator()
    func decide(layers: [LayerAllocator.Layer], current: UInt32?, estimate: Int?, limitedByLoss: Bool = false,
                provisional: Bool = false, delivered: Int? = nil, verified: Int? = nil,
                now: ContinuousClock.Instant) -> LayerAllocator.Decision? {
        allocator.decide(layers: layers, current: current, estimate: estimate, limitedByLoss: limitedByLoss,
                         provisional: provisional, delivered: delivered, verified: verified, now: now)
    }
    var probing: Bool { allocator.probing }
    var probes: Int { allocator.probes }
    var failedProbes: Int { allocator.failedProbes }
}

private final class Budget {
    var budget = RateBudget()
    func take(_ size: Int, bitrate: Int, now: ContinuousClock.Instant) -> Bool { budget.take(size, bitrate: bitrate, now: now) }
}

/// Receiver reports on a 1 Mbit/s stream as a receiver sends them, a second apart: extended
/// highest sequence and cumulative loss.
struct ReportFeed {
    var highest: UInt32 = 1000, lost: Int32 = 0, t: ContinuousClock.Instant

    init(_ e: inout ViewerEstimate, from start: ContinuousClock.Instant) {
        t = start
        e.report(ReceptionReport(ssrc: 1, highestSequence: highest), sending: 1_000_000, now: t)
    }

    mutating func second(_ e: inout ViewerEstimate, packets: Int, lostNow: Int) {
        highest += UInt32(packets)
        lost += Int32(lostNow)
        t = t + .seconds(1)
        e.report(ReceptionReport(ssrc: 1, cumulativeLost: lost, highestSequence: highest), sending: 1_000_000, now: t)
    }
}
