import Testing
@testable import RTP
import TestSupport

@Suite struct RTPPacketTests {
    // V=2 X=1 CC=0 | M=1 PT=96 | seq 0x1234 | ts | ssrc | BEDE len 1 | id 1 len 1 0xAB, 2 pad | payload
    static let oneByteVector = hex("90 E0 1234 DEADBEEF 01020304 BEDE0001 10AB0000 010203")

    @Test func parsesHandBuiltPacket() throws {
        let p = try RTPPacket(parsing: Self.oneByteVector)
        #expect(p.marker)
        #expect(p.payloadType == 96)
        #expect(p.sequenceNumber == 0x1234)
        #expect(p.timestamp == 0xDEAD_BEEF)
        #expect(p.ssrc == 0x0102_0304)
        #expect(p.csrcs.isEmpty)
        #expect(p.extensionProfile == .oneByte)
        #expect(p.extensions == [RTPHeaderExtension(id: 1, data: [0xAB])])
        #expect(p.payload == [1, 2, 3])
        #expect(p.paddingLength == 0)
        #expect(p.serialize() == Self.oneByteVector)
    }

    @Test func serializesFromValuesByteExact() {
        var p = RTPPacket(marker: true, payloadType: 96, sequenceNumber: 0x1234, timestamp: 0xDEAD_BEEF,
                          ssrc: 0x0102_0304, payload: [1, 2, 3])
        p.setExtension(id: 1, data: [0xAB])
        #expect(p.serialize() == Self.oneByteVector)
    }

    @Test func minimalPacketWithoutExtensions() throws {
        let bytes = hex("80 08 0001 00000010 CAFEBABE 55")
        let p = try RTPPacket(parsing: bytes)
        #expect(!p.marker && p.payloadType == 8 && p.sequenceNumber == 1 && p.timestamp == 16)
        #expect(p.extensionProfile == nil && p.extensions.isEmpty)
        #expect(p.payload == [0x55])
        #expect(p.serialize() == bytes)
    }

    @Test func csrcs() throws {
        let p = RTPPacket(payloadType: 111, sequenceNumber: 7, timestamp: 960, ssrc: 42,
                          csrcs: [1, 0xFFFF_FFFF, 3], payload: [9])
        let bytes = p.serialize()
        #expect(bytes[0] == 0x83)
        #expect(bytes.count == 12 + 12 + 1)
        #expect(Array(bytes[16..<20]) == [0xFF, 0xFF, 0xFF, 0xFF])
        #expect(try RTPPacket(parsing: bytes) == p)
    }

