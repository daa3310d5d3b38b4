/// Where the parts of an RTP packet lie; computed once by a full validation pass and shared by
/// `RTPPacket` (which copies) and `RTPHeaderView` (which does not).
struct RTPLayout {
    enum ExtensionKind { case none, oneByte, twoByte, other }

    var csrcCount: Int
    var extensionKind: ExtensionKind
    var extensionProfile: UInt16
    /// The elements area of the extension block (after its 4-byte header).
    var extensionRange: Range<Int>
    var headerLength: Int
    var payloadRange: Range<Int>
    var paddingLength: Int

    static func parse(_ p: UnsafeRawBufferPointer) throws(RTPError) -> RTPLayout {
        let n = p.count
        guard n >= 12 else { throw RTPError(offset: n, "truncated fixed header: need 12 bytes, have \(n)") }
        let b0 = p[0]
        guard b0 >> 6 == 2 else { throw RTPError(offset: 0, "version \(b0 >> 6), expected 2") }
        let csrcCount = Int(b0 & 0x0F)
        var pos = 12
        guard n >= pos + 4 * csrcCount else {
            throw RTPError(offset: n, "truncated CSRC list: \(csrcCount) CSRCs need \(pos + 4 * csrcCount) bytes, have \(n)")
        }
        pos += 4 * csrcCount
        var kind = ExtensionKind.none
        var profile: UInt16 = 0
        var extRange = pos..<pos
        if b0 & 0x10 != 0 {
            guard n >= pos + 4 else { throw RTPError(offset: n, "truncated extension header at \(pos)") }
            profile = loadBE16(p, pos)
            let words = Int(loadBE16(p, pos + 2))
            let start = pos + 4
            guard n >= start + 4 * words else {
                throw RTPError(offset: pos + 2, "extension length \(words) words overruns the packet (\(n) bytes)")
            }
            extRange = start..<(start + 4 * words)
            switch profile {
            case ExtensionProfileID.oneByte: kind = .oneByte
            case ExtensionProfileID.twoByte: kind = .twoByte
            default: kind = .other
            }
            if kind == .oneByte || kind == .twoByte {
                var it = ExtensionElementIterator(buffer: p, twoByte: kind == .twoByte, position: extRange.lowerBound, end: extRange.upperBound)
                while try it.next() != nil {}
            }
            pos = extRange.upperBound
        }
        var padding = 0
        if b0 & 0x20 != 0 {
            guard n > pos else { throw RTPError(offset: n, "padding bit set but no padding byte after the header") }
            padding = Int(p[n - 1])
            guard padding >= 1 else { throw RTPError(offset: n - 1, "padding length 0 (must count itself)") }
            guard padding <= n - pos else {
                throw RTPError(offset: n - 1, "padding length \(padding) exceeds the \(n - pos) bytes after the header")
            }
        }
        return RTPLayout(csrcCount: csrcCount, extensionKind: kind, extensionProfile: profile,
                         extensionRange: extRange, headerLength: pos,
                         payloadRange: pos..<(n - padding), paddingLength: padding)
    }
}
