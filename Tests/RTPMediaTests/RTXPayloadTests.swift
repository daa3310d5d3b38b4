import RTP
import Testing
@testable import RTPMedia

@Suite struct RTXPayloadTests {
    static let media: [UInt8] = Array(1...40)

    static func original(csrcs: [UInt32] = [], extensions: [RTPHeaderExtension] = [], padding: UInt8 = 0,
                         payload: [UInt8] = media) -> RTPPacket {
        RTPPacket(marker: true, payloadType: 96, sequenceNumber: 0xFFFE, timestamp: 0xDEAD_BEEF, ssrc: 0x1111_2222,
                  csrcs: csrcs, extensions: extensions, payload: payload, paddingLength: padding)
    }

    static let cases: [RTPPacket] = [
        original(),
        original(csrcs: [7, 8, 9]),
        original(extensions: [RTPHeaderExtension(id: 3, data: [0x12, 0x34]), RTPHeaderExtension(id: 5, data: [1])]),
        original(csrcs: [42], extensions: [RTPHeaderExtension(id: 1, data: Array(repeating: 0xAB, count: 20))], padding: 7),
        original(payload: []),
    ]

    /// The packet as its receiver knows it (`plain`) and its RTX packet (`rtx`), both written
    /// by the one RTX writer's path (`RTXWriter` + `RTPHeaderView.rewritten`).
    static func retransmit(_ packet: RTPPacket, writer: inout RTXWriter) throws -> (plain: [UInt8], rtx: [UInt8]) {
        try packet.serialize().withUnsafeBytes { raw in
            let view = try RTPHeaderView(raw)
            var patch = RTPHeaderPatch(ssrc: view.ssrc, sequenceNumber: view.sequenceNumber, timestamp: view.timestamp,
                                       payloadType: view.payloadType, midID: 1, mid: Array("v".utf8), transportCCID: 2)
            let plain = try #require(view.rewritten(patch)).bytes
            let taken = writer.retransmission(&patch)
            let osn = try #require(taken)
            return (plain, try #require(view.rewritten(patch, rtxOriginalSequence: osn)).bytes)
        }
    }

    @Test(arguments: cases)
    func roundTripKeepsHeaderAndPayload(packet: RTPPacket) throws {
        var writer = RTXWriter(ssrc: 0x3333_4444, payloadTypes: [96: 97], sequence: 500)
        let (plain, rtx) = try Self.retransmit(packet, writer: &writer)
        let parsed = try RTPPacket(parsing: rtx)
        #expect(parsed.ssrc == 0x3333_4444 && parsed.payloadType == 97 && parsed.sequenceNumber == 500)
        #expect(writer.sequence == 501)
        #expect(parsed.marker && parsed.timestamp == 0xDEAD_BEEF)
        #expect(parsed.csrcs == packet.csrcs && parsed.extensionData(id: 1) == Array("v".utf8))
        #expect(parsed.payload == [0xFF, 0xFE] + packet.payload)   // OSN first
        #expect(parsed.paddingLength == 0)

        let back = try RTXPayload.unwrap(rtx, originalSSRC: 0x1111_2222, originalPayloadType: 96)
        var expected = try RTPPacket(parsing: plain)
        expected.paddingLength = 0   // padding is not retransmitted
        #expect(back == expected.serialize())
    }

    @Test func withoutANegotiatedRtxTypeThePacketGoesAgainAsItWas() {
        var writer = RTXWriter(ssrc: 5, payloadTypes: [100: 101], sequence: 9)
        var patch = RTPHeaderPatch(ssrc: 1, sequenceNumber: 2, timestamp: 3, payloadType: 96)
        #expect(writer.retransmission(&patch) == nil)
        #expect(patch.ssrc == 1 && patch.sequenceNumber == 2 && writer.sequence == 9)
    }

    @Test func rtxPaddingIsDroppedOnUnwrap() throws {
        var writer = RTXWriter(ssrc: 5, payloadTypes: [96: 97], sequence: 1)
        let (plain, bytes) = try Self.retransmit(Self.original(), writer: &writer)
        var rtx = try RTPPacket(parsing: bytes)
        rtx.paddingLength = 33   // a sender padding its RTX packet for bandwidth probing
        let back = try RTXPayload.unwrap(rtx.serialize(), originalSSRC: 0x1111_2222, originalPayloadType: 96)
        #expect(back == plain)
    }

    @Test func probePaddingIsPaddingOnlyOnTheRtxStream() throws {
        var writer = RTXWriter(ssrc: 5, payloadTypes: [96: 97, 98: 99], sequence: 7)
        let packets = writer.padding(bytes: 1000, midID: 1, mid: Array("0".utf8), transportCCID: 3)
        #expect(packets.count == 4 && writer.sequence == 11)
        for (i, bytes) in packets.enumerated() {
            let p = try RTPPacket(parsing: bytes)
            #expect(p.ssrc == 5 && p.payloadType == 97 && p.sequenceNumber == UInt16(7 + i) && p.payload.isEmpty && p.paddingLength == 255)
            #expect(p.extensionData(id: 3) == [0, 0] && p.extensionData(id: 1) == Array("0".utf8))
            #expect(throws: RTXError.self) { try RTXPayload.unwrap(bytes, originalSSRC: 1, originalPayloadType: 96) }
        }
        // A slow probe's packets: none over the size it asks for.
        let small = writer.padding(bytes: 400, largestPacket: 150, midID: 1, mid: Array("0".utf8), transportCCID: 3)
        #expect(small.count == 3 && small.allSatisfy { $0.count == 150 })
        #expect(try small.allSatisfy { try RTPPacket(parsing: $0).payload.isEmpty })
        var none = RTXWriter(ssrc: 5)
        #expect(none.padding(bytes: 1000, midID: nil, mid: [], transportCCID: 3).isEmpty)
    }

    @Test func paddingOnlyPacketsAreReportedAsSuch() {
        let headerOnly = RTPPacket(payloadType: 97, sequenceNumber: 9, timestamp: 0, ssrc: 5)
        var padded = headerOnly
        padded.paddingLength = 224
        for bytes in [headerOnly.serialize(), padded.serialize()] {
            #expect(throws: RTXError(.paddingOnly, "RTX packet seq 9 is padding only (no payload after the header)")) {
                try RTXPayload.unwrap(bytes, originalSSRC: 1, originalPayloadType: 96)
            }
        }
    }

