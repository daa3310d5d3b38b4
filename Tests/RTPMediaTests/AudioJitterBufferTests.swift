import RTP
import SeededRandom
import Testing
@testable import RTPMedia

@Suite struct AudioJitterBufferTests {
    let start = ContinuousClock.now

    func opus(_ i: Int, firstSequence: UInt16 = 100, firstTimestamp: UInt32 = 0xFFFF_F000) -> RTPPacket {
        RTPPacket(payloadType: 111, sequenceNumber: firstSequence &+ UInt16(truncatingIfNeeded: i),
                  timestamp: firstTimestamp &+ UInt32(i) * 960, ssrc: 42, payload: [0x78, UInt8(truncatingIfNeeded: i), 1, 2])
    }

    /// Runs a poll loop every 5 ms until `end`, collecting slots.
    func play(_ jb: inout AudioJitterBuffer, arrivals: [(ContinuousClock.Instant, RTPPacket)],
              until end: ContinuousClock.Instant) -> [(ContinuousClock.Instant, AudioJitterBuffer.Slot)] {
        var pending = arrivals.sorted { $0.0 < $1.0 }
        var slots: [(ContinuousClock.Instant, AudioJitterBuffer.Slot)] = []
        var now = start
        while now <= end {
            while let first = pending.first, first.0 <= now {
                jb.insert(first.1, arrival: first.0)
                pending.removeFirst()
            }
            while let s = jb.pollFrame(now: now) { slots.append((now, s)) }
            now += .milliseconds(5)
        }
        return slots
    }

    @Test func inOrderStreamPlaysEverySlotAfterTheTargetDelay() throws {
        var jb = AudioJitterBuffer()
        let arrivals = (0..<100).map { (start + .milliseconds(20 * $0), opus($0)) }
        let slots = play(&jb, arrivals: arrivals, until: start + .seconds(3))
        let played = slots.prefix(100)
        #expect(played.map { $0.1.payload?[1] } == (0..<100).map { UInt8($0) })
        // First slot plays 60 ms after the first arrival; then one every 20 ms.
        #expect(played.first?.0 == start + .milliseconds(60))
        #expect(played.last?.0 == start + .milliseconds(60 + 99 * 20))
        // Timestamps run on through the 32-bit wrap.
        #expect(played.map(\.1.timestamp) == (0..<100).map { 0xFFFF_F000 &+ UInt32($0) * 960 })
        // After the stream ends, slots keep coming as lost (the decoder conceals).
        #expect(slots.dropFirst(100).allSatisfy { $0.1.isLost })
        #expect(jb.statistics.packetsLate == 0 && jb.statistics.delayIncreases == 0)
    }

    @Test func reorderingAndLossGiveOrderedSlotsWithGaps() {
        var rng = SplitMix64(seed: 8)
        var jb = AudioJitterBuffer()
        var lost: Set<Int> = []
        var arrivals: [(ContinuousClock.Instant, RTPPacket)] = []
        for i in 0..<500 {
            if i > 0 && rng.chance(0.05) { lost.insert(i); continue }
            // 30 ms network delay plus up to 25 ms jitter: packets overtake each other.
            let jitter = Int64.random(in: 0...25, using: &rng)
            arrivals.append((start + .milliseconds(20 * Int64(i) + 30 + (i == 0 ? 0 : jitter)), opus(i)))
        }
        let slots = play(&jb, arrivals: arrivals, until: start + .milliseconds(20 * 500 + 200)).prefix(500)
        #expect(slots.count == 500)
        for (i, (_, slot)) in slots.enumerated() {
            #expect(slot.timestamp == 0xFFFF_F000 &+ UInt32(i) * 960)
            #expect(slot.isLost == lost.contains(i), "slot \(i)")
            if slot.isLost, i + 1 < 500, !lost.contains(i + 1) {
                #expect(slot.nextPayload?[1] == UInt8(truncatingIfNeeded: i + 1), "FEC source for slot \(i)")
            }
        }
        #expect(jb.statistics.packetsLate == 0)
    }

    @Test func latePacketRaisesTheDelayByOneFrame() {
        var jb = AudioJitterBuffer()
        var arrivals = (0..<50).filter { $0 != 20 }.map { (start + .milliseconds(20 * $0), opus($0)) }
        arrivals.append((start + .milliseconds(20 * 20 + 100), opus(20)))  // 100 ms late: its slot is gone
        let slots = play(&jb, arrivals: arrivals, until: start + .milliseconds(20 * 50 + 200))
        #expect(jb.statistics.packetsLate == 1)
        #expect(jb.statistics.delayIncreases == 1)
        #expect(jb.targetDelay == .milliseconds(80))
        // Slot 20 was concealed; one extra concealed slot stretched the playout; every other
        // packet still played, in order.
        let played = slots.compactMap { $0.1.payload?[1] }
        #expect(played == (0..<50).filter { $0 != 20 }.map { UInt8($0) })
        let firstLost = slots.firstIndex { $0.1.isLost }
        #expect(firstLost == 20)
    }

    @Test func steadyEarlyArrivalShrinksTheDelay() {
        var config = AudioJitterBuffer.Configuration()
        config.targetDelay = .milliseconds(120)
        config.shrinkWindow = .seconds(2)
        var jb = AudioJitterBuffer(configuration: config)
        let arrivals = (0..<400).map { (start + .milliseconds(20 * $0), opus($0)) }
        _ = play(&jb, arrivals: arrivals, until: start + .seconds(9))
        #expect(jb.statistics.delayDecreases > 0)
        #expect(jb.targetDelay < .milliseconds(120) && jb.targetDelay >= config.minDelay)
        #expect(jb.statistics.packetsLate == 0)
    }

    @Test("a delay cut plays two slots in one tick and throws no packet away")
    func shrinkingKeepsEveryPacket() {
        var config = AudioJitterBuffer.Configuration()
        config.targetDelay = .milliseconds(120)
        config.shrinkWindow = .seconds(2)
        var jb = AudioJitterBuffer(configuration: config)
        let arrivals = (0..<400).map { (start + .milliseconds(20 * $0), opus($0)) }
        let slots = play(&jb, arrivals: arrivals, until: start + .seconds(9))
        let cuts = jb.statistics.delayDecreases
        #expect(cuts >= 2)
        #expect(slots.filter(\.1.removeOneFrame).count == cuts)
        // Every packet that was due by the end came out, in order, none concealed.
        let played = slots.compactMap { $0.1.payload?[1] }
        #expect(played == (0..<400).map { UInt8(truncatingIfNeeded: $0) })
        let lastPacket = slots.lastIndex { !$0.1.isLost } ?? 0
        #expect(!slots[..<lastPacket].contains { $0.1.isLost })   // concealment only after the stream ended
        // The marked slot and the next one share a tick.
        for (i, s) in slots.enumerated() where s.1.removeOneFrame { #expect(slots[i + 1].0 == s.0) }
    }

    @Test func timestampJumpRestartsPlayout() {
        var jb = AudioJitterBuffer()
        var arrivals = (0..<20).map { (start + .milliseconds(20 * $0), opus($0)) }
        arrivals += (0..<20).map { (start + .milliseconds(400 + 20 * $0), opus($0, firstSequence: 9000, firstTimestamp: 77_000_000)) }
        let slots = play(&jb, arrivals: arrivals, until: start + .seconds(1))
        #expect(jb.statistics.resets == 1)
        #expect(slots.contains { $0.1.timestamp == 77_000_000 && !$0.1.isLost })
        #expect(slots.filter { !$0.1.isLost }.count >= 35)
    }
}
