import RTP
import SeededRandom
import Testing
@testable import RTPMedia

@Suite struct TransportCCRecorderTests {
    let t0 = ContinuousClock.now
    static let wrapMicros: Int64 = (1 << 24) * 64_000

    /// What the sender learns: each feedback through serialize → parse, then per sequence number
    /// the reconstructed arrival time (µs, on the recorder's time base) or nil for "not received".
    struct Decoded {
        var feedbacks: [TransportCCFeedback] = []
        var reports: [(sequence: UInt16, micros: Int64?)] = []
    }

    func decode(_ list: [TransportCCFeedback], maxSize: Int = 1200) throws -> Decoded {
        var out = Decoded()
        for fb in list {
            let bytes = RTCPPacket.transportCC(fb).serialize()
            #expect(bytes.count <= maxSize)
            guard case .transportCC(let back) = try #require(try RTCPPacket.parseCompound(bytes).first) else {
                Issue.record("not a TWCC packet")
                continue
            }
            #expect(back == fb)
            out.feedbacks.append(back)
            var times: [UInt16: Int64] = [:]
            for (s, us) in back.arrivalTimes { times[s] = us }
            out.reports += back.packets.map { ($0.sequence, times[$0.sequence]) }
        }
        return out
    }

    func micros(_ t: ContinuousClock.Instant) -> Int64 {
        let c = (t - t0).components
        return c.seconds * 1_000_000 + c.attoseconds / 1_000_000_000_000
    }

    /// Distance on the 24-bit reference-time circle.
    func close(_ a: Int64, _ b: Int64, within: Int64 = 125) -> Bool {
        var d = (a - b) % Self.wrapMicros
        if d > Self.wrapMicros / 2 { d -= Self.wrapMicros }
        if d < -Self.wrapMicros / 2 { d += Self.wrapMicros }
        return abs(d) <= within
    }

    @Test func roundTripReconstructsArrivalTimesAndLosses() throws {
        var rng = SplitMix64(seed: 3)
        var rec = TransportCCRecorder(senderSSRC: 1, mediaSSRC: 2)
        var now = t0
        var sent: [UInt16: Int64?] = [:]   // seq → arrival µs, nil = lost
        var feedbacks: [TransportCCFeedback] = []
        var seq: UInt16 = 65_400          // wraps during the test
        for i in 0..<2000 {
            let lost = i > 0 && rng.chance(0.1)
            sent.updateValue(lost ? nil : micros(now), forKey: seq)
            if !lost { rec.record(transportSequence: seq, at: now) }
            seq &+= 1
            now += .microseconds(Int64.random(in: 0...3_000, using: &rng))
            feedbacks += rec.poll(at: now)
        }
        // The last packet is received, so every earlier loss is reported.
        rec.record(transportSequence: seq, at: now)
        sent.updateValue(micros(now), forKey: seq)
        now += .milliseconds(50)
        feedbacks += rec.poll(at: now)

        let decoded = try decode(feedbacks)
        #expect(decoded.reports.count == sent.count)   // each number exactly once, in order
        #expect(decoded.feedbacks.map(\.feedbackPacketCount) == (0..<decoded.feedbacks.count).map { UInt8(truncatingIfNeeded: $0) })
        for (s, us) in decoded.reports {
            let expected = try #require(sent[s])
            if let e = expected, let us {
                #expect(close(us, e), "seq \(s): \(us) vs \(e)")
            } else {
                #expect(expected == nil && us == nil, "seq \(s)")
            }
        }
        #expect(decoded.feedbacks.allSatisfy { $0.senderSSRC == 1 && $0.mediaSSRC == 2 })
    }

    @Test func lossesAndSequenceWrap() throws {
        var rec = TransportCCRecorder()
        for (i, s) in [UInt16(65_534), 65_535, 2, 3].enumerated() {
            rec.record(transportSequence: s, at: t0 + .milliseconds(Int64(i)))
        }
        let d = try decode(rec.poll(at: t0 + .milliseconds(50)))
        #expect(d.feedbacks.count == 1 && d.feedbacks.first?.baseSequence == 65_534)
        #expect(d.reports.map(\.sequence) == [65_534, 65_535, 0, 1, 2, 3])
        #expect(d.reports.map { $0.micros == nil } == [false, false, true, true, false, false])
    }

    @Test func referenceTimeWraps() throws {
        var config = TransportCCRecorder.Configuration()
        config.history = .seconds(2_000_000)
        var rec = TransportCCRecorder(configuration: config)
        rec.record(transportSequence: 7, at: t0)
        #expect(rec.poll(at: t0 + .milliseconds(50)).first?.referenceTime == 0)
        // 2^24 · 64 ms later, plus 100 ms: the 24-bit reference time has wrapped to 1.
        let later = t0 + .milliseconds((1 << 24) * 64 + 100)
        rec.record(transportSequence: 8, at: later)
        let d = try decode(rec.poll(at: later + .milliseconds(50)))
        #expect(d.feedbacks.map(\.referenceTime) == [1])
        let us = try #require(d.reports.first?.micros)
        #expect(d.reports.count == 1 && close(us, 100_000))
    }

    @Test func reorderedPacketsWithinAndAcrossFeedbacks() throws {
        var rec = TransportCCRecorder()
        rec.record(transportSequence: 10, at: t0)
        rec.record(transportSequence: 12, at: t0 + .milliseconds(1))
        rec.record(transportSequence: 11, at: t0 + .milliseconds(2))   // negative delta for 12
        rec.record(transportSequence: 14, at: t0 + .milliseconds(3))
        let first = try decode(rec.poll(at: t0 + .milliseconds(50)))
        #expect(first.reports.map(\.sequence) == [10, 11, 12, 13, 14])
        #expect(first.reports.map { $0.micros.map { $0 / 1000 } } == [0, 2, 1, nil, 3])

        // 13 arrives after it was reported lost: the next feedback starts there again.
        rec.record(transportSequence: 13, at: t0 + .milliseconds(60))
        rec.record(transportSequence: 15, at: t0 + .milliseconds(61))
        let second = try decode(rec.poll(at: t0 + .milliseconds(100)))
        #expect(second.feedbacks.first?.baseSequence == 13)
        #expect(second.reports.map(\.sequence) == [13, 14, 15])
        #expect(second.reports.map { $0.micros.map { $0 / 1000 } } == [60, 3, 61])
    }

    /// A delta beyond ±8.19 s does not fit in 16 bits: the next packet starts a new feedback.
    @Test func deltaTooLargeStartsNewFeedback() throws {
        var config = TransportCCRecorder.Configuration()
        config.history = .seconds(60)
        var rec = TransportCCRecorder(configuration: config)
        rec.record(transportSequence: 1, at: t0)
        rec.record(transportSequence: 2, at: t0 + .seconds(9))
        let d = try decode(rec.poll(at: t0 + .seconds(9)))
        #expect(d.feedbacks.map(\.baseSequence) == [1, 2])
        #expect(d.feedbacks.map(\.feedbackPacketCount) == [0, 1])
        let us = try #require(d.reports.last?.micros)
        #expect(close(us, 9_000_000))
    }

    /// Thousands of statuses, most with 2-byte (negative) deltas: split into feedbacks that each
    /// fit the size limit and together cover every number once.
    @Test func manyStatusesSplitBySize() throws {
        var rng = SplitMix64(seed: 9)
        var rec = TransportCCRecorder()
        var order = Array(UInt16(0)..<3000).filter { $0 % 5 != 3 || $0 == 2999 }
        order.shuffle(using: &rng)
        var expected: [UInt16: Int64] = [:]
        for (i, s) in order.enumerated() {
            let at = t0 + .microseconds(Int64(i) * 100)
            rec.record(transportSequence: s, at: at)
            expected[s] = micros(at)
        }
        let d = try decode(rec.poll(at: t0 + .seconds(1)), maxSize: 1200)
        #expect(d.feedbacks.count > 3)
        #expect(d.reports.map(\.sequence) == Array(0..<3000))
        for (s, us) in d.reports {
            if let e = expected[s] { #expect(us.map { close($0, e) } ?? false, "seq \(s)") } else { #expect(us == nil) }
        }
    }

    @Test func duplicatesIgnoredAndCountWraps() throws {
        var rec = TransportCCRecorder()
        var now = t0
        var counts: [UInt8] = []
        for i in 0..<300 {
            rec.record(transportSequence: UInt16(i), at: now)
            rec.record(transportSequence: UInt16(i), at: now + .milliseconds(1))
            now += .milliseconds(50)
            let d = try decode(rec.poll(at: now))
            #expect(d.reports.map(\.sequence) == [UInt16(i)])
            counts += d.feedbacks.map(\.feedbackPacketCount)
        }
        #expect(counts == (0..<300).map { UInt8(truncatingIfNeeded: $0) })
        #expect(rec.statistics.duplicates == 300 && rec.statistics.packetsRecorded == 300)
    }

    @Test func deadlinesFollowTheInterval() {
        var config = TransportCCRecorder.Configuration()
        config.interval = .milliseconds(100)
        var rec = TransportCCRecorder(configuration: config)
        #expect(rec.nextDeadline == nil && rec.poll(at: t0).isEmpty)
        rec.record(transportSequence: 1, at: t0)
        #expect(rec.nextDeadline == t0 + .milliseconds(100))
        #expect(rec.poll(at: t0 + .milliseconds(99)).isEmpty)
        #expect(rec.poll(at: t0 + .milliseconds(100)).count == 1)
        #expect(rec.nextDeadline == nil)                                 // nothing new
        rec.record(transportSequence: 2, at: t0 + .milliseconds(120))
        #expect(rec.nextDeadline == t0 + .milliseconds(200))
        #expect(rec.poll(at: t0 + .milliseconds(150)).isEmpty)
    }

    @Test func veryOldNumbersIgnored() throws {
        var rec = TransportCCRecorder()
        rec.record(transportSequence: 0, at: t0)
        rec.record(transportSequence: 20_000, at: t0 + .milliseconds(1))   // ring starts afresh here
        rec.record(transportSequence: 5, at: t0 + .milliseconds(2))
        #expect(rec.statistics.tooOld == 1)
        let d = try decode(rec.poll(at: t0 + .milliseconds(50)))
        #expect(d.reports.map(\.sequence) == [20_000])
    }

    /// Random sequence numbers at a high rate: the ring never holds more than its size, and every
    /// feedback stays valid and within the size limit.
    @Test func hostileSequenceNumbersStayBounded() throws {
        var config = TransportCCRecorder.Configuration()
        config.maxTrackedPackets = 1024
        var rec = TransportCCRecorder(configuration: config)
        var rng = SplitMix64(seed: 77)
        var now = t0
        var feedbacks = 0
        for i in 0..<50_000 {
            let s: UInt16 = i % 3 == 0 ? UInt16.random(in: 0...UInt16.max, using: &rng) : UInt16(truncatingIfNeeded: i)
            rec.record(transportSequence: s, at: now)
            #expect(rec.trackedPackets <= 1024)
            now += .microseconds(20)
            let list = rec.poll(at: now)
            for fb in list { #expect(fb.packets.count <= 1024) }
            feedbacks += try decode(list).feedbacks.count
        }
        #expect(feedbacks > 0)
    }
}
