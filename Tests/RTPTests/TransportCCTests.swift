import Testing
@testable import RTP
import TestSupport

@Suite struct TransportCCTests {
    // base 100, 10 statuses, reference time 0x000102, feedback count 5.
    // Chunk 0x2008: run-length, symbol 1 (small delta), run 8 → 100…107.
    // Chunk 0xE000: 2-bit vector [2 (large), 0 (lost), …] → 108 large, 109 lost.
    // Deltas: 1 2 3 4 5 6 7 255, then -4 as 0xFFFC; 2 zero bytes pad to a word.
    static let runAndTwoBit = hex("""
        8F CD 0008 00000001 00000002 0064 000A 000102 05
        2008 E000
        01020304050607FF FFFC 0000
        """)

    static let expectedRunAndTwoBit = TransportCCFeedback(
        senderSSRC: 1, mediaSSRC: 2, baseSequence: 100, feedbackPacketCount: 5, referenceTime: 0x102,
        receivedDeltas: [1, 2, 3, 4, 5, 6, 7, 255, -4, nil])

    @Test func runLengthAndTwoBitVector() throws {
        let parsed = try RTCPPacket.parseCompound(Self.runAndTwoBit)
        #expect(parsed == [.transportCC(Self.expectedRunAndTwoBit)])
        #expect(RTCPPacket.transportCC(Self.expectedRunAndTwoBit).serialize() == Self.runAndTwoBit)
        guard case .transportCC(let fb) = parsed[0] else { return }
        #expect(fb.packets.map(\.sequence) == Array(100...109))
        #expect(fb.referenceTimeMicroseconds == 0x102 * 64_000)
        let times = fb.arrivalTimes
        #expect(times.count == 9)
        #expect(times.last?.sequence == 108)
        let deltaSum: Int64 = 1 + 2 + 3 + 4 + 5 + 6 + 7 + 255 - 4
        let expected: Int64 = 0x102 * 64_000 + deltaSum * 250
        #expect(times.last?.microseconds == expected)
    }

    // 14 statuses in one 1-bit vector chunk: 1 0 1 1 0 0 0 0 0 0 0 0 0 1 → 0xAC01.
    static let oneBit = hex("8F CD 0006 00000001 00000002 FFFE 000E 000000 00 AC01 0A141E28 0000")

    @Test func oneBitVectorAndSequenceWrap() throws {
        let fb = TransportCCFeedback(senderSSRC: 1, mediaSSRC: 2, baseSequence: 0xFFFE, feedbackPacketCount: 0, referenceTime: 0,
                                     receivedDeltas: [10, nil, 20, 30, nil, nil, nil, nil, nil, nil, nil, nil, nil, 40])
        #expect(try RTCPPacket.parseCompound(Self.oneBit) == [.transportCC(fb)])
        #expect(RTCPPacket.transportCC(fb).serialize() == Self.oneBit)
        #expect(fb.packets[2].sequence == 0)
    }

    @Test func longRunsAndMixedContent() throws {
        var deltas: [Int?] = Array(repeating: nil, count: 9000)       // run longer than 8191
        deltas += (0..<50).map { $0 % 3 == 0 ? 1000 : ($0 % 3 == 1 ? nil : 17) }
        deltas += [-32768, 32767, 0, 255, 256, -1]
        let fb = TransportCCFeedback(senderSSRC: 9, mediaSSRC: 8, baseSequence: 60_000, feedbackPacketCount: 255,
                                     referenceTime: 0xFF_FFFF, receivedDeltas: deltas)
        let bytes = RTCPPacket.transportCC(fb).serialize()
        #expect(bytes.count % 4 == 0)
        #expect(try RTCPPacket.parseCompound(bytes) == [.transportCC(fb)])
    }

    @Test func outOfRangeDeltasClamp() throws {
        let fb = TransportCCFeedback(senderSSRC: 1, mediaSSRC: 2, baseSequence: 0, feedbackPacketCount: 0,
                                     referenceTime: 0, receivedDeltas: [100_000, -100_000])
        guard case .transportCC(let back) = try RTCPPacket.parseCompound(RTCPPacket.transportCC(fb).serialize())[0] else {
            Issue.record("not TWCC")
            return
        }
        #expect(back.packets.map(\.receivedDelta) == [32767, -32768])
    }

    @Test func reservedStatusThrows() {
        // Run-length chunk with symbol 3.
        let bytes = hex("8F CD 0005 00000001 00000002 0000 0001 000000 00 6001 0000")
        let e = #expect(throws: RTCPError.self) { try RTCPPacket.parseCompound(bytes) }
        #expect(e?.offset == 20)
    }

    @Test func missingDeltasThrow() {
        // Says 8 small deltas, carries 2.
        let bytes = hex("8F CD 0005 00000001 00000002 0000 0008 000000 00 2008 0102")
        #expect(throws: RTCPError.self) { try RTCPPacket.parseCompound(bytes) }
    }
}
