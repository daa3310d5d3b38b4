/// What a forwarder changes in a packet for one destination: the fixed header fields, and the
/// header extensions — the source's elements are dropped (their ids were negotiated with the
/// source), the destination's own mid, video orientation (copied from the source under the
/// destination's id) and transport-wide sequence placeholder are written instead.
public struct RTPHeaderPatch: Sendable {
    public var ssrc: UInt32
    public var sequenceNumber: UInt16
    public var timestamp: UInt32
    /// 7 bits; higher bits are dropped.
    public var payloadType: UInt8
    /// The destination's id for urn:ietf:params:rtp-hdrext:sdes:mid and its value (nil: none).
    public var midID: UInt8?
    public var mid: [UInt8]
    /// The id urn:3gpp:video-orientation has in the source packet, and the one the destination
    /// negotiated (nil: the element is not forwarded).
    public var orientationSourceID: UInt8?
    public var orientationID: UInt8?
    /// The destination's transport-wide sequence number id: a 2-byte zero placeholder is
    /// written, to be stamped as the packet leaves.
    public var transportCCID: UInt8?
    /// The destination's abs-send-time id: a 3-byte zero placeholder is written, to be stamped
    /// with the send time as the packet leaves (a receive-side estimator reads it: aiortc).
    public var absSendTimeID: UInt8?
    /// Up to three payload bytes to replace, from `offset` into the payload (a relay's
    /// per-destination VP8 PictureID/TL0PICIDX); ignored where the payload is shorter.
    public var payloadEdit: PayloadEdit?

    public struct PayloadEdit: Sendable, Equatable {
        public var offset: Int
        public var count: Int
        public var bytes: (UInt8, UInt8, UInt8)

        public init(offset: Int, count: Int, bytes: (UInt8, UInt8, UInt8)) {
            self.offset = offset
            self.count = max(0, min(3, count))
            self.bytes = bytes
        }

        public static func == (a: Self, b: Self) -> Bool {
            a.offset == b.offset && a.count == b.count && a.bytes == b.bytes
        }
    }

    public init(ssrc: UInt32, sequenceNumber: UInt16, timestamp: UInt32, payloadType: UInt8, midID: UInt8? = nil,
                mid: [UInt8] = [], orientationSourceID: UInt8? = nil, orientationID: UInt8? = nil, transportCCID: UInt8? = nil) {
        self.ssrc = ssrc
        self.sequenceNumber = sequenceNumber
        self.timestamp = timestamp
        self.payloadType = payloadType
        self.midID = midID
        self.mid = mid
        self.orientationSourceID = orientationSourceID
        self.orientationID = orientationID
        self.transportCCID = transportCCID
    }
}

extension RTPHeaderView {
    /// Where `write` put things.
    public struct Written: Sendable, Equatable {
        public var length: Int
        /// Offset of the transport-wide sequence placeholder's 2 data bytes.
        public var transportCCOffset: Int?
        /// Offset of the abs-send-time placeholder's 3 data bytes.
        public var absSendTimeOffset: Int?
    }

    /// Writes this packet as the destination of `patch` receives it into `out`, without
    /// parsing it into an `RTPPacket`: the same bytes `RTPPacket(parsing:)` → set the fields,
    /// replace the extensions → `serialize()` gives (one-byte form when every element fits it,
    /// else two-byte; padding as zeros and the count; CSRCs, marker and payload kept).
    /// `rtxOriginalSequence`: write an RFC 4588 RTX packet instead — that number (the original
    /// as the destination knew it) as the first two payload bytes, and no padding.
    /// Nil when `out` is too small. No allocation.
    public func write(_ patch: RTPHeaderPatch, rtxOriginalSequence: UInt16? = nil,
                      into out: UnsafeMutableRawBufferPointer) -> Written? {
        patch.mid.withUnsafeBytes { mid in write(patch, mid: mid, rtxOriginalSequence: rtxOriginalSequence, into: out) }
    }

