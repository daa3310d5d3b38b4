import RTP
import RTPMedia

/// Where a VP8 packet's PictureID and TL0PICIDX lie (RFC 7741 §4.2), from the start of its
/// payload, and their values; nil for a descriptor without a PictureID or cut short.
struct VP8Numbers: Equatable {
    /// Offset of the PictureID in the payload; it is 15-bit when `long`, with TL0PICIDX (if
    /// any) right after it.
    let offset: Int
    let long: Bool
    let pictureID: UInt16
    let tl0: UInt8?
    /// Its temporal layer (nil: the stream has none), layer sync bit, and whether it starts a frame.
    let layer: UInt8?
    let sync: Bool
    let startsFrame: Bool

    /// Its place among temporal layers (nil: the stream has none).
    var temporalMark: TemporalMark? { layer.map { TemporalMark(layer: $0, sync: sync, startsFrame: startsFrame) } }

    init?(payload: UnsafeRawBufferPointer) {
        guard let (descriptor, _) = try? VP8PayloadDescriptor.parse(payload), let pictureID = descriptor.pictureID else { return nil }
        offset = 2   // after the first byte and the extension byte
        long = descriptor.longPictureID
        self.pictureID = pictureID
        tl0 = descriptor.tl0PictureIndex
        layer = descriptor.temporalLayerIndex
        sync = descriptor.layerSync
        startsFrame = descriptor.startsFrame
    }
}

/// One player's VP8 PictureID and TL0PICIDX when the relay moves it between simulcast layers:
/// each layer numbers its pictures on its own, so at a switch (a keyframe of the new layer) the
/// numbers are offset to continue from the last ones the player got — Chromium's frame buffer
/// otherwise drops the new layer's frames until a keyframe with numbers it accepts (a freeze of
/// seconds was measured). Sans-I/O; the relay writes `edit` into each packet for this player.
struct VP8Numbering {
    private var offsets: (pictureID: UInt16, tl0: UInt8) = (0, 0)
    private var last: (pictureID: UInt16, tl0: UInt8?)?
    /// The PictureID of the last picture not sent (a temporal layer the player does not get).
    private var lastDropped: UInt16?
    /// The PictureID offsets of the pictures last sent, newest last: a resend of one carries the
    /// number it went out with, though pictures dropped since moved the offset on (with another,
    /// its frame's packets disagree and the receiver throws the frame away).
    private var recent: [(pictureID: UInt16, offset: UInt16)] = []
    static let remembered = 64

    /// The player now gets another layer, from this keyframe on.
    mutating func switched(to keyframe: VP8Numbers) {
        guard let last else { return }
        offsets.pictureID = last.pictureID &+ 1 &- keyframe.pictureID
        if let lastTL0 = last.tl0, let tl0 = keyframe.tl0 { offsets.tl0 = lastTL0 &+ 1 &- tl0 }
    }

    /// A packet of this picture is not sent to the player: the pictures after it are numbered
    /// on without a gap (Chromium's VP8 reference finder waits for a missing PictureID; LiveKit
    /// and mediasoup close the gap the same way).
    mutating func dropped(_ numbers: VP8Numbers) {
        guard lastDropped != numbers.pictureID else { return }
        lastDropped = numbers.pictureID
        offsets.pictureID &-= 1
    }

    /// The bytes this player gets for `numbers` (its PictureID, then its TL0PICIDX if any).
    mutating func edit(_ numbers: VP8Numbers) -> RTPHeaderPatch.PayloadEdit {
        if recent.last?.pictureID != numbers.pictureID {
            recent.append((numbers.pictureID, offsets.pictureID))
            if recent.count > Self.remembered { recent.removeFirst(recent.count - Self.remembered) }
        }
        return patch(numbers, pictureOffset: offsets.pictureID)
    }

    private mutating func patch(_ numbers: VP8Numbers, pictureOffset: UInt16) -> RTPHeaderPatch.PayloadEdit {
        let mask: UInt16 = numbers.long ? 0x7FFF : 0x7F
        let pictureID = (numbers.pictureID &+ pictureOffset) & mask
        let tl0 = numbers.tl0.map { $0 &+ offsets.tl0 }
        last = (pictureID, tl0)
        if numbers.long {
            return .init(offset: numbers.offset, count: tl0 == nil ? 2 : 3,
                         bytes: (0x80 | UInt8(pictureID >> 8), UInt8(truncatingIfNeeded: pictureID), tl0 ?? 0))
        }
        return .init(offset: numbers.offset, count: tl0 == nil ? 1 : 2, bytes: (UInt8(pictureID), tl0 ?? 0, 0))
    }

    /// The bytes for a packet sent again (a resend or padding): the numbers it went out with
    /// (the current offsets for a picture too old to remember), without moving what counts as
    /// the last numbers.
    func resend(_ numbers: VP8Numbers) -> RTPHeaderPatch.PayloadEdit {
        var copy = self
        let offset = recent.last { $0.pictureID == numbers.pictureID }?.offset ?? offsets.pictureID
        return copy.patch(numbers, pictureOffset: offset)
    }
}
