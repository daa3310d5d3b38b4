/// Generic NACK (RTPFB FMT 1, RFC 4585 §6.2.1).
public struct GenericNACK: Sendable, Equatable, Hashable {
    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    /// Lost sequence numbers. Parsing expands each PID/BLP pair in wire order (PID, then the
    /// BLP bits from least significant). Serializing packs consecutive runs into pairs while
    /// keeping this order, so any list round-trips; pass it sorted for the tightest encoding.
    public var lostSequenceNumbers: [UInt16]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32, lostSequenceNumbers: [UInt16]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.lostSequenceNumbers = lostSequenceNumbers
    }

    init(_ r: inout RTCPReader) throws(RTCPError) {
        senderSSRC = try r.u32("NACK sender SSRC")
        mediaSSRC = try r.u32("NACK media SSRC")
        lostSequenceNumbers = []
        while !r.isAtEnd {
            let pid = try r.u16("NACK PID")
            let blp = try r.u16("NACK BLP")
            lostSequenceNumbers.append(pid)
            for bit in 0..<16 where blp & (1 << bit) != 0 {
                lostSequenceNumbers.append(pid &+ UInt16(bit + 1))
            }
        }
    }

    /// The (PID, BLP) pairs this list encodes to.
    public var pairs: [(pid: UInt16, blp: UInt16)] {
        var out: [(pid: UInt16, blp: UInt16)] = []
        var lastBit = -1
        for seq in lostSequenceNumbers {
            if let last = out.last {
                let diff = Int(seq &- last.pid)
                // Only bits above the last one set keep the decoded order equal to ours.
                if diff >= 1 && diff <= 16 && diff - 1 > lastBit {
                    out[out.count - 1].blp |= 1 << (diff - 1)
                    lastBit = diff - 1
                    continue
                }
            }
            out.append((seq, 0))
            lastBit = -1
        }
        return out
    }

    func appendBody(to out: inout [UInt8]) {
        out.appendBE(senderSSRC)
        out.appendBE(mediaSSRC)
        for p in pairs {
            out.appendBE(p.pid)
            out.appendBE(p.blp)
        }
    }
}

/// Full Intra Request (PSFB FMT 4, RFC 5104 §4.3.1).
public struct FullIntraRequest: Sendable, Equatable, Hashable {
    public struct Entry: Sendable, Equatable, Hashable {
        public var ssrc: UInt32
        /// Command sequence number; increment for each new request.
        public var sequenceNumber: UInt8

        public init(ssrc: UInt32, sequenceNumber: UInt8) {
            self.ssrc = ssrc
            self.sequenceNumber = sequenceNumber
        }
    }

    public var senderSSRC: UInt32
    /// RFC 5104 says 0; kept for round trips.
    public var mediaSSRC: UInt32
    public var entries: [Entry]

    public init(senderSSRC: UInt32, mediaSSRC: UInt32 = 0, entries: [Entry]) {
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        self.entries = entries
    }

    init(_ r: inout RTCPReader) throws(RTCPError) {
        senderSSRC = try r.u32("FIR sender SSRC")
        mediaSSRC = try r.u32("FIR media SSRC")
        entries = []
        while !r.isAtEnd {
            let ssrc = try r.u32("FIR entry SSRC")
            let seq = try r.u8("FIR entry sequence number")
            try r.skip(3, "FIR entry reserved bytes")
            entries.append(Entry(ssrc: ssrc, sequenceNumber: seq))
        }
    }

    func appendBody(to out: inout [UInt8]) {
        out.appendBE(senderSSRC)
        out.appendBE(mediaSSRC)
        for e in entries {
            out.appendBE(e.ssrc)
            out.append(e.sequenceNumber)
            out.append(contentsOf: [0, 0, 0])
        }
    }
}

/// Receiver Estimated Maximum Bitrate (PSFB FMT 15 with the "REMB" identifier,
/// draft-alvestrand-rmcat-remb). The bitrate travels as an 18-bit mantissa and 6-bit exponent.
public struct REMB: Sendable, Equatable, Hashable {
    public var senderSSRC: UInt32
    /// Bits per second. Values that need more than 18 significant bits are rounded down when
    /// serialized.
    public var bitrate: UInt64
    /// At most 255 are serialized.
    public var ssrcs: [UInt32]

    public init(senderSSRC: UInt32, bitrate: UInt64, ssrcs: [UInt32]) {
        self.senderSSRC = senderSSRC
        self.bitrate = bitrate
        self.ssrcs = ssrcs
    }

    static let identifier: [UInt8] = Array("REMB".utf8)

    /// Whether an AFB body carries the REMB identifier after the two SSRCs.
    static func matches(_ r: RTCPReader) -> Bool {
        guard r.remaining >= 12 else { return false }
        return r.bytes[(r.position + 8)..<(r.position + 12)].elementsEqual(identifier)
    }

    /// (exponent, mantissa) with mantissa < 2^18 and mantissa << exponent ≤ bitrate.
    public static func encode(bitrate: UInt64) -> (exponent: UInt8, mantissa: UInt32) {
        var exp: UInt8 = 0
        var m = bitrate
        while m >= 1 << 18 {
            m >>= 1
            exp += 1
        }
        return (exp, UInt32(m))
    }

    init(_ r: inout RTCPReader) throws(RTCPError) {
        senderSSRC = try r.u32("REMB sender SSRC")
        _ = try r.u32("REMB media SSRC")  // always 0 per the draft
        try r.skip(4, "REMB identifier")
        let count = Int(try r.u8("REMB SSRC count"))
        let at = r.position
        let field = try r.u24("REMB bitrate")
        let exp = UInt64(field >> 18)
        let mantissa = UInt64(field & 0x3FFFF)
        let bits = mantissa == 0 ? 0 : 64 - UInt64(mantissa.leadingZeroBitCount)
        guard mantissa == 0 || bits + exp <= 64 else {
            throw RTCPError(offset: at, "REMB bitrate \(mantissa)·2^\(exp) overflows 64 bits")
        }
        bitrate = mantissa == 0 ? 0 : mantissa << exp
        ssrcs = []
        for _ in 0..<count { ssrcs.append(try r.u32("REMB SSRC")) }
        guard r.isAtEnd else { throw r.error("\(r.remaining) bytes after \(count) REMB SSRCs") }
    }

    func appendBody(to out: inout [UInt8]) {
        out.appendBE(senderSSRC)
        out.appendBE(UInt32(0))
        out.append(contentsOf: Self.identifier)
        let list = ssrcs.prefix(255)
        out.append(UInt8(list.count))
        let (exp, mantissa) = Self.encode(bitrate: bitrate)
        out.appendBE24(UInt32(exp) << 18 | mantissa)
        for s in list { out.appendBE(s) }
    }
}
