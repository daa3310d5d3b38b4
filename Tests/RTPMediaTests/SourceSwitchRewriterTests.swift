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

    /// The guard against a new source's reordered packets compares with its first packet by
    /// serial arithmetic, which calls every packet more than half the sequence space past that
    /// first "older": kept for the whole stream, it dropped a player's video 32,768 packets after
    /// a publisher takeover or layer switch (~3 minutes of 720p) for the next 32,768.
    @Test("a stream goes on through the whole sequence space after a switch, and after a player's first packet")
    func theFirstPacketsGuardEnds() {
        var r = SourceSwitchRewriter()
        _ = r.rewrite(ssrc: 1, sequenceNumber: 100, timestamp: 5000, clockRate: 90000, now: t0)
        var dropped = 0
        for i in 0..<70_000 {
            let seq = 40000 &+ UInt16(truncatingIfNeeded: i)
            if r.rewrite(ssrc: 2, sequenceNumber: seq, timestamp: UInt32(i) * 3000, clockRate: 90000,
                         now: t0.advanced(by: .milliseconds(i))) == nil { dropped += 1 }
        }
        #expect(dropped == 0)
        // Deep into the stream the guard is gone, and a late packet from just before the switch is
        // only as old as any other.
        var fresh = SourceSwitchRewriter()
        for i in 0..<20_000 {
            _ = fresh.rewrite(ssrc: 1, sequenceNumber: UInt16(i), timestamp: UInt32(i) * 960, clockRate: 48000,
                              now: t0.advanced(by: .milliseconds(20 * i)))
        }
        #expect(fresh.rewrite(ssrc: 1, sequenceNumber: 19_990, timestamp: 19_990 * 960, clockRate: 48000,
                              now: t0.advanced(by: .seconds(400))) != nil)
    }

    /// A player's first packet bounds what can be sent again as well: a reordered packet from
    /// before it (which the player never had) is dropped, and nothing before it maps back to a
    /// source packet (a probe's padding copies recent packets by their output numbers).
    @Test func nothingBeforeAPlayersFirstPacket() {
        var r = SourceSwitchRewriter()
        #expect(r.rewrite(ssrc: 1, sequenceNumber: 500, timestamp: 9000, clockRate: 90000, now: t0)?.sequenceNumber == 500)
        #expect(r.rewrite(ssrc: 1, sequenceNumber: 501, timestamp: 9000, clockRate: 90000, now: t0)?.sequenceNumber == 501)
        #expect(r.rewrite(ssrc: 1, sequenceNumber: 499, timestamp: 6000, clockRate: 90000, now: t0) == nil)
        #expect(r.sourceSequence(forOutput: 501) == 501)
        #expect(r.sourceSequence(forOutput: 500) == 500)
        #expect(r.sourceSequence(forOutput: 499) == nil)
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
