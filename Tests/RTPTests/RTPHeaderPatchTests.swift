import SeededRandom
import Testing
@testable import RTP

/// `RTPHeaderView.write(_:into:)` must give exactly the bytes of the path it replaces: parse
/// into an `RTPPacket`, set the fields, replace the extensions, serialize (what
/// `RtpSender.forward(_:)` does for every player).
@Suite struct RTPHeaderPatchTests {
    static func oldPath(_ source: [UInt8], _ patch: RTPHeaderPatch) throws -> [UInt8] {
        var packet = try RTPPacket(parsing: source)
        packet.ssrc = patch.ssrc
        packet.sequenceNumber = patch.sequenceNumber
        packet.timestamp = patch.timestamp
        packet.payloadType = patch.payloadType
        let orientation = patch.orientationSourceID.flatMap { packet.extensionData(id: $0) }
        packet.extensions = []
        packet.extensionProfile = nil
        if let id = patch.midID { packet.setExtension(id: id, data: patch.mid) }
        if let orientation, let id = patch.orientationID { packet.setExtension(id: id, data: orientation) }
        if let id = patch.transportCCID { packet.setExtension(id: id, data: [0, 0]) }
        if let id = patch.absSendTimeID { packet.setExtension(id: id, data: [0, 0, 0]) }
        return packet.serialize()
    }

    static func written(_ source: [UInt8], _ patch: RTPHeaderPatch, capacity: Int = 2048) throws
        -> (bytes: [UInt8], ccOffset: Int?, absOffset: Int?)? {
        try source.withUnsafeBytes { raw in
            let view = try RTPHeaderView(raw)
            var out = [UInt8](repeating: 0xEE, count: capacity)
            let w = out.withUnsafeMutableBytes { view.write(patch, into: $0) }
            guard let w else { return nil }
            return (Array(out[0..<w.length]), w.transportCCOffset, w.absSendTimeOffset)
        }
    }

    static let patch = RTPHeaderPatch(ssrc: 0xCAFE_F00D, sequenceNumber: 4242, timestamp: 0x1234_5678, payloadType: 102,
                                      midID: 4, mid: Array("1".utf8), orientationSourceID: 7, orientationID: 3, transportCCID: 5)

