// Big-endian writing and bounds-checked reading shared by the RTP and RTCP codecs.

extension Array where Element == UInt8 {
    @inline(__always) mutating func appendBE(_ v: UInt16) {
        append(UInt8(truncatingIfNeeded: v >> 8)); append(UInt8(truncatingIfNeeded: v))
    }
    @inline(__always) mutating func appendBE24(_ v: UInt32) {
        append(UInt8(truncatingIfNeeded: v >> 16)); append(UInt8(truncatingIfNeeded: v >> 8))
        append(UInt8(truncatingIfNeeded: v))
    }
    @inline(__always) mutating func appendBE(_ v: UInt32) {
        append(UInt8(truncatingIfNeeded: v >> 24)); append(UInt8(truncatingIfNeeded: v >> 16))
        append(UInt8(truncatingIfNeeded: v >> 8)); append(UInt8(truncatingIfNeeded: v))
    }
    @inline(__always) mutating func appendBE(_ v: UInt64) {
        appendBE(UInt32(truncatingIfNeeded: v >> 32)); appendBE(UInt32(truncatingIfNeeded: v))
    }
    /// Appends zero bytes until the count is a multiple of 4.
    mutating func padToWord() {
        while count % 4 != 0 { append(0) }
    }
}

/// Bounds-checked cursor over a window of a byte array; every read that would run past `end`
/// throws an `RTCPError` carrying the absolute offset.
struct RTCPReader {
    let bytes: [UInt8]
    var position: Int
    let end: Int

    init(_ bytes: [UInt8], from start: Int, to end: Int) {
        self.bytes = bytes
        self.position = start
        self.end = end
    }

    var remaining: Int { end - position }
    var isAtEnd: Bool { position >= end }

    mutating func need(_ n: Int, _ what: String) throws(RTCPError) {
        if n < 0 || remaining < n {
            throw RTCPError(offset: position, "truncated \(what): need \(n) bytes, have \(Swift.max(remaining, 0))")
        }
    }

    mutating func u8(_ what: String) throws(RTCPError) -> UInt8 {
        try need(1, what)
        defer { position += 1 }
        return bytes[position]
    }

    mutating func u16(_ what: String) throws(RTCPError) -> UInt16 {
        try need(2, what)
        defer { position += 2 }
        return UInt16(bytes[position]) << 8 | UInt16(bytes[position + 1])
    }

    mutating func u24(_ what: String) throws(RTCPError) -> UInt32 {
        try need(3, what)
        defer { position += 3 }
        return UInt32(bytes[position]) << 16 | UInt32(bytes[position + 1]) << 8 | UInt32(bytes[position + 2])
    }

    mutating func u32(_ what: String) throws(RTCPError) -> UInt32 {
        try need(4, what)
        defer { position += 4 }
        return UInt32(bytes[position]) << 24 | UInt32(bytes[position + 1]) << 16
            | UInt32(bytes[position + 2]) << 8 | UInt32(bytes[position + 3])
    }

    mutating func u64(_ what: String) throws(RTCPError) -> UInt64 {
        let hi = try u32(what)
        let lo = try u32(what)
        return UInt64(hi) << 32 | UInt64(lo)
    }

    mutating func take(_ n: Int, _ what: String) throws(RTCPError) -> [UInt8] {
        try need(n, what)
        defer { position += n }
        return Array(bytes[position..<(position + n)])
    }

    mutating func skip(_ n: Int, _ what: String) throws(RTCPError) {
        try need(n, what)
        position += n
    }

    func error(_ message: String) -> RTCPError { RTCPError(offset: position, message) }
}

@inline(__always) func loadBE16(_ p: UnsafeRawBufferPointer, _ i: Int) -> UInt16 {
    UInt16(p[i]) << 8 | UInt16(p[i + 1])
}

@inline(__always) func loadBE32(_ p: UnsafeRawBufferPointer, _ i: Int) -> UInt32 {
    UInt32(p[i]) << 24 | UInt32(p[i + 1]) << 16 | UInt32(p[i + 2]) << 8 | UInt32(p[i + 3])
}
