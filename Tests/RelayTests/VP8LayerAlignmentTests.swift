import RTP
import RTPMedia
import Testing
@testable import Relay

/// VP8 simulcast layers number their pictures each on their own; the relay maps every layer's
/// PictureID and TL0PICIDX onto the first layer's at equal RTP timestamps, so a player moved
/// between layers sees them continue.
@Suite struct VP8LayerAlignmentTests {
    /// A packet of layer `ssrc` whose descriptor has a 15-bit PictureID and a TL0PICIDX.
    func packet(ssrc: UInt32, timestamp: UInt32, pictureID: UInt16, tl0: UInt8, keyframe: Bool = false) -> [UInt8] {
        let descriptor = VP8PayloadDescriptor(startOfPartition: true, pictureID: pictureID, tl0PictureIndex: tl0, temporalLayerIndex: 0)
        let vp8 = descriptor.serialize() + [keyframe ? 0x00 : 0x01, 0, 0]
        return RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: timestamp, ssrc: ssrc, payload: vp8).serialize()
    }

    func read(_ bytes: [UInt8]) throws -> (UInt16?, UInt8?) {
        let p = try RTPPacket(parsing: bytes)
        let d = try VP8PayloadDescriptor.parse(p.payload).0
        return (d.pictureID, d.tl0PictureIndex)
    }

    @Test func aLayersNumbersFollowTheFirstLayersFromItsKeyframe() throws {
        var alignment = VP8LayerAlignment()
        // Layer 1 (the reference) from PictureID 32_760 (wrapping), layer 2 from 9_000; their TL0s 250 and 7.
        var outputs: [(UInt16?, UInt8?)] = []
        for frame in 0..<12 {
            let ts = UInt32(frame) * 3000
            var one = packet(ssrc: 1, timestamp: ts, pictureID: (32_760 + UInt16(frame)) & 0x7FFF, tl0: 250 &+ UInt8(frame))
            alignment.align(&one, payloadOffset: 12, ssrc: 1, timestamp: ts, startsKeyframe: false)
            #expect(try read(one) == ((32_760 + UInt16(frame)) & 0x7FFF, 250 &+ UInt8(frame)), "the reference is left as it is")
            var two = packet(ssrc: 2, timestamp: ts, pictureID: 9_000 + UInt16(frame), tl0: 7 + UInt8(frame), keyframe: frame == 0)
            alignment.align(&two, payloadOffset: 12, ssrc: 2, timestamp: ts, startsKeyframe: frame == 0)
            outputs.append(try read(two))
        }
        #expect(outputs.map(\.0) == (0..<12).map { (32_760 + UInt16($0)) & 0x7FFF }, "\(outputs)")
        #expect(outputs.map(\.1) == (0..<12).map { 250 &+ UInt8($0) })
        // Layer 2 skipped two frames and sends a keyframe: its offset is taken again there.
        var one = packet(ssrc: 1, timestamp: 40 * 3000, pictureID: 100, tl0: 50)
        alignment.align(&one, payloadOffset: 12, ssrc: 1, timestamp: 40 * 3000, startsKeyframe: false)
        var two = packet(ssrc: 2, timestamp: 40 * 3000, pictureID: 9_020, tl0: 30, keyframe: true)
        alignment.align(&two, payloadOffset: 12, ssrc: 2, timestamp: 40 * 3000, startsKeyframe: true)
        #expect(try read(two) == (100, 50))
        // Bytes that are not a VP8 descriptor with those fields are left alone.
        var plain = RTPPacket(payloadType: 96, sequenceNumber: 2, timestamp: 0, ssrc: 2, payload: [0x10, 1, 2]).serialize()
        let before = plain
        alignment.align(&plain, payloadOffset: 12, ssrc: 2, timestamp: 0, startsKeyframe: false)
        #expect(plain == before)
        // A descriptor cut short (its PictureID's second byte and the TL0PICIDX missing): untouched.
        var truncated: [UInt8] = Array(plain.prefix(12)) + [0x90, 0xC0, 0x80]
        let cut = truncated
        alignment.align(&truncated, payloadOffset: 12, ssrc: 2, timestamp: 0, startsKeyframe: false)
        #expect(truncated == cut)
    }
}
