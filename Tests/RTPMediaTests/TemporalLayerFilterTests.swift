import RTPMedia
import Testing

/// A relay player's temporal layer filter on an L1T3 stream (0 2 1 2 …, two packets a frame):
/// what it sends, with which sequence numbers, and how NACKs map back.
@Suite struct TemporalLayerFilterTests {
    /// Frame i of an L1T3 pattern: its layer and layer sync (TL1 and the first TL2 of a period).
    static func frame(_ i: Int) -> (layer: UInt8, sync: Bool) {
        [(UInt8(0), false), (2, true), (1, true), (2, false)][i % 4]
    }

    /// Runs `frames` frames of `packets` packets from input sequence number `first`; the output
    /// numbers of what was sent, by frame.
    static func run(_ filter: inout TemporalLayerFilter, frames: Range<Int>, packets: Int = 2, first: UInt16 = 65_530)
        -> [(frame: Int, outputs: [UInt16])] {
        var out: [(Int, [UInt16])] = []
        for i in frames {
            let (layer, sync) = frame(i)
            var sent: [UInt16] = []
            for p in 0..<packets {
                let seq = first &+ UInt16(i * packets + p)
                if let o = filter.filter(sequenceNumber: seq, layer: layer, sync: sync, startsFrame: p == 0) { sent.append(o) }
            }
            if !sent.isEmpty { out.append((i, sent)) }
        }
        return out
    }

    @Test func theBaseLayerAloneGoesOutWithoutHoles() {
        var filter = TemporalLayerFilter(cap: 0)
        let sent = Self.run(&filter, frames: 0..<12)
        #expect(sent.map(\.frame) == [0, 4, 8])
        let outputs = sent.flatMap(\.outputs)
        #expect(outputs == (0..<6).map { 65_530 &+ UInt16($0) }, "continuous across the wrap: \(outputs)")
        #expect(filter.packetsDropped == 18)
        // A NACK names output numbers: they map back to the base frames' packets.
        #expect(outputs.map { filter.input(forOutput: $0) } == [0, 1, 8, 9, 16, 17].map { 65_530 &+ UInt16($0) })
        // Resends: a base packet goes out where it went before; a dropped one not at all.
        #expect(filter.output(forInput: 65_530 &+ 9) == outputs[3])
        #expect(filter.output(forInput: 65_530 &+ 3) == nil)
        #expect(filter.sends(layer: 0) && !filter.sends(layer: 1))
    }

    @Test func twoLayersTakeHalfTheFrames() {
        var filter = TemporalLayerFilter(cap: 1)
        let sent = Self.run(&filter, frames: 0..<8)
        #expect(sent.map(\.frame) == [0, 2, 4, 6])
        #expect(sent.flatMap(\.outputs) == (0..<8).map { 65_530 &+ UInt16($0) })
    }

    /// Down at the next frame start (never in the middle of one); up only at a layer sync frame.
    @Test func switchesDownAtOnceAndUpAtASyncFrame() {
        var filter = TemporalLayerFilter()
        var sent = Self.run(&filter, frames: 0..<4)
        #expect(sent.map(\.frame) == [0, 1, 2, 3])
        filter.cap = 0
        sent += Self.run(&filter, frames: 4..<8)
        #expect(sent.map(\.frame) == [0, 1, 2, 3, 4])
        filter.cap = nil
        // Frame 8 is TL0, 9 the first TL2 of its period (a sync frame): all from there.
        sent += Self.run(&filter, frames: 8..<12)
        #expect(sent.map(\.frame) == [0, 1, 2, 3, 4, 8, 9, 10, 11])
        let outputs = sent.flatMap(\.outputs)
        #expect(zip(outputs, outputs.dropFirst()).allSatisfy { pair in pair.1 == pair.0 &+ 1 }, "\(outputs)")
        // Up from the base to TL1 only: the TL2 sync frame (9) is not taken, TL1's (10) is.
        var capped = TemporalLayerFilter(cap: 0)
        _ = Self.run(&capped, frames: 0..<8)
        capped.cap = 1
        #expect(Self.run(&capped, frames: 8..<14).map(\.frame) == [8, 10, 12])
    }

    /// A layer the receiver gets, late (reordered, or a resend from upstream): it goes out in
    /// the place its number has; a late packet of a dropped layer is not sent.
    @Test func latePacketsKeepTheirPlace() {
        var filter = TemporalLayerFilter(cap: 0)
        let first: UInt16 = 100
        // Frame 0 (TL0, 2 packets): its second packet comes after frames 1–4.
        #expect(filter.filter(sequenceNumber: 100, layer: 0, sync: false, startsFrame: true) == 100)
        var outs: [UInt16] = []
        for i in 1..<5 {
            let (layer, sync) = Self.frame(i)
            for p in 0..<2 {
                if let o = filter.filter(sequenceNumber: first &+ UInt16(i * 2 + p), layer: layer, sync: sync, startsFrame: p == 0) { outs.append(o) }
            }
        }
        #expect(outs == [102, 103], "frame 4 follows frame 0's two packets: \(outs)")
        #expect(filter.filter(sequenceNumber: 101, layer: 0, sync: false, startsFrame: false) == 101)
        #expect(filter.filter(sequenceNumber: 103, layer: 2, sync: true, startsFrame: false) == nil)
        #expect(filter.input(forOutput: 102) == 108)
    }

    @Test func aStreamWithoutLayersPassesUntouched() {
        var filter = TemporalLayerFilter(cap: 0)
        let outs = (0..<5).map { filter.filter(sequenceNumber: UInt16(7 + $0), layer: nil, sync: false, startsFrame: true) }
        #expect(outs == [7, 8, 9, 10, 11])
        #expect(filter.input(forOutput: 9) == 9)
    }
}
