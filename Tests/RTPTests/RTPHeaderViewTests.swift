import Testing
@testable import RTP
import TestSupport

@Suite struct RTPHeaderViewTests {
    @Test func viewMatchesPacket() throws {
        var p = RTPPacket(marker: true, payloadType: 100, sequenceNumber: 65535, timestamp: 90_000, ssrc: 0xAABB_CCDD,
                          csrcs: [9], payload: [1, 2, 3, 4], paddingLength: 4)
        p.setExtension(id: 3, data: RTPExtensionCodec.encodeTransportSequence(513))
        p.setExtension(id: 4, data: RTPExtensionCodec.encodeMID("0"))
        let bytes = p.serialize()
        try bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) throws -> Void in
            let v = try RTPHeaderView(raw)
            #expect(v.marker && v.payloadType == 100 && v.sequenceNumber == 65535)
            #expect(v.timestamp == 90_000 && v.ssrc == 0xAABB_CCDD)
            #expect(v.csrcCount == 1 && v.csrc(at: 0) == 9 && v.csrc(at: 1) == nil)
            #expect(v.headerLength == 12 + 4 + 4 + 8)
            #expect(v.payloadRange == v.headerLength..<(v.headerLength + 4))
            #expect(Array(v.payload) == [1, 2, 3, 4])
            #expect(v.paddingLength == 4)
            #expect(v.extension(id: 3).map(Array.init) == [0x02, 0x01])
            #expect(v.extension(id: 4).map(Array.init) == [0x30])
            #expect(v.extension(id: 5) == nil)
        }
    }

    @Test func rejectsWhatThePacketParserRejects() {
        let bad = hex("90 60 0001 00000002 00000003 BEDE0002 10AA0000")
        let error = bad.withUnsafeBytes { raw -> RTPError? in
            do throws(RTPError) {
                _ = try RTPHeaderView(raw)
                return nil
            } catch {
                return error
            }
        }
        #expect(error?.offset == 14)
    }

    @Test func rewriteInPlace() throws {
        var p = RTPPacket(marker: true, payloadType: 96, sequenceNumber: 10, timestamp: 20, ssrc: 30, payload: [7, 7])
        p.setExtension(id: 1, data: [5])
        var bytes = p.serialize()
        try RTPRewrite.set(ssrc: 0x1234_5678, payloadType: 102, sequenceNumber: 999, timestamp: nil, in: &bytes)
        let q = try RTPPacket(parsing: bytes)
        #expect(q.ssrc == 0x1234_5678 && q.payloadType == 102 && q.sequenceNumber == 999)
        #expect(q.timestamp == 20 && q.marker && q.payload == [7, 7] && q.extensions == p.extensions)
    }

    @Test func rewriteValidates() {
        var garbage: [UInt8] = [0x80, 0x60, 0, 1, 0, 0]
        let before = garbage
        #expect(throws: RTPError.self) { try RTPRewrite.set(ssrc: 1, payloadType: nil, sequenceNumber: nil, timestamp: nil, in: &garbage) }
        #expect(garbage == before)
        var ok = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3).serialize()
        #expect(throws: RTPError.self) { try RTPRewrite.set(ssrc: nil, payloadType: 200, sequenceNumber: nil, timestamp: nil, in: &ok) }
    }

    @Test func rewriteExtensionInPlaceThroughRange() throws {
        var p = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3)
        p.setExtension(id: 2, data: [0, 0])
        var bytes = p.serialize()
        let range = try bytes.withUnsafeBytes { try RTPHeaderView($0).extensionRange(id: 2) }
        let r = try #require(range)
        bytes.replaceSubrange(r, with: RTPExtensionCodec.encodeTransportSequence(0xBEEF))
        #expect(try RTPPacket(parsing: bytes).extensionData(id: 2) == [0xBE, 0xEF])
    }
}
