import Testing
@testable import RTP
import TestSupport

@Suite struct RTCPReportTests {
    // SR with one report block, then SDES with CNAME "abcd", built by hand from RFC 3550 §6.4.1 / §6.5.
    static let srSdes = hex("""
        81 C8 000C 11223344 E1234567 89ABCDEF 00010000 0000000A 000003E8
        55667788 40 FFFFFF 00010005 00000014 45678901 00010000
        81 CA 0003 11223344 01 04 61626364 00 00
        """)

    @Test func compoundSRAndSDES() throws {
        let packets = try RTCPPacket.parseCompound(Self.srSdes)
        #expect(packets.count == 2)
        let report = ReceptionReport(ssrc: 0x5566_7788, fractionLost: 0x40, cumulativeLost: -1, highestSequence: 0x1_0005,
                                     jitter: 20, lastSR: 0x4567_8901, delaySinceLastSR: 0x1_0000)
        let sr = SenderReport(ssrc: 0x1122_3344, ntpTimestamp: 0xE123_4567_89AB_CDEF, rtpTimestamp: 0x1_0000,
                              packetCount: 10, octetCount: 1000, reports: [report])
        #expect(packets[0] == .senderReport(sr))
        guard case .sourceDescription(let sdes) = packets[1] else {
            Issue.record("expected SDES, got \(packets[1])")
            return
        }
        #expect(sdes.cname(of: 0x1122_3344) == "abcd")
        #expect(sdes == SourceDescription(ssrc: 0x1122_3344, cname: "abcd"))
        #expect(RTCPPacket.serializeCompound(packets) == Self.srSdes)
    }

    @Test func receiverReportRoundTrip() throws {
        let rr = ReceiverReport(ssrc: 1, reports: (0..<31).map {
            ReceptionReport(ssrc: UInt32($0), fractionLost: UInt8($0), cumulativeLost: Int32($0) - 15,
                            highestSequence: 70_000, jitter: 3, lastSR: 4, delaySinceLastSR: 5)
        })
        let bytes = RTCPPacket.receiverReport(rr).serialize()
        #expect(bytes.count == 8 + 31 * 24)
        #expect(bytes[0] == 0x80 | 31 && bytes[1] == 201)
        #expect(try RTCPPacket.parseCompound(bytes) == [.receiverReport(rr)])
    }

    @Test func cumulativeLostIs24BitSigned() throws {
        let rr = ReceiverReport(ssrc: 1, reports: [
            ReceptionReport(ssrc: 2, cumulativeLost: -8_388_608),
            ReceptionReport(ssrc: 3, cumulativeLost: 8_388_607),
            ReceptionReport(ssrc: 4, cumulativeLost: 100_000_000),  // clamps
        ])
        let bytes = RTCPPacket.receiverReport(rr).serialize()
        #expect(Array(bytes[13..<16]) == [0x80, 0x00, 0x00])
        #expect(Array(bytes[37..<40]) == [0x7F, 0xFF, 0xFF])
        guard case .receiverReport(let back) = try RTCPPacket.parseCompound(bytes)[0] else {
            Issue.record("not an RR")
            return
        }
        #expect(back.reports.map(\.cumulativeLost) == [-8_388_608, 8_388_607, 8_388_607])
    }

    @Test func emptyReceiverReportWithPadding() throws {
        // P bit, body = SSRC + 4 padding bytes (count 4).
        let bytes = hex("A0 C9 0002 DEADBEEF 00000004")
        #expect(try RTCPPacket.parseCompound(bytes) == [.receiverReport(ReceiverReport(ssrc: 0xDEAD_BEEF))])
    }

    @Test func profileExtensionIsKept() throws {
        let sr = SenderReport(ssrc: 1, ntpTimestamp: 2, rtpTimestamp: 3, packetCount: 4, octetCount: 5,
                              profileExtension: [1, 2, 3, 4])
        let bytes = RTCPPacket.senderReport(sr).serialize()
        #expect(bytes.count == 32)
        #expect(try RTCPPacket.parseCompound(bytes) == [.senderReport(sr)])
    }

