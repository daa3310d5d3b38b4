/// One RTCP packet of a compound (RFC 3550 §6, RFC 4585 feedback, RFC 5104 FIR, REMB,
/// transport-wide congestion control feedback). Packets this module does not model are kept
/// as `.unknown` so a compound round-trips.
public enum RTCPPacket: Sendable, Equatable {
    case senderReport(SenderReport)
    case receiverReport(ReceiverReport)
    case sourceDescription(SourceDescription)
    case goodbye(Goodbye)
    case nack(GenericNACK)
    case pli(senderSSRC: UInt32, mediaSSRC: UInt32)
    case fir(FullIntraRequest)
    case remb(REMB)
    case transportCC(TransportCCFeedback)
    /// Any other packet: its type, the 5-bit count/format field, and the body after the 4-byte
    /// header with RTCP padding removed.
    case unknown(packetType: UInt8, count: UInt8, body: [UInt8])

    enum PacketType {
        static let senderReport: UInt8 = 200
        static let receiverReport: UInt8 = 201
        static let sourceDescription: UInt8 = 202
        static let goodbye: UInt8 = 203
        static let transportFeedback: UInt8 = 205   // RTPFB, RFC 4585
        static let payloadFeedback: UInt8 = 206     // PSFB, RFC 4585
    }

    enum Format {
        static let nack: UInt8 = 1
        static let transportCC: UInt8 = 15
        static let pli: UInt8 = 1
        static let fir: UInt8 = 4
        static let applicationLayer: UInt8 = 15     // REMB rides in AFB
    }

    /// Parses a compound packet: every packet must have version 2, a length (in 32-bit words
    /// minus one) inside the datagram and valid padding. Errors carry the offset in `bytes`.
    public static func parseCompound(_ bytes: [UInt8]) throws(RTCPError) -> [RTCPPacket] {
        guard !bytes.isEmpty else { throw RTCPError(offset: 0, "empty RTCP packet") }
        var packets: [RTCPPacket] = []
        var offset = 0
        while offset < bytes.count {
            let left = bytes.count - offset
            guard left >= 4 else { throw RTCPError(offset: offset, "truncated header: need 4 bytes, have \(left)") }
            let b0 = bytes[offset]
            guard b0 >> 6 == 2 else { throw RTCPError(offset: offset, "version \(b0 >> 6), expected 2") }
            let count = b0 & 0x1F
            let type = bytes[offset + 1]
            let words = Int(bytes[offset + 2]) << 8 | Int(bytes[offset + 3])
            let total = (words + 1) * 4
            guard total <= left else {
                throw RTCPError(offset: offset + 2, "length \(words) (\(total) bytes) overruns the \(left) bytes left")
            }
            let bodyStart = offset + 4
            var bodyEnd = offset + total
            if b0 & 0x20 != 0 {
                guard bodyEnd > bodyStart else { throw RTCPError(offset: offset, "padding bit set on an empty packet") }
                let pad = Int(bytes[bodyEnd - 1])
                guard pad >= 1, pad <= bodyEnd - bodyStart else {
                    throw RTCPError(offset: bodyEnd - 1, "padding length \(pad) invalid for a \(bodyEnd - bodyStart)-byte body")
                }
                bodyEnd -= pad
            }
            var r = RTCPReader(bytes, from: bodyStart, to: bodyEnd)
            packets.append(try parseBody(type: type, count: count, &r))
            offset += total
        }
        return packets
    }

