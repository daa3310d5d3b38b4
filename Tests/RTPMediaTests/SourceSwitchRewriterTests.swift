import Testing
@testable import RTPMedia

@Suite struct SourceSwitchRewriterTests {
    let t0 = ContinuousClock.now

    @Test func passesTheFirstSourceThroughUnchanged() {
        var r = SourceSwitchRewriter()
        for i in 0..<10 {
            let out = r.rewrite(ssrc: 1, sequenceNumber: 65530 &+ UInt16(i), timestamp: 1000 + UInt32(i) * 3000,
                                clockRate: 90000, now: t0.advanced(by: .milliseconds(33 * i)))
            #expect(out?.sequenceNumber == 65530 &+ UInt16(i) && out?.timestamp == 1000 + UInt32(i) * 3000)
        }
        #expect(r.switches == 0)
    }

    /// A new publisher at a random sequence/timestamp continues the output one past the last
    /// packet, its timestamp advanced by the 500 ms that passed (45,000 ticks at 90 kHz).
    @Test func aNewSourceContinuesTheOutput() throws {
        var r = SourceSwitchRewriter()
        _ = r.rewrite(ssrc: 1, sequenceNumber: 100, timestamp: 5000, clockRate: 90000, now: t0)
        _ = r.rewrite(ssrc: 1, sequenceNumber: 101, timestamp: 8000, clockRate: 90000, now: t0.advanced(by: .milliseconds(33)))
        let first = r.rewrite(ssrc: 2, sequenceNumber: 40000, timestamp: 4_000_000_000, clockRate: 90000,
                              now: t0.advanced(by: .milliseconds(533)))
        let (seq, ts) = try #require(first)
        #expect(seq == 102)
        #expect(ts == UInt32(8000 + 45000))
        let next = r.rewrite(ssrc: 2, sequenceNumber: 40001, timestamp: 4_000_003_000, clockRate: 90000,
                             now: t0.advanced(by: .milliseconds(566)))
        #expect(next?.sequenceNumber == 103 && next?.timestamp == 8000 + 45000 + 3000)
        // A reordered packet of the new source from before its first would reuse the old
        // source's 101: dropped. One after it maps with the same delta.
        #expect(r.rewrite(ssrc: 2, sequenceNumber: 39999, timestamp: 3_999_997_000, clockRate: 90000,
                          now: t0.advanced(by: .milliseconds(570))) == nil)
        let reordered = r.rewrite(ssrc: 2, sequenceNumber: 40003, timestamp: 4_000_009_000, clockRate: 90000,
                                  now: t0.advanced(by: .milliseconds(600)))
        #expect(reordered?.sequenceNumber == 105)
        #expect(r.switches == 1)
        #expect(r.sourceSequence(forOutput: 103) == 40001)
    }

    @Test func continuityAcrossTheWrap() {
        var r = SourceSwitchRewriter()
        _ = r.rewrite(ssrc: 1, sequenceNumber: 65535, timestamp: UInt32.max - 10, clockRate: 48000, now: t0)
        let out = r.rewrite(ssrc: 9, sequenceNumber: 7, timestamp: 12, clockRate: 48000, now: t0.advanced(by: .milliseconds(20)))
        #expect(out?.sequenceNumber == 0)
        #expect(out?.timestamp == (UInt32.max - 10) &+ 960)
        #expect(r.sourceSequence(forOutput: 0) == 7)
    }
}
