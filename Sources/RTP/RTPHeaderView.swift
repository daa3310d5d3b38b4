/// A validated, non-copying view of an RTP packet in memory, for the forwarding hot path.
/// It borrows `bytes`: use it only while that memory is alive and unchanged.
public struct RTPHeaderView {
    public let bytes: UnsafeRawBufferPointer
    let layout: RTPLayout

    /// Validates the whole header (CSRCs, extension block and its elements, padding).
    public init(_ bytes: UnsafeRawBufferPointer) throws(RTPError) {
        self.layout = try RTPLayout.parse(bytes)
        self.bytes = bytes
    }

    public var marker: Bool { bytes[1] & 0x80 != 0 }
    public var payloadType: UInt8 { bytes[1] & 0x7F }
    public var sequenceNumber: UInt16 { loadBE16(bytes, 2) }
    public var timestamp: UInt32 { loadBE32(bytes, 4) }
    public var ssrc: UInt32 { loadBE32(bytes, 8) }
    public var csrcCount: Int { layout.csrcCount }
    public func csrc(at index: Int) -> UInt32? {
        guard index >= 0 && index < layout.csrcCount else { return nil }
        return loadBE32(bytes, 12 + 4 * index)
    }
    /// Fixed header + CSRCs + extension block.
    public var headerLength: Int { layout.headerLength }
    /// Byte range of the payload (padding excluded).
    public var payloadRange: Range<Int> { layout.payloadRange }
    public var paddingLength: Int { layout.paddingLength }
    public var payload: UnsafeRawBufferPointer { UnsafeRawBufferPointer(rebasing: bytes[layout.payloadRange]) }
    public var hasExtensionBlock: Bool { layout.extensionKind != .none }

    /// The data of the first RFC 8285 element with this id (nil for `.other` blocks).
    public func `extension`(id: UInt8) -> UnsafeRawBufferPointer? {
        guard let r = extensionRange(id: id) else { return nil }
        return UnsafeRawBufferPointer(rebasing: bytes[r])
    }

    /// Byte range (within `bytes`) of the first RFC 8285 element with this id; usable to rewrite
    /// an element in place (e.g. a transport-cc sequence number).
    public func extensionRange(id: UInt8) -> Range<Int>? {
        let two: Bool
        switch layout.extensionKind {
        case .oneByte: two = false
        case .twoByte: two = true
        case .none, .other: return nil
        }
        var it = ExtensionElementIterator(buffer: bytes, twoByte: two, position: layout.extensionRange.lowerBound,
                                          end: layout.extensionRange.upperBound)
        // Elements were validated by init, so the iterator cannot throw here.
        while let e = try? it.next() {
            if e.id == id { return e.start..<(e.start + e.count) }
        }
        return nil
    }
}

/// Validated in-place rewrite of the fixed header fields a relay changes when forwarding.
public enum RTPRewrite {
    /// Sets the given fields (nil leaves one alone) after validating the whole header.
    /// Throws for a malformed packet or a payload type above 127; `bytes` is unchanged then.
    public static func set(ssrc: UInt32? = nil, payloadType: UInt8? = nil, sequenceNumber: UInt16? = nil,
                           timestamp: UInt32? = nil, in bytes: inout [UInt8]) throws(RTPError) {
        let result: Result<Void, RTPError> = bytes.withUnsafeMutableBytes { p in
            do throws(RTPError) {
                try set(ssrc: ssrc, payloadType: payloadType, sequenceNumber: sequenceNumber, timestamp: timestamp, in: p)
                return .success(())
            } catch {
                return .failure(error)
            }
        }
        try result.get()
    }

    /// The same on raw memory (e.g. a receive buffer), without copying.
    public static func set(ssrc: UInt32? = nil, payloadType: UInt8? = nil, sequenceNumber: UInt16? = nil,
                           timestamp: UInt32? = nil, in p: UnsafeMutableRawBufferPointer) throws(RTPError) {
        if let pt = payloadType, pt > 127 {
            throw RTPError(offset: 1, "payload type \(pt) does not fit in 7 bits")
        }
        _ = try RTPLayout.parse(UnsafeRawBufferPointer(p))
        if let pt = payloadType { p[1] = (p[1] & 0x80) | pt }
        if let s = sequenceNumber { store16(s, p, 2) }
        if let t = timestamp { store32(t, p, 4) }
        if let s = ssrc { store32(s, p, 8) }
    }

    @inline(__always) static func store16(_ v: UInt16, _ p: UnsafeMutableRawBufferPointer, _ i: Int) {
        p[i] = UInt8(truncatingIfNeeded: v >> 8); p[i + 1] = UInt8(truncatingIfNeeded: v)
    }

    @inline(__always) static func store32(_ v: UInt32, _ p: UnsafeMutableRawBufferPointer, _ i: Int) {
        p[i] = UInt8(truncatingIfNeeded: v >> 24); p[i + 1] = UInt8(truncatingIfNeeded: v >> 16)
        p[i + 2] = UInt8(truncatingIfNeeded: v >> 8); p[i + 3] = UInt8(truncatingIfNeeded: v)
    }
}
