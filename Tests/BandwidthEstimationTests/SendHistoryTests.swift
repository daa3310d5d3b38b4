import SeededRandom
import Testing
import RTP
@testable import BandwidthEstimation

@Suite struct SendHistoryTests {
    let t0 = Moment(.now)

    /// Sends `count` packets from `first` (wrapping), 1 ms apart, sizes 100 + i.
    func history(first: UInt16, count: Int) -> SendHistory {
        var h = SendHistory()
        for i in 0..<count {
            h.onPacketSent(transportSequence: first &+ UInt16(i), size: 100 + i, at: t0.advanced(by: .milliseconds(i)))
        }
        return h
    }

    func feedback(base: UInt16, deltas: [Int?], reference: UInt32 = 100) -> TransportCCFeedback {
        TransportCCFeedback(senderSSRC: 1, mediaSSRC: 2, baseSequence: base, feedbackPacketCount: 0,
                            referenceTime: reference, receivedDeltas: deltas)
    }

    @Test func matchesAcrossTheSixteenBitWrap() {
        var h = history(first: 65530, count: 16)  // 65530…65535, 0…9
        let results = h.onFeedback(feedback(base: 65533, deltas: Array(repeating: 4, count: 10)))
        #expect(results.count == 10)
        #expect(results.map(\.transportSequence) == Array(65533...65542))
        #expect(results.map(\.size) == Array(103...112))
        #expect(results.first?.sendTime == t0.advanced(by: .milliseconds(3)))
        #expect(results.last?.sendTime == t0.advanced(by: .milliseconds(12)))
        // Reference 100 × 64 ms, then 1 ms (4 ticks) per packet.
        #expect(results.map(\.arrivalMicroseconds) == (1...10).map { 6_400_000 + Int64($0) * 1000 })
    }

    /// Entries are packed (24 bytes): what goes in comes back out of the feedback's results.
    @Test func probeClustersAndSizesSurviveThePacking() {
        var h = SendHistory()
        h.onPacketSent(transportSequence: 1, size: 1200, at: t0, probeClusterID: 7)
        h.onPacketSent(transportSequence: 2, size: 0, at: t0, probeClusterID: nil)
        h.onPacketSent(transportSequence: 3, size: 70_000, at: t0, probeClusterID: 123_456)   // over a datagram: clamped
        h.onPacketSent(transportSequence: 4, size: -5, at: t0)
        let results = h.onFeedback(feedback(base: 1, deltas: [1, 1, nil, 1]))
        #expect(results.map(\.probeClusterID) == [7, nil, 123_456, nil])
        #expect(results.map(\.size) == [1200, 0, 65535, 0])
        #expect(results.map(\.isReceived) == [true, true, false, true])
        #expect(MemoryLayout<SendHistory.Entry>.stride == 24)
    }

    @Test func duplicateAndReorderedFeedbackIsTolerated() {
        var h = history(first: 10, count: 20)
        let late = h.onFeedback(feedback(base: 20, deltas: [1, 1, 1, 1, 1]))
        let early = h.onFeedback(feedback(base: 10, deltas: [1, 1, 1]))
        #expect(late.map(\.transportSequence) == [20, 21, 22, 23, 24])
        #expect(early.map(\.transportSequence) == [10, 11, 12])
        // The same feedback again reports nothing new.
        #expect(h.onFeedback(feedback(base: 20, deltas: [1, 1, 1, 1, 1])).isEmpty)
        #expect(h.onFeedback(feedback(base: 10, deltas: [1, 1, 1])).isEmpty)
    }

    @Test func lostThenReceivedIsReportedOnceEach() {
        var h = history(first: 0, count: 5)
        let first = h.onFeedback(feedback(base: 0, deltas: [1, nil, nil, 1]))
        #expect(first.map(\.isReceived) == [true, false, false, true])
        // Reported lost again: nothing; then received after all (reordered): one received result.
        #expect(h.onFeedback(feedback(base: 1, deltas: [nil])).isEmpty)
        let second = h.onFeedback(feedback(base: 1, deltas: [2]))
        #expect(second.count == 1 && second[0].transportSequence == 1 && second[0].isReceived)
    }

