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

    @Test(arguments: cases)
    func roundTripKeepsHeaderAndPayload(packet: RTPPacket) throws {
        let rtx = try RTXPayload.wrap(original: packet.serialize(), rtxSSRC: 0x3333_4444, rtxPayloadType: 97,
                                      rtxSequenceNumber: 500)
        let parsed = try RTPPacket(parsing: rtx)
        #expect(parsed.ssrc == 0x3333_4444 && parsed.payloadType == 97 && parsed.sequenceNumber == 500)
        #expect(parsed.marker && parsed.timestamp == 0xDEAD_BEEF)
        #expect(parsed.csrcs == packet.csrcs && parsed.extensions == packet.extensions)
        #expect(parsed.payload == [0xFF, 0xFE] + packet.payload)   // OSN first
        #expect(parsed.paddingLength == 0)

        let back = try RTXPayload.unwrap(rtx, originalSSRC: 0x1111_2222, originalPayloadType: 96)
        var expected = packet
        expected.paddingLength = 0   // padding is not retransmitted
        #expect(back == expected.serialize())
    }

    @Test func rtxPaddingIsDroppedOnUnwrap() throws {
        var rtx = try RTPPacket(parsing: RTXPayload.wrap(original: Self.original().serialize(), rtxSSRC: 5,
                                                         rtxPayloadType: 97, rtxSequenceNumber: 1))
        rtx.paddingLength = 33   // a sender padding its RTX packet for bandwidth probing
        let back = try RTXPayload.unwrap(rtx.serialize(), originalSSRC: 0x1111_2222, originalPayloadType: 96)
        #expect(back == Self.original().serialize())
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
            #expect(kind { () throws(RTXError) in
                try RTXPayload.wrap(original: bytes, rtxSSRC: 1, rtxPayloadType: 97, rtxSequenceNumber: 0)
            } == .malformedRTP)
        }
        let good = Self.original().serialize()
        #expect(kind { () throws(RTXError) in try RTXPayload.wrap(original: good, rtxSSRC: 1, rtxPayloadType: 128, rtxSequenceNumber: 0) }
                == .payloadTypeOutOfRange)
        #expect(kind { () throws(RTXError) in try RTXPayload.unwrap(good, originalSSRC: 1, originalPayloadType: 200) }
                == .payloadTypeOutOfRange)
    }
}