    @Test func padding() throws {
        let bytes = hex("A0 60 0002 00000000 00000001 AABB 000003")
        let p = try RTPPacket(parsing: bytes)
        #expect(p.payload == [0xAA, 0xBB])
        #expect(p.paddingLength == 3)
        #expect(p.serialize() == bytes)
        // Payload-less packet that is all padding (a bandwidth probe).
        let probe = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 0, ssrc: 1, paddingLength: 255)
        let probeBytes = probe.serialize()
        #expect(probeBytes.count == 12 + 255)
        #expect(try RTPPacket(parsing: probeBytes) == probe)
    }

    @Test func badPaddingThrows() {
        // Padding count 0.
        #expect(throws: RTPError.self) { try RTPPacket(parsing: hex("A0 60 0002 00000000 00000001 AA00")) }
        // Padding count larger than what follows the header.
        let e = #expect(throws: RTPError.self) { try RTPPacket(parsing: hex("A0 60 0002 00000000 00000001 AA05")) }
        #expect(e?.offset == 13)
    }

    @Test func picksOneByteFormWhenAllFit() throws {
        var p = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, payload: [0])
        p.setExtension(id: 14, data: Array(repeating: 7, count: 16))
        p.setExtension(id: 3, data: [1, 2])
        let bytes = p.serialize()
        #expect(Array(bytes[12..<14]) == [0xBE, 0xDE])
        // 1+16 + 1+2 = 20 bytes = 5 words.
        #expect(Array(bytes[14..<16]) == [0x00, 0x05])
        #expect(bytes[16] == 0xEF)
        let back = try RTPPacket(parsing: bytes)
        #expect(back.extensions == p.extensions)
        #expect(back.extensionProfile == .oneByte)
    }

    @Test(arguments: [
        RTPHeaderExtension(id: 15, data: [1]),                             // id over 14
        RTPHeaderExtension(id: 2, data: []),                               // empty data
        RTPHeaderExtension(id: 2, data: Array(repeating: 1, count: 17)),   // longer than 16
    ])
    func picksTwoByteFormOtherwise(_ ext: RTPHeaderExtension) throws {
        var p = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, payload: [0])
        p.setExtension(id: 1, data: [0xAA])
        p.setExtension(id: ext.id, data: ext.data)
        let bytes = p.serialize()
        #expect(Array(bytes[12..<14]) == [0x10, 0x00])
        #expect(Array(bytes[16..<19]) == [0x01, 0x01, 0xAA])
        let back = try RTPPacket(parsing: bytes)
        #expect(back.extensionProfile == .twoByte)
        #expect(back.extensions == p.extensions)
        #expect(back.extensionData(id: ext.id) == ext.data)
    }

    @Test func twoByteHandBuilt() throws {
        // Two-byte block: id 5 len 0, padding byte, id 200 len 3.
        let bytes = hex("90 60 0001 00000002 00000003 10000002 0500 00 C8 03 616263 FF")
        let p = try RTPPacket(parsing: bytes)
        #expect(p.extensionProfile == .twoByte)
        #expect(p.extensions == [RTPHeaderExtension(id: 5, data: []), RTPHeaderExtension(id: 200, data: Array("abc".utf8))])
        #expect(p.payload == [0xFF])
        #expect(try RTPPacket(parsing: p.serialize()) == p)
    }

    @Test func twoByteProfileIsKeptWhenParsed() throws {
        var p = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, extensionProfile: .twoByte)
        p.setExtension(id: 1, data: [1])
        let bytes = p.serialize()
        #expect(Array(bytes[12..<14]) == [0x10, 0x00])
        #expect(try RTPPacket(parsing: bytes) == p)
    }

    @Test func oneByteStopsAtReservedId15() throws {
        let bytes = hex("90 60 0001 00000002 00000003 BEDE0001 10AA F0 00")
        let p = try RTPPacket(parsing: bytes)
        #expect(p.extensions == [RTPHeaderExtension(id: 1, data: [0xAA])])
    }

    @Test func otherProfileKeptRaw() throws {
        let bytes = hex("90 60 0001 00000002 00000003 ABCD0002 0102030405060708 99")
        let p = try RTPPacket(parsing: bytes)
        #expect(p.extensionProfile == .other(profile: 0xABCD, data: [1, 2, 3, 4, 5, 6, 7, 8]))
        #expect(p.extensions.isEmpty)
        #expect(p.payload == [0x99])
        #expect(p.serialize() == bytes)
    }

    @Test func emptyOneByteBlockRoundTrips() throws {
        let bytes = hex("90 60 0001 00000002 00000003 BEDE0000")
        let p = try RTPPacket(parsing: bytes)
        #expect(p.extensionProfile == .oneByte && p.extensions.isEmpty && p.payload.isEmpty)
        #expect(p.serialize() == bytes)
    }

    @Test func setAndRemoveExtension() {
        var p = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3)
        p.setExtension(id: 4, data: [1])
        p.setExtension(id: 4, data: [2, 3])
        #expect(p.extensions.count == 1)
        #expect(p.extensionData(id: 4) == [2, 3])
        #expect(p.extensionData(id: 5) == nil)
        p.removeExtension(id: 4)
        #expect(p.extensions.isEmpty)
    }

    @Test func errorsCarryOffsets() {
        let short = #expect(throws: RTPError.self) { try RTPPacket(parsing: [0x80, 0x60, 0, 1]) }
        #expect(short?.offset == 4)
        let version = #expect(throws: RTPError.self) { try RTPPacket(parsing: hex("40 60 0001 00000002 00000003")) }
        #expect(version?.offset == 0)
        #expect(version?.description.contains("version") == true)
        // CC=2 but only one CSRC present.
        let csrc = #expect(throws: RTPError.self) { try RTPPacket(parsing: hex("82 60 0001 00000002 00000003 00000004")) }
        #expect(csrc?.offset == 16)
        // Extension length claims 2 words, 1 present.
        let ext = #expect(throws: RTPError.self) { try RTPPacket(parsing: hex("90 60 0001 00000002 00000003 BEDE0002 10AA0000")) }
        #expect(ext?.offset == 14)
        // One-byte element id 1 with length 4 overruns a one-word block.
        let elem = #expect(throws: RTPError.self) { try RTPPacket(parsing: hex("90 60 0001 00000002 00000003 BEDE0001 13AA0000")) }
        #expect(elem?.offset == 16)
    }
}
