import SeededRandom
import Testing
@testable import RTPMedia

@Suite struct NackGeneratorTests {
    let t0 = ContinuousClock.now

    func generator(_ change: (inout NackGenerator.Configuration) -> Void = { _ in }, rtt: Duration = .milliseconds(100)) -> NackGenerator {
        var c = NackGenerator.Configuration()
        change(&c)
        return NackGenerator(configuration: c, rtt: rtt)
    }

    @Test func gapIsNackedAtOnce() {
        var g = generator()
        for s: UInt16 in [1, 2, 5] { g.received(s, at: t0) }
        #expect(g.nextDeadline() == t0)
        #expect(g.poll(at: t0) == [3, 4])
        #expect(g.statistics.nacksSent == 1 && g.statistics.nackedSequences == 2)
        #expect(g.poll(at: t0).isEmpty)
    }

    @Test func retryAfterRTTPlusSlackNotBefore() {
        var g = generator(rtt: .milliseconds(100))   // slack 20 ms
        g.received(1, at: t0)
        g.received(3, at: t0)
        #expect(g.poll(at: t0) == [2])
        #expect(g.nextDeadline() == t0 + .milliseconds(120))
        #expect(g.poll(at: t0 + .milliseconds(119)).isEmpty)
        #expect(g.poll(at: t0 + .milliseconds(120)) == [2])
        g.rtt = .milliseconds(200)
        #expect(g.poll(at: t0 + .milliseconds(339)).isEmpty)
        #expect(g.poll(at: t0 + .milliseconds(340)) == [2])
        #expect(g.statistics.nackedSequences == 3)
    }

    @Test func givesUpAfterMaxRetries() {
        var g = generator({ $0.maxRetries = 3 }, rtt: .milliseconds(10))
        g.received(1, at: t0)
        g.received(3, at: t0)
        var asked = 0
        var now = t0
        for _ in 0..<10 {
            asked += g.poll(at: now).count
            now += .milliseconds(30)
        }
        #expect(asked == 3)
        #expect(g.missingCount == 0 && g.nextDeadline() == nil)
    }

    @Test func givesUpAfterMaxAge() {
        var g = generator({ $0.maxAge = .milliseconds(200) }, rtt: .milliseconds(100))
        g.received(1, at: t0)
        g.received(3, at: t0)
        #expect(g.poll(at: t0) == [2])
        #expect(g.poll(at: t0 + .milliseconds(120)) == [2])
        #expect(g.nextDeadline() == nil)   // the next retry (240 ms) would be past the age limit
        #expect(g.poll(at: t0 + .milliseconds(240)).isEmpty)
        #expect(g.missingCount == 0)
    }

    @Test func lateArrivalClearsAndCountsRetransmissions() {
        var g = generator()
        g.received(1, at: t0)
        g.received(4, at: t0)
        #expect(g.poll(at: t0) == [2, 3])
        #expect(g.wasRequested(2))
        #expect(g.received(2, at: t0 + .milliseconds(50)) == .recovered(requested: true))
        #expect(g.statistics.retransmissionsReceived == 1)
        #expect(g.poll(at: t0 + .milliseconds(120)) == [3])
        #expect(g.received(2, at: t0 + .milliseconds(130)) == .ignored)   // duplicate
        #expect(g.received(0, at: t0 + .milliseconds(130)) == .ignored)   // older than the list
        #expect(g.statistics.retransmissionsReceived == 1)
    }

    /// The answers to first requests give the round trip (smoothed); answers to repeated ones
    /// say nothing (which request was answered?). The requester paces retries by it when it
    /// has no other RTT.
    @Test func answersToFirstRequestsMeasureTheTurnaround() {
        var g = generator()
        #expect(g.turnaround == nil)
        g.received(1, at: t0)
        g.received(5, at: t0)
        #expect(g.poll(at: t0) == [2, 3, 4])
        g.received(2, at: t0 + .milliseconds(60))
        #expect(g.turnaround == .milliseconds(60))
        g.received(3, at: t0 + .milliseconds(100))
        #expect(g.turnaround == .milliseconds(65))   // 60 × 7/8 + 100/8
        #expect(g.poll(at: t0 + .milliseconds(120)) == [4])
        g.received(4, at: t0 + .milliseconds(130))   // answered after the second request: ignored
        #expect(g.turnaround == .milliseconds(65))
        var r = NackRequester(senderSSRC: 9)
        #expect(r.turnaround == nil)
        r.received(ssrc: 1, sequenceNumber: 1, at: t0)
        r.received(ssrc: 1, sequenceNumber: 3, at: t0)
        #expect(r.poll(now: t0).count == 1)
        r.received(ssrc: 1, sequenceNumber: 2, at: t0 + .milliseconds(40))
        #expect(r.turnaround == .milliseconds(40))
    }