    @Test func malformedInputErrors() throws {
        func kind(_ body: () throws(RTXError) -> [UInt8]) -> RTXError.Kind? {
            do throws(RTXError) {
                _ = try body()
                return nil
            } catch {
                #expect(!error.description.isEmpty)
                return error.kind
            }
        }
        let oneByte = RTPPacket(payloadType: 97, sequenceNumber: 9, timestamp: 0, ssrc: 5, payload: [0x12]).serialize()
        #expect(kind { () throws(RTXError) in try RTXPayload.unwrap(oneByte, originalSSRC: 1, originalPayloadType: 96) }
                == .missingOriginalSequenceNumber)
        var badVersion = Self.original().serialize()
        badVersion[0] = 0x40
        let truncated = Array(Self.original(csrcs: [1, 2]).serialize().prefix(15))
        for bytes in [[], [0x80, 0x60], badVersion, truncated] {
            #expect(kind { () throws(RTXError) in try RTXPayload.unwrap(bytes, originalSSRC: 1, originalPayloadType: 96) } == .malformedRTP)
        }
        let good = Self.original().serialize()
        #expect(kind { () throws(RTXError) in try RTXPayload.unwrap(good, originalSSRC: 1, originalPayloadType: 200) }
                == .payloadTypeOutOfRange)
    }
}
