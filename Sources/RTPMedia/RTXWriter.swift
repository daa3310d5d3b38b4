import RTP

/// Our RTX stream (RFC 4588) for one media SSRC: its SSRC, the rtx payload type negotiated for
/// each media payload type, and its sequence counter. The one place RTX packets are written:
/// a retransmission of a packet we sent, of a packet a relay forwards (both through
/// `RTPHeaderView.write`), and bandwidth-probe padding. Sans-I/O; the owner's loop only.
public struct RTXWriter: Sendable {
    public let ssrc: UInt32
    /// Media payload type → the rtx payload type negotiated for it (empty: resend as is).
    public var payloadTypes: [UInt8: UInt8]
    public private(set) var sequence: UInt16

    public init(ssrc: UInt32, payloadTypes: [UInt8: UInt8] = [:], sequence: UInt16 = .random(in: 0...UInt16.max)) {
        self.ssrc = ssrc
        self.payloadTypes = payloadTypes
        self.sequence = sequence
    }

    /// Makes `patch` (the packet as its receiver knows it) the header of its RTX packet and
    /// returns the original sequence number to write first; nil (and `patch` untouched) when no
    /// rtx is negotiated for its payload type: then it goes again as it was.
    public mutating func retransmission(_ patch: inout RTPHeaderPatch) -> UInt16? {
        guard let pt = payloadTypes[patch.payloadType & 0x7F] else { return nil }
        let original = patch.sequenceNumber
        patch.ssrc = ssrc
        patch.payloadType = pt
        patch.sequenceNumber = sequence
        sequence &+= 1
        return original
    }

    /// Padding-only packets on the RTX stream for a bandwidth probe (RFC 4588 receivers drop
    /// them; RFC 3550 §5.1 padding, at most 255 bytes a packet), about `bytes` in all, each
    /// with our mid and a transport-wide sequence placeholder, none over `largestPacket` (but
    /// for its header and one byte of padding). Empty when no rtx is negotiated.
    public mutating func padding(bytes: Int, largestPacket: Int = .max, midID: UInt8?, mid: [UInt8],
                                 transportCCID: UInt8) -> [[UInt8]] {
        guard let pt = payloadTypes.values.min() else { return [] }
        var out: [[UInt8]] = []
        var left = bytes
        while left > 0, out.count < 50 {
            var packet = RTPPacket(marker: false, payloadType: pt, sequenceNumber: sequence, timestamp: 0, ssrc: ssrc, payload: [])
            sequence &+= 1
            if let midID { packet.setExtension(id: midID, data: mid) }
            packet.setExtension(id: transportCCID, data: [0, 0])
            var wire = packet.serialize()
            wire[0] |= 0x20
            let count = min(255, max(1, largestPacket - wire.count))
            wire.append(contentsOf: [UInt8](repeating: 0, count: count - 1) + [UInt8(count)])
            out.append(wire)
            left -= wire.count
        }
        return out
    }
}

extension RTPHeaderView {
    /// `write(_:rtxOriginalSequence:into:)` into a new array (a sender's own retransmission:
    /// not the per-packet fan-out path, which writes into batch slots). Nil if the packet is
    /// over 64 KiB.
    public func rewritten(_ patch: RTPHeaderPatch, rtxOriginalSequence: UInt16? = nil) -> (bytes: [UInt8], written: Written)? {
        var out = [UInt8](repeating: 0, count: bytes.count + 64)
        let written = out.withUnsafeMutableBytes { write(patch, rtxOriginalSequence: rtxOriginalSequence, into: $0) }
        guard let written else { return nil }
        out.removeSubrange(written.length...)
        return (out, written)
    }
}