    @Test func sequenceNumbersNeverSentAreIgnored() {
        var h = history(first: 1000, count: 10)
        #expect(h.onFeedback(feedback(base: 30000, deltas: [1, 2, 3])).isEmpty)
        // Partly overlapping: only the sent ones come back.
        #expect(h.onFeedback(feedback(base: 1005, deltas: Array(repeating: 1, count: 20))).count == 5)
        var empty = SendHistory()
        #expect(empty.onFeedback(feedback(base: 0, deltas: [1, 1])).isEmpty)
    }

    @Test func absurdDeltasAreClampedNotTrapped() {
        var h = history(first: 0, count: 4)
        let results = h.onFeedback(feedback(base: 0, deltas: [Int.max, Int.min, Int.max, 0], reference: 0xFF_FFFF))
        #expect(results.count == 4)
        let base = Int64(0xFF_FFFF) * 64_000
        #expect(results.map(\.arrivalMicroseconds) == [base + 32767 * 250, base - 250, base + 32766 * 250,
                                                        base + 32766 * 250])
    }

    @Test func referenceTimeUnwrapsAcrossItsTwentyFourBits() {
        var h = history(first: 0, count: 2)
        let before = h.onFeedback(feedback(base: 0, deltas: [0], reference: 0xFF_FFFF))
        let after = h.onFeedback(feedback(base: 1, deltas: [0], reference: 0))
        let a = before.first?.arrivalMicroseconds ?? 0
        let b = after.first?.arrivalMicroseconds ?? 0
        #expect(b - a == 64_000)
    }

    @Test func memoryIsBounded() {
        var h = SendHistory()
        for i in 0..<100_000 {
            h.onPacketSent(transportSequence: UInt16(truncatingIfNeeded: i), size: 1200,
                           at: t0.advanced(by: .microseconds(Int64(i) * 100)))
        }
        #expect(h.count <= h.capacity)
        // Old entries age out even at low packet rates: sending checks every 64th packet (the
        // oldest entry is a cold cache line in a relay's fan-out), feedback always.
        var slow = SendHistory(maxAge: .seconds(10))
        for i in 0..<100 { slow.onPacketSent(transportSequence: UInt16(i), size: 10, at: t0.advanced(by: .seconds(i))) }
        #expect(slow.count == 100 - 54)
        #expect(slow.onFeedback(feedback(base: 0, deltas: Array(repeating: 1, count: 80))).isEmpty)
        #expect(slow.count == 11)
    }

    @Test func hostileFeedbackNeverTraps() {
        var rng = SplitMix64(seed: 42)
        var bwe = BandwidthEstimator()
        var t = t0
        var sent: UInt16 = 0
        for round in 0..<2000 {
            t = t.advanced(by: .milliseconds(1))
            for _ in 0..<3 {
                bwe.onPacketSent(transportSequence: sent, size: Int(rng.next() % 1500), at: t)
                sent &+= 1
            }
            let count = Int(rng.next() % (round % 100 == 0 ? 70_000 : 300))
            let deltas: [Int?] = (0..<count).map { _ in
                switch rng.next() % 8 {
                case 0: return nil
                case 1: return Int.max
                case 2: return Int.min
                case 3: return Int(truncatingIfNeeded: rng.next())
                default: return Int(rng.next() % 400) - 100
                }
            }
            let base = rng.next() % 2 == 0 ? sent &- UInt16(truncatingIfNeeded: rng.next() % 200)
                                            : UInt16(truncatingIfNeeded: rng.next())
            let fb = TransportCCFeedback(senderSSRC: 1, mediaSSRC: 2, baseSequence: base,
                                         feedbackPacketCount: UInt8(truncatingIfNeeded: round),
                                         referenceTime: UInt32(truncatingIfNeeded: rng.next()), receivedDeltas: deltas)
            bwe.onTransportFeedback(fb, at: t)
            if round % 25 == 0 { bwe.process(at: t) }
            #expect((30_000...2_500_000).contains(bwe.targetBitrate))
        }
        #expect(bwe.stats.feedbackCount > 100)
    }
}
