/// The little of RTP and RTCP that SRTP needs to read, bounds-checked (RFC 3550 §5.1, §6.4).
enum PacketLayout {
    static let rtpFixedHeader = 12
    static let rtcpFixedHeader = 8

    /// Length of the RTP header including CSRCs and the header extension, which SRTP leaves in
    /// the clear. `available` is the number of bytes the header may occupy (packet minus tag).
    @inline(__always)
    static func rtpHeaderLength(_ p: UnsafeRawPointer, available: Int, packetLength: Int) throws(SRTPError) -> Int {
        guard available >= rtpFixedHeader else {
            throw SRTPError(.tooShort, "\(packetLength) bytes, RTP needs at least \(packetLength - available + rtpFixedHeader)")
        }
        let b0 = p.load(as: UInt8.self)
        guard b0 >> 6 == 2 else {
            throw SRTPError(.badHeader, "RTP version \(b0 >> 6) at offset 0, expected 2")
        }
        var header = rtpFixedHeader + 4 * Int(b0 & 0x0F)
        if b0 & 0x10 != 0 {
            // Extension: 16-bit profile, 16-bit length in 32-bit words, then the words.
            guard header + 4 <= available else {
                throw SRTPError(.badHeader, "RTP extension header at offset \(header) runs past the payload end \(available)")
            }
            let words = Int(p.load(fromByteOffset: header + 2, as: UInt8.self)) << 8
                | Int(p.load(fromByteOffset: header + 3, as: UInt8.self))
            header += 4 + 4 * words
        }
        guard header <= available else {
            throw SRTPError(.badHeader, "RTP header (CSRCs/extension) is \(header) bytes, only \(available) before the trailer")
        }
        return header
    }

    @inline(__always)
    static func checkRTCPHeader(_ p: UnsafeRawPointer, available: Int, packetLength: Int) throws(SRTPError) {
        guard available >= rtcpFixedHeader else {
            throw SRTPError(.tooShort, "\(packetLength) bytes, RTCP needs at least \(packetLength - available + rtcpFixedHeader)")
        }
        let b0 = p.load(as: UInt8.self)
        guard b0 >> 6 == 2 else {
            throw SRTPError(.badHeader, "RTCP version \(b0 >> 6) at offset 0, expected 2")
        }
    }

    @inline(__always)
    static func load16(_ p: UnsafeRawPointer, _ offset: Int) -> UInt16 {
        UInt16(p.load(fromByteOffset: offset, as: UInt8.self)) << 8
            | UInt16(p.load(fromByteOffset: offset + 1, as: UInt8.self))
    }

    @inline(__always)
    static func load32(_ p: UnsafeRawPointer, _ offset: Int) -> UInt32 {
        UInt32(bigEndian: p.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }

    @inline(__always)
    static func store32(_ p: UnsafeMutableRawPointer, _ offset: Int, _ value: UInt32) {
        p.storeBytes(of: value.bigEndian, toByteOffset: offset, as: UInt32.self)
    }
}