    @Test func wrapAround() {
        var g = generator()
        for s: UInt16 in [65_533, 65_534, 1] { g.received(s, at: t0) }
        #expect(g.poll(at: t0) == [65_535, 0])
        #expect(g.received(0, at: t0) == .recovered(requested: true))
        #expect(g.received(65_535, at: t0) == .recovered(requested: true))
        #expect(g.highestReceived == 65_537)
        #expect(g.received(2, at: t0) == .newest)
        #expect(g.missingCount == 0)
    }

    /// With a short delay, packets reordered by a few positions are never asked for.
    @Test func reorderingWithinAFewPackets() {
        var g = generator({ $0.delay = .milliseconds(10) })
        var now = t0
        for s: UInt16 in [1, 2, 4, 3, 5, 8, 6, 7, 9] {
            g.received(s, at: now)
            #expect(g.poll(at: now).isEmpty)
            now += .milliseconds(2)
        }
        #expect(g.missingCount == 0 && g.statistics.nackedSequences == 0)

        // Without a delay the same order is fine too when packets come before the poll.
        var h = generator()
        for s: UInt16 in [1, 3, 2] { h.received(s, at: t0) }
        #expect(h.poll(at: t0).isEmpty)
        // A gap older than the delay is asked for.
        g.received(11, at: now)
        #expect(g.nextDeadline() == now + .milliseconds(10))
        #expect(g.poll(at: now + .milliseconds(9)).isEmpty)
        #expect(g.poll(at: now + .milliseconds(10)) == [10])
    }

    @Test func tooWideGapOrListAsksForKeyframe() {
        var g = generator({ $0.maxGap = 100; $0.maxListSize = 150 })
        g.received(1, at: t0)
        #expect(g.received(102, at: t0) == .newest)            // 100 missing: still NACKed
        #expect(g.missingCount == 100)
        #expect(g.received(203, at: t0) == .keyframeNeeded)    // would track 200 > 150
        #expect(g.missingCount == 0)
        #expect(g.received(305, at: t0) == .keyframeNeeded)    // 101 in one gap
        #expect(g.statistics.keyframesNeeded == 2)
        #expect(g.poll(at: t0).isEmpty)
        #expect(g.received(306, at: t0) == .newest)
    }

    /// A gap of 10 or more that opens after the stream was silent for maxAge (an outage): its
    /// packets went into the outage, too long ago to ask for. A pause leaves no gap, and a slow
    /// stream that lost the start of its next frame a small one: both as before.
    @Test func aGapAfterASilenceAsksForAKeyframe() {
        var g = generator()   // maxAge 1 s
        g.received(1, at: t0)
        #expect(g.received(2, at: t0 + .milliseconds(1500)) == .newest)              // a pause, nothing lost
        #expect(g.received(5, at: t0 + .milliseconds(3000)) == .newest)              // 2 lost after 1.5 s: NACKed
        #expect(g.received(40, at: t0 + .milliseconds(3900)) == .newest)             // 0.9 s: NACKed
        #expect(g.missingCount == 2 + 34)
        #expect(g.received(140, at: t0 + .milliseconds(4900)) == .keyframeNeeded)    // 1 s silent, then 99 lost
        #expect(g.missingCount == 0 && g.poll(at: t0 + .milliseconds(4900)).isEmpty)
        #expect(g.received(141, at: t0 + .milliseconds(4910)) == .newest)
    }

    @Test func forgetAndReset() {
        var g = generator()
        g.received(extended: 10, at: t0)
        g.received(extended: 20, at: t0)
        g.forget(below: 15)
        #expect(g.poll(at: t0) == [15, 16, 17, 18, 19])
        #expect(g.isMissing(extended: 17) && !g.isMissing(extended: 12))
        g.reset()
        #expect(g.missingCount == 0 && g.highestReceived == nil)
        #expect(g.statistics.nackedSequences == 5)
        g.received(500, at: t0)
        #expect(g.highestReceived == 500)
    }

    /// Random sequence numbers: the list never exceeds its cap, and nothing traps.
    @Test func hostileSequenceNumbersStayBounded() {
        var g = generator()
        var rng = SplitMix64(seed: 5)
        var now = t0
        for _ in 0..<20_000 {
            g.received(UInt16.random(in: 0...UInt16.max, using: &rng), at: now)
            #expect(g.missingCount <= 1000)
            for s in g.poll(at: now) { _ = s }
            now += .milliseconds(1)
        }
    }
}