    @Test func sdesMultipleChunksAndItems() throws {
        let sdes = SourceDescription(chunks: [
            .init(ssrc: 1, items: [.init(type: SDESItemType.cname, text: "user@host"),
                                   .init(type: SDESItemType.tool, text: "SwiftRTC ✓")]),
            .init(ssrc: 2, items: []),
            .init(ssrc: 3, items: [.init(type: SDESItemType.cname, text: "abc")]),  // 4+2+3+1 = 10 → 12
        ])
        let bytes = RTCPPacket.sourceDescription(sdes).serialize()
        #expect(bytes.count % 4 == 0)
        #expect(try RTCPPacket.parseCompound(bytes) == [.sourceDescription(sdes)])
    }

    @Test func sdesItemEndingOnWordBoundaryGetsFullNullWord() {
        // 4 (ssrc) + 2 + 2 = 8: the terminating null needs a whole extra word.
        let bytes = RTCPPacket.sourceDescription(SourceDescription(ssrc: 9, cname: "ab")).serialize()
        #expect(bytes == hex("81 CA 0003 00000009 01 02 6162 00000000"))
    }

    @Test func sdesTextIsCutAt255BytesOnACharacterBoundary() throws {
        let long = String(repeating: "é", count: 200)  // 400 bytes
        let item = SourceDescription.Item(type: 1, text: long)
        #expect(item.data.count == 254)
        #expect(item.text == String(repeating: "é", count: 127))
    }

    @Test func goodbye() throws {
        let bye = Goodbye(ssrcs: [1, 2], reason: "bye")
        let bytes = RTCPPacket.goodbye(bye).serialize()
        #expect(bytes == hex("82 CB 0003 00000001 00000002 03 627965"))
        #expect(try RTCPPacket.parseCompound(bytes) == [.goodbye(bye)])
        let silent = Goodbye(ssrcs: [7])
        #expect(try RTCPPacket.parseCompound(RTCPPacket.goodbye(silent).serialize()) == [.goodbye(silent)])
        let empty = Goodbye(ssrcs: [], reason: "")
        #expect(try RTCPPacket.parseCompound(RTCPPacket.goodbye(empty).serialize()) == [.goodbye(empty)])
    }

    @Test func unknownPacketsRoundTrip() throws {
        // APP (204) with subtype 3 and a name + data.
        let app = hex("83 CC 0003 00000001 54455354 AABBCCDD")
        let parsed = try RTCPPacket.parseCompound(app)
        #expect(parsed == [.unknown(packetType: 204, count: 3, body: hex("00000001 54455354 AABBCCDD"))])
        #expect(RTCPPacket.serializeCompound(parsed) == app)
        // An unaligned body is written with RTCP padding.
        let odd = RTCPPacket.unknown(packetType: 210, count: 0, body: [1, 2, 3, 4, 5])
        let bytes = odd.serialize()
        #expect(bytes == hex("A0 D2 0002 01020304 05 0000 03"))
        #expect(try RTCPPacket.parseCompound(bytes) == [odd])
    }

    @Test func compoundErrorsCarryOffsets() {
        let empty = #expect(throws: RTCPError.self) { try RTCPPacket.parseCompound([]) }
        #expect(empty?.offset == 0)
        // Second packet's header is truncated.
        var twoPackets = Self.srSdes
        twoPackets.removeLast(4)
        let trunc = #expect(throws: RTCPError.self) { try RTCPPacket.parseCompound(twoPackets) }
        #expect(trunc?.offset == 54)  // length field of the SDES at 52
        let version = #expect(throws: RTCPError.self) { try RTCPPacket.parseCompound(hex("41 C9 0001 00000000")) }
        #expect(version?.offset == 0)
        // RR claims 1 report but has no room for it.
        let report = #expect(throws: RTCPError.self) { try RTCPPacket.parseCompound(hex("81 C9 0002 00000001 00000002")) }
        #expect(report?.offset == 8)
        // Padding count 0.
        let pad = #expect(throws: RTCPError.self) { try RTCPPacket.parseCompound(hex("A0 C9 0002 00000001 00000000")) }
        #expect(pad?.offset == 11)
        // 3 stray bytes after a packet.
        let stray = #expect(throws: RTCPError.self) { try RTCPPacket.parseCompound(hex("80 C9 0001 00000001 808080")) }
        #expect(stray?.offset == 8)
    }
}