    static func parseBody(type: UInt8, count: UInt8, _ r: inout RTCPReader) throws(RTCPError) -> RTCPPacket {
        switch (type, count) {
        case (PacketType.senderReport, _):
            return .senderReport(try SenderReport(count: count, &r))
        case (PacketType.receiverReport, _):
            return .receiverReport(try ReceiverReport(count: count, &r))
        case (PacketType.sourceDescription, _):
            return .sourceDescription(try SourceDescription(count: count, &r))
        case (PacketType.goodbye, _):
            return .goodbye(try Goodbye(count: count, &r))
        case (PacketType.transportFeedback, Format.nack):
            return .nack(try GenericNACK(&r))
        case (PacketType.transportFeedback, Format.transportCC):
            return .transportCC(try TransportCCFeedback(&r))
        case (PacketType.payloadFeedback, Format.pli):
            let sender = try r.u32("PLI sender SSRC")
            let media = try r.u32("PLI media SSRC")
            guard r.isAtEnd else { throw r.error("PLI carries \(r.remaining) unexpected FCI bytes") }
            return .pli(senderSSRC: sender, mediaSSRC: media)
        case (PacketType.payloadFeedback, Format.fir):
            return .fir(try FullIntraRequest(&r))
        case (PacketType.payloadFeedback, Format.applicationLayer) where REMB.matches(r):
            return .remb(try REMB(&r))
        default:
            return .unknown(packetType: type, count: count, body: try r.take(r.remaining, "body"))
        }
    }

    public static func serializeCompound(_ packets: [RTCPPacket]) -> [UInt8] {
        var out: [UInt8] = []
        for p in packets { p.append(to: &out) }
        return out
    }

    public func serialize() -> [UInt8] {
        var out: [UInt8] = []
        append(to: &out)
        return out
    }

    /// Appends this packet's wire form.
    public func append(to out: inout [UInt8]) {
        // Body writers pad to 32-bit boundaries of `out`, which must therefore start aligned.
        guard out.count % 4 == 0 else {
            out.append(contentsOf: serialize())
            return
        }
        switch self {
        case .senderReport(let sr):
            Self.write(type: PacketType.senderReport, count: UInt8(min(sr.reports.count, 31)), into: &out) { sr.appendBody(to: &$0) }
        case .receiverReport(let rr):
            Self.write(type: PacketType.receiverReport, count: UInt8(min(rr.reports.count, 31)), into: &out) { rr.appendBody(to: &$0) }
        case .sourceDescription(let sdes):
            Self.write(type: PacketType.sourceDescription, count: UInt8(min(sdes.chunks.count, 31)), into: &out) { sdes.appendBody(to: &$0) }
        case .goodbye(let bye):
            Self.write(type: PacketType.goodbye, count: UInt8(min(bye.ssrcs.count, 31)), into: &out) { bye.appendBody(to: &$0) }
        case .nack(let nack):
            Self.write(type: PacketType.transportFeedback, count: Format.nack, into: &out) { nack.appendBody(to: &$0) }
        case .transportCC(let fb):
            Self.write(type: PacketType.transportFeedback, count: Format.transportCC, into: &out) { fb.appendBody(to: &$0) }
        case .pli(let sender, let media):
            Self.write(type: PacketType.payloadFeedback, count: Format.pli, into: &out) {
                $0.appendBE(sender); $0.appendBE(media)
            }
        case .fir(let fir):
            Self.write(type: PacketType.payloadFeedback, count: Format.fir, into: &out) { fir.appendBody(to: &$0) }
        case .remb(let remb):
            Self.write(type: PacketType.payloadFeedback, count: Format.applicationLayer, into: &out) { remb.appendBody(to: &$0) }
        case .unknown(let type, let count, let body):
            Self.write(type: type, count: count & 0x1F, into: &out) { $0.append(contentsOf: body) }
        }
    }

    /// Writes header + body; a body that is not whole words gets RTCP padding (P bit, zeros, count).
    static func write(type: UInt8, count: UInt8, into out: inout [UInt8], body: (inout [UInt8]) -> Void) {
        let start = out.count
        out.append(contentsOf: [0x80 | count, type, 0, 0])
        body(&out)
        let unaligned = (out.count - start) % 4
        if unaligned != 0 {
            let pad = 4 - unaligned
            out.append(contentsOf: repeatElement(0, count: pad - 1))
            out.append(UInt8(pad))
            out[start] |= 0x20
        }
        // Lengths beyond 16 bits cannot be expressed; callers keep packets far below that.
        let words = min((out.count - start) / 4 - 1, Int(UInt16.max))
        out[start + 2] = UInt8(truncatingIfNeeded: words >> 8)
        out[start + 3] = UInt8(truncatingIfNeeded: words)
    }
}