    /// The same, with the mid element's value taken from `mid` (`patch.mid` is not read): a
    /// forwarder that keeps each destination's mid inline in a flat record writes from there,
    /// without an array per destination.
    public func write(_ patch: RTPHeaderPatch, mid: UnsafeRawBufferPointer, rtxOriginalSequence: UInt16? = nil,
                      into out: UnsafeMutableRawBufferPointer) -> Written? {
        // The elements to write: (id, data length, source offset of the data or -1 for mid,
        // -2 for the transport-wide placeholder, -3 for the abs-send-time one).
        var ids: (UInt8, UInt8, UInt8, UInt8) = (0, 0, 0, 0)
        var lengths: (Int, Int, Int, Int) = (0, 0, 0, 0)
        var sources: (Int, Int, Int, Int) = (0, 0, 0, 0)
        var count = 0
        func add(_ id: UInt8, _ length: Int, _ source: Int) {
            switch count {
            case 0: ids.0 = id; lengths.0 = length; sources.0 = source
            case 1: ids.1 = id; lengths.1 = length; sources.1 = source
            case 2: ids.2 = id; lengths.2 = length; sources.2 = source
            default: ids.3 = id; lengths.3 = length; sources.3 = source
            }
            count += 1
        }
        if let id = patch.midID { add(id, mid.count, -1) }
        if let output = patch.orientationID, let sourceID = patch.orientationSourceID, let r = extensionRange(id: sourceID) {
            add(output, r.count, r.lowerBound)
        }
        if let id = patch.transportCCID { add(id, 2, -2) }
        if let id = patch.absSendTimeID { add(id, 3, -3) }
        func element(_ i: Int) -> (id: UInt8, length: Int, source: Int) {
            switch i {
            case 0: return (ids.0, lengths.0, sources.0)
            case 1: return (ids.1, lengths.1, sources.1)
            case 2: return (ids.2, lengths.2, sources.2)
            default: return (ids.3, lengths.3, sources.3)
            }
        }
        var oneByte = true
        for i in 0..<count {
            let e = element(i)
            if !(1...14).contains(e.id) || !(1...16).contains(e.length) { oneByte = false }
        }
        var elementsSize = 0
        for i in 0..<count {
            let e = element(i)
            if oneByte { elementsSize += 1 + e.length } else if e.id != 0 && e.length <= 255 { elementsSize += 2 + e.length }
        }
        let blockSize = count == 0 ? 0 : 4 + (elementsSize + 3) / 4 * 4
        let csrcBytes = 4 * csrcCount
        let payload = payloadRange
        let rtx = rtxOriginalSequence != nil
        let padding = rtx ? 0 : paddingLength
        let headerSize = 12 + csrcBytes + blockSize
        let total = headerSize + (rtx ? 2 : 0) + payload.count + padding
        guard total <= out.count, let dst = out.baseAddress, let src = bytes.baseAddress else { return nil }

        dst.storeBytes(of: 0x80 | (padding > 0 ? 0x20 : 0) | (count > 0 ? 0x10 : 0) | UInt8(csrcCount), as: UInt8.self)
        dst.storeBytes(of: (bytes[1] & 0x80) | (patch.payloadType & 0x7F), toByteOffset: 1, as: UInt8.self)
        dst.storeBytes(of: patch.sequenceNumber.bigEndian, toByteOffset: 2, as: UInt16.self)
        dst.storeBytes(of: patch.timestamp.bigEndian, toByteOffset: 4, as: UInt32.self)
        dst.storeBytes(of: patch.ssrc.bigEndian, toByteOffset: 8, as: UInt32.self)
        if csrcBytes > 0 { (dst + 12).copyMemory(from: src + 12, byteCount: csrcBytes) }
        var pos = 12 + csrcBytes
        var ccOffset: Int?, absOffset: Int?
        if count > 0 {
            let profile: UInt16 = oneByte ? 0xBEDE : 0x1000
            dst.storeBytes(of: profile.bigEndian, toByteOffset: pos, as: UInt16.self)
            dst.storeBytes(of: UInt16((blockSize - 4) / 4).bigEndian, toByteOffset: pos + 2, as: UInt16.self)
            pos += 4
            let end = pos + blockSize - 4
            for i in 0..<count {
                let e = element(i)
                if oneByte {
                    dst.storeBytes(of: e.id << 4 | UInt8(e.length - 1), toByteOffset: pos, as: UInt8.self)
                    pos += 1
                } else {
                    guard e.id != 0 && e.length <= 255 else { continue }
                    dst.storeBytes(of: e.id, toByteOffset: pos, as: UInt8.self)
                    dst.storeBytes(of: UInt8(e.length), toByteOffset: pos + 1, as: UInt8.self)
                    pos += 2
                }
                switch e.source {
                case -1: if let b = mid.baseAddress { (dst + pos).copyMemory(from: b, byteCount: e.length) }
                case -2: (dst + pos).initializeMemory(as: UInt8.self, repeating: 0, count: e.length); ccOffset = pos
                case -3: (dst + pos).initializeMemory(as: UInt8.self, repeating: 0, count: e.length); absOffset = pos
                default: (dst + pos).copyMemory(from: src + e.source, byteCount: e.length)
                }
                pos += e.length
            }
            if end > pos { (dst + pos).initializeMemory(as: UInt8.self, repeating: 0, count: end - pos) }
            pos = end
        }
        if let osn = rtxOriginalSequence {
            dst.storeBytes(of: osn.bigEndian, toByteOffset: pos, as: UInt16.self)
            pos += 2
        }
        if !payload.isEmpty { (dst + pos).copyMemory(from: src + payload.lowerBound, byteCount: payload.count) }
        if let edit = patch.payloadEdit, edit.offset >= 0, edit.offset + edit.count <= payload.count {
            let at = pos + edit.offset
            if edit.count > 0 { dst.storeBytes(of: edit.bytes.0, toByteOffset: at, as: UInt8.self) }
            if edit.count > 1 { dst.storeBytes(of: edit.bytes.1, toByteOffset: at + 1, as: UInt8.self) }
            if edit.count > 2 { dst.storeBytes(of: edit.bytes.2, toByteOffset: at + 2, as: UInt8.self) }
        }
        pos += payload.count
        if padding > 0 {
            if padding > 1 { (dst + pos).initializeMemory(as: UInt8.self, repeating: 0, count: padding - 1) }
            dst.storeBytes(of: UInt8(padding), toByteOffset: pos + padding - 1, as: UInt8.self)
            pos += padding
        }
        return Written(length: pos, transportCCOffset: ccOffset, absSendTimeOffset: absOffset)
    }
}
