import RTPMedia

/// VP8 PictureID and TL0PICIDX across a publisher's simulcast layers. Each layer numbers its
/// pictures on its own, so a player moved from one layer to another would see both jump —
/// backwards as often as not — and Chromium's frame buffer then drops the new layer's frames
/// until a keyframe with numbers it accepts (a freeze of seconds was measured at a switch). The
/// layers encode the same captured frames (one RTP timestamp per frame across layers), so each
/// layer gets the offset that maps its numbers onto the reference layer's (the first seen) at
/// equal timestamps, taken again at each of its keyframes; every layer's packets are rewritten
/// in place before they are kept or forwarded, so all players and resends see the same bytes.
/// Players moving between layers then see numbers that continue (a step of a frame or two
/// when a layer skipped some). Relay loop only.
struct VP8LayerAlignment {
    /// The reference layer's recent frames: timestamp → (PictureID, TL0PICIDX).
    private var reference: UInt32?
    private var recent: [(timestamp: UInt32, pictureID: UInt16?, tl0: UInt8?)] = []
    private var offsets: [UInt32: (pictureID: UInt16, tl0: UInt8)] = [:]
    static let recentFrames = 64

    /// Rewrites the descriptor of one VP8 packet (`bytes`, its payload at `payloadOffset`) of
    /// layer `ssrc`. `startsKeyframe`: the first packet of a keyframe (its offset is taken then).
    mutating func align(_ bytes: inout [UInt8], payloadOffset: Int, ssrc: UInt32, timestamp: UInt32, startsKeyframe: Bool) {
        guard let fields = Self.fields(bytes, at: payloadOffset) else { return }
        let pictureID = fields.pictureID.map { Self.readPictureID(bytes, at: $0) }
        let tl0 = fields.tl0.map { bytes[$0] }
        if reference == nil { reference = ssrc }
        if ssrc == reference {
            if recent.last?.timestamp != timestamp {
                recent.append((timestamp, pictureID, tl0))
                if recent.count > Self.recentFrames { recent.removeFirst(recent.count - Self.recentFrames) }
            }
            return
        }
        if startsKeyframe || offsets[ssrc] == nil, let match = recent.last(where: { $0.timestamp == timestamp }) {
            offsets[ssrc] = ((match.pictureID ?? 0) &- (pictureID ?? 0), (match.tl0 ?? 0) &- (tl0 ?? 0))
        }
        guard let offset = offsets[ssrc] else { return }
        if let at = fields.pictureID, let id = pictureID {
            let out = (id &+ offset.pictureID) & (fields.longPictureID ? 0x7FFF : 0x7F)
            if fields.longPictureID {
                bytes[at] = 0x80 | UInt8(truncatingIfNeeded: out >> 8)
                bytes[at + 1] = UInt8(truncatingIfNeeded: out)
            } else {
                bytes[at] = UInt8(truncatingIfNeeded: out)
            }
        }
        if let at = fields.tl0, let value = tl0 { bytes[at] = value &+ offset.tl0 }
    }

    /// Where the PictureID (and whether it is 15-bit) and TL0PICIDX sit in `bytes`, if present.
    private static func fields(_ bytes: [UInt8], at start: Int) -> (pictureID: Int?, longPictureID: Bool, tl0: Int?)? {
        guard start + 1 < bytes.count, bytes[start] & 0x80 != 0 else { return nil }
        let x = bytes[start + 1]
        var i = start + 2
        var pictureID: Int?, long = false, tl0: Int?
        if x & 0x80 != 0 {
            guard i < bytes.count else { return nil }
            long = bytes[i] & 0x80 != 0
            pictureID = i
            i += long ? 2 : 1
        }
        if x & 0x40 != 0 {
            tl0 = i
            i += 1
        }
        guard i <= bytes.count else { return nil }
        return (pictureID, long, tl0)
    }

    private static func readPictureID(_ bytes: [UInt8], at i: Int) -> UInt16 {
        bytes[i] & 0x80 != 0 ? UInt16(bytes[i] & 0x7F) << 8 | UInt16(bytes[i + 1]) : UInt16(bytes[i])
    }
}