    @Test(arguments: [
        // plain, no extensions
        RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, payload: [1, 2, 3]),
        // marker, CSRCs, padding
        RTPPacket(marker: true, payloadType: 96, sequenceNumber: 65535, timestamp: 9, ssrc: 3, csrcs: [10, 11, 12],
                  payload: Array(repeating: 0xAB, count: 1100), paddingLength: 7),
        // the source's one-byte elements (mid, orientation, abs-send-time): only orientation kept
        RTPPacket(payloadType: 100, sequenceNumber: 7, timestamp: 8, ssrc: 9,
                  extensions: [RTPHeaderExtension(id: 1, data: Array("0".utf8)), RTPHeaderExtension(id: 7, data: [0x03]),
                               RTPHeaderExtension(id: 2, data: [1, 2, 3])], payload: [5, 5]),
        // two-byte source block with a long element, CSRC and padding 1
        RTPPacket(payloadType: 100, sequenceNumber: 7, timestamp: 8, ssrc: 9, csrcs: [1],
                  extensions: [RTPHeaderExtension(id: 7, data: [0x01]), RTPHeaderExtension(id: 30, data: Array(repeating: 9, count: 40))],
                  extensionProfile: .twoByte, payload: [1], paddingLength: 1),
        // a raw (non-RFC 8285) block, empty payload
        RTPPacket(payloadType: 100, sequenceNumber: 7, timestamp: 8, ssrc: 9, extensionProfile: .other(profile: 0x1234, data: [1, 2, 3, 4])),
    ])
    func sameBytesAsTheSerializePath(_ packet: RTPPacket) throws {
        let source = packet.serialize()
        var patches = [Self.patch]
        var noExtensions = Self.patch
        noExtensions.midID = nil
        noExtensions.orientationID = nil
        noExtensions.transportCCID = nil
        patches.append(noExtensions)
        var twoByte = Self.patch
        twoByte.midID = 20   // an id above 14: the two-byte form
        patches.append(twoByte)
        var longMid = Self.patch
        longMid.mid = Array("a-mid-longer-than-16".utf8)
        patches.append(longMid)
        var emptyMid = Self.patch
        emptyMid.mid = []
        patches.append(emptyMid)
        var sendTime = Self.patch   // four elements: mid, orientation, transport-cc, abs-send-time
        sendTime.absSendTimeID = 2
        patches.append(sendTime)
        var sendTimeTwoByte = sendTime
        sendTimeTwoByte.absSendTimeID = 15
        patches.append(sendTimeTwoByte)
        for patch in patches {
            let expected = try Self.oldPath(source, patch)
            let got = try #require(try Self.written(source, patch))
            #expect(got.bytes == expected, "patch \(patch)")
            if let offset = got.ccOffset {
                let parsed = try RTPPacket(parsing: got.bytes)
                #expect(parsed.extensionData(id: try #require(patch.transportCCID)) == [0, 0])
                #expect(Array(got.bytes[offset..<(offset + 2)]) == [0, 0])
                var stamped = got.bytes
                stamped[offset] = 0xAB
                stamped[offset + 1] = 0xCD
                #expect(try RTPPacket(parsing: stamped).extensionData(id: try #require(patch.transportCCID)) == [0xAB, 0xCD])
            } else {
                #expect(patch.transportCCID == nil)
            }
            if let offset = got.absOffset {
                var stamped = got.bytes
                stamped.replaceSubrange(offset..<(offset + 3), with: [0x12, 0x34, 0x56])
                let parsed = try RTPPacket(parsing: stamped)
                #expect(parsed.extensionData(id: try #require(patch.absSendTimeID)) == [0x12, 0x34, 0x56])
                #expect(parsed.payload == (try RTPPacket(parsing: got.bytes)).payload)
            } else {
                #expect(patch.absSendTimeID == nil)
            }
        }
    }

    @Test func randomPacketsMatchTheSerializePath() throws {
        var rng = SplitMix64(seed: 12)
        for _ in 0..<500 {
            var p = RTPPacket(marker: Bool.random(using: &rng), payloadType: UInt8.random(in: 0...127, using: &rng),
                              sequenceNumber: .random(in: 0...UInt16.max, using: &rng), timestamp: .random(in: 0...UInt32.max, using: &rng),
                              ssrc: .random(in: 0...UInt32.max, using: &rng),
                              csrcs: (0..<Int.random(in: 0...3, using: &rng)).map { _ in UInt32.random(in: 0...UInt32.max, using: &rng) },
                              payload: (0..<Int.random(in: 0...1200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) },
                              paddingLength: Bool.random(using: &rng) ? UInt8.random(in: 1...32, using: &rng) : 0)
            for id in [UInt8(1), 7, 9] where Bool.random(using: &rng) {
                p.setExtension(id: id, data: (0..<Int.random(in: 1...16, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) })
            }
            var patch = Self.patch
            patch.midID = Bool.random(using: &rng) ? UInt8.random(in: 1...20, using: &rng) : nil
            patch.transportCCID = Bool.random(using: &rng) ? 5 : nil
            if patch.midID == 5 || patch.midID == 3 { patch.midID = 4 }
            let source = p.serialize()
            #expect(try Self.written(source, patch)?.bytes == Self.oldPath(source, patch))
        }
    }

    @Test func tooSmallABufferWritesNothing() throws {
        let source = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 2, ssrc: 3, payload: Array(repeating: 1, count: 100)).serialize()
        let needed = try Self.oldPath(source, Self.patch).count
        #expect(try Self.written(source, Self.patch, capacity: needed - 1) == nil)
        #expect(try Self.written(source, Self.patch, capacity: needed)?.bytes.count == needed)
    }
}
