import RTP
import RTPMedia
import Testing
@testable import Relay

/// A player's VP8 PictureID and TL0PICIDX continue across the relay's simulcast switches: each
/// layer numbers its pictures on its own, and the bytes the player gets are rewritten (in the
/// forwarded packet, RTX resends included) from the switch's keyframe on.
@Suite struct VP8NumberingTests {
    func payload(pictureID: UInt16, tl0: UInt8?, long: Bool = true) -> [UInt8] {
        VP8PayloadDescriptor(startOfPartition: true, pictureID: pictureID, longPictureID: long, tl0PictureIndex: tl0,
                             temporalLayerIndex: tl0 == nil ? nil : 0).serialize() + [0x00, 0x01, 0x02]
    }

    func numbers(_ bytes: [UInt8]) -> VP8Numbers? { bytes.withUnsafeBytes { VP8Numbers(payload: $0) } }

    /// The forwarded packet as the player receives it, its descriptor parsed.
    func forwarded(_ payload: [UInt8], edit: RTPHeaderPatch.PayloadEdit?, rtx: Bool = false) throws -> VP8PayloadDescriptor {
        let source = RTPPacket(payloadType: 96, sequenceNumber: 7, timestamp: 1, ssrc: 1, payload: payload).serialize()
        var out = [UInt8](repeating: 0, count: 1500)
        let written = try source.withUnsafeBytes { raw -> Int in
            let view = try RTPHeaderView(raw)
            var patch = RTPHeaderPatch(ssrc: 9, sequenceNumber: 100, timestamp: 2, payloadType: 97)
            patch.payloadEdit = edit
            return try #require(out.withUnsafeMutableBytes { view.write(patch, rtxOriginalSequence: rtx ? 7 : nil, into: $0) }?.length)
        }
        let packet = try RTPPacket(parsing: Array(out.prefix(written)))
        return try VP8PayloadDescriptor.parse(Array(packet.payload.dropFirst(rtx ? 2 : 0))).0
    }

    @Test func numbersContinueFromTheLastOnesAcrossASwitch() throws {
        var n = VP8Numbering()
        // On layer one: its own numbers, as they are.
        for i in 0..<3 {
            let d = try forwarded(payload(pictureID: 32_766 + UInt16(i), tl0: 200 &+ UInt8(i)),
                                  edit: n.edit(try #require(numbers(payload(pictureID: 32_766 + UInt16(i), tl0: 200 &+ UInt8(i))))))
            #expect(d.pictureID == (32_766 + UInt16(i)) & 0x7FFF && d.tl0PictureIndex == 200 &+ UInt8(i))
        }
        // Switched to layer two at its keyframe (PictureID 5000, TL0 9): the player's continue from 0 and 203.
        let key = try #require(numbers(payload(pictureID: 5000, tl0: 9)))
        n.switched(to: key)
        var d = try forwarded(payload(pictureID: 5000, tl0: 9), edit: n.edit(key))
        #expect(d.pictureID == 1 && d.tl0PictureIndex == 203, "\(d)")
        let next = try #require(numbers(payload(pictureID: 5001, tl0: 9)))
        d = try forwarded(payload(pictureID: 5001, tl0: 9), edit: n.edit(next))
        #expect(d.pictureID == 2 && d.tl0PictureIndex == 203)
        // A resend of the keyframe (on RTX) carries the same numbers and does not move them on.
        d = try forwarded(payload(pictureID: 5000, tl0: 9), edit: n.resend(key), rtx: true)
        #expect(d.pictureID == 1 && d.tl0PictureIndex == 203)
        d = try forwarded(payload(pictureID: 5002, tl0: 10), edit: n.edit(try #require(numbers(payload(pictureID: 5002, tl0: 10)))))
        #expect(d.pictureID == 3 && d.tl0PictureIndex == 204)
        // 7-bit PictureIDs wrap at 128; no TL0PICIDX: only the PictureID is written.
        var short = VP8Numbering()
        _ = short.edit(try #require(numbers(payload(pictureID: 127, tl0: nil, long: false))))
        short.switched(to: try #require(numbers(payload(pictureID: 40, tl0: nil, long: false))))
        d = try forwarded(payload(pictureID: 40, tl0: nil, long: false),
                          edit: short.edit(try #require(numbers(payload(pictureID: 40, tl0: nil, long: false)))))
        #expect(d.pictureID == 0 && !d.longPictureID && d.tl0PictureIndex == nil)
    }

    @Test func descriptorsWithoutAPictureIDOrCutShortAreNotTouched() {
        #expect(numbers([0x10, 0x00]) == nil, "no X bit")
        #expect(numbers([0x90, 0x40, 0x05]) == nil, "no PictureID")
        #expect(numbers([0x90, 0xC0, 0x80]) == nil, "cut inside the PictureID")
        #expect(numbers([0x90, 0xC0, 0x80, 0x01]) == nil, "TL0PICIDX missing")
        let seven = numbers([0x90, 0x80, 0x05])
        #expect(seven?.pictureID == 5 && seven?.long == false && seven?.tl0 == nil && seven?.offset == 2)
        // An edit beyond the payload is ignored by the writer.
        let source = RTPPacket(payloadType: 96, sequenceNumber: 1, timestamp: 1, ssrc: 1, payload: [0x90, 0x80]).serialize()
        var out = [UInt8](repeating: 0, count: 200)
        var patch = RTPHeaderPatch(ssrc: 2, sequenceNumber: 1, timestamp: 1, payloadType: 96)
        patch.payloadEdit = .init(offset: 2, count: 2, bytes: (0xFF, 0xFF, 0))
        let length = source.withUnsafeBytes { raw in out.withUnsafeMutableBytes { (try? RTPHeaderView(raw))?.write(patch, into: $0)?.length } }
        #expect(length.map { Array(out[($0 - 2)..<$0]) } == [0x90, 0x80])
    }
}
