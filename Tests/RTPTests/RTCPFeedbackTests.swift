import Testing
@testable import RTP
import TestSupport

@Suite struct RTCPFeedbackTests {
    @Test func nackVector() throws {
        // PID=100, BLP=0b101 → 100, 101 (bit 0), 103 (bit 2).
        let bytes = hex("81 CD 0003 00000001 00000002 0064 0005")
        let parsed = try RTCPPacket.parseCompound(bytes)
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: [100, 101, 103])
        #expect(parsed == [.nack(nack)])
        #expect(RTCPPacket.nack(nack).serialize() == bytes)
    }

    @Test func nackPacksRunsAndWraps() throws {
        let lost: [UInt16] = [65534, 65535, 0, 1, 14, 40, 41]
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: lost)
        let pairs = nack.pairs
        #expect(pairs.count == 2)
        #expect(pairs[0].pid == 65534 && pairs[0].blp == 0b1000_0000_0000_0111)
        #expect(pairs[1].pid == 40 && pairs[1].blp == 0b1)
        #expect(try RTCPPacket.parseCompound(RTCPPacket.nack(nack).serialize()) == [.nack(nack)])
    }

    @Test func nackKeepsAnyOrder() throws {
        let nack = GenericNACK(senderSSRC: 1, mediaSSRC: 2, lostSequenceNumbers: [100, 102, 101, 100, 5])
        #expect(try RTCPPacket.parseCompound(RTCPPacket.nack(nack).serialize()) == [.nack(nack)])
    }

    @Test func pliVector() throws {
        let bytes = hex("81 CE 0002 00000001 00000002")
        #expect(try RTCPPacket.parseCompound(bytes) == [.pli(senderSSRC: 1, mediaSSRC: 2)])
        #expect(RTCPPacket.pli(senderSSRC: 1, mediaSSRC: 2).serialize() == bytes)
    }

    @Test func firVector() throws {
        let bytes = hex("84 CE 0006 00000001 00000000 0000000A 07 000000 0000000B 08 000000")
        let fir = FullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: 10, sequenceNumber: 7), .init(ssrc: 11, sequenceNumber: 8)])
        #expect(try RTCPPacket.parseCompound(bytes) == [.fir(fir)])
        #expect(RTCPPacket.fir(fir).serialize() == bytes)
    }

    @Test func rembOneMegabit() throws {
        // 1 000 000 = 250 000 · 2^2: exp 2, mantissa 0x3D090 → 0x0BD090.
        let bytes = hex("8F CE 0005 00000001 00000000 52454D42 01 0BD090 12345678")
        let remb = REMB(senderSSRC: 1, bitrate: 1_000_000, ssrcs: [0x1234_5678])
        #expect(RTCPPacket.remb(remb).serialize() == bytes)
        #expect(try RTCPPacket.parseCompound(bytes) == [.remb(remb)])
        #expect(REMB.encode(bitrate: 1_000_000) == (2, 250_000))
    }

    @Test func rembRoundsDownUnrepresentableRates() throws {
        let remb = REMB(senderSSRC: 1, bitrate: 1_000_001, ssrcs: [])
        guard case .remb(let back) = try RTCPPacket.parseCompound(RTCPPacket.remb(remb).serialize())[0] else {
            Issue.record("not REMB")
            return
        }
        #expect(back.bitrate == 1_000_000)
        let huge = REMB(senderSSRC: 1, bitrate: UInt64.max, ssrcs: [1])
        #expect(try RTCPPacket.parseCompound(RTCPPacket.remb(huge).serialize()).count == 1)
    }

    @Test func rembOverflowThrows() {
        // exp 63, mantissa 0x3FFFF: far beyond 64 bits.
        let bytes = hex("8F CE 0004 00000001 00000000 52454D42 00 FFFFFF")
        let e = #expect(throws: RTCPError.self) { try RTCPPacket.parseCompound(bytes) }
        #expect(e?.offset == 17)
    }

    @Test func otherApplicationFeedbackIsUnknown() throws {
        let bytes = hex("8F CE 0003 00000001 00000000 41424344")
        #expect(try RTCPPacket.parseCompound(bytes) == [.unknown(packetType: 206, count: 15, body: hex("00000001 00000000 41424344"))])
    }

    @Test func truncatedFeedbackThrows() {
        let e = #expect(throws: RTCPError.self) { try RTCPPacket.parseCompound(hex("81 CE 0001 00000001")) }
        #expect(e?.offset == 8)
    }
}
