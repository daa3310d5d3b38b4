import RTP

/// Why an RTX packet could not be built or taken apart.
public struct RTXError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// The RTP header itself is invalid (see `message`).
        case malformedRTP
        /// Nothing after the header but padding: bandwidth-probe padding sent on the RTX
        /// stream, to be dropped quietly.
        case paddingOnly
        /// One payload byte: too short to hold the 2-byte original sequence number.
        case missingOriginalSequenceNumber
        case payloadTypeOutOfRange
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "RTX: \(message)" }
}

/// RFC 4588 §4 retransmission payload format, receive side. An RTX packet is the original packet
/// with the RTX stream's SSRC, payload type and sequence number, the original sequence number
/// (OSN) as the first two payload bytes, and the original's CSRCs, extensions, marker and
/// timestamp kept. (RTX packets are written by `RTXWriter`.)
public enum RTXPayload {
    /// The original packet carried by `rtx`, with its SSRC and payload type restored. Throws
    /// `.paddingOnly` for RTX padding packets (drop those), `.missingOriginalSequenceNumber`
    /// for a 1-byte payload, `.malformedRTP` for a bad header.
    public static func unwrap(_ rtx: [UInt8], originalSSRC: UInt32, originalPayloadType: UInt8) throws(RTXError) -> [UInt8] {
        guard originalPayloadType <= 127 else {
            throw RTXError(.payloadTypeOutOfRange, "original payload type \(originalPayloadType) does not fit in 7 bits")
        }
        var osn: UInt16 = 0
        var out = try rebuild(rtx, what: "RTX packet") { view, out in
            let payload = view.payload
            guard !payload.isEmpty else {
                return RTXError(.paddingOnly, "RTX packet seq \(view.sequenceNumber) is padding only (no payload after the header)")
            }
            guard payload.count >= 2 else {
                return RTXError(.missingOriginalSequenceNumber,
                                "RTX packet seq \(view.sequenceNumber) has 1 payload byte, the original sequence number needs 2")
            }
            osn = UInt16(payload[0]) << 8 | UInt16(payload[1])
            out.append(contentsOf: payload[2...])
            return nil
        }
        try rewrite(&out, ssrc: originalSSRC, payloadType: originalPayloadType, sequenceNumber: osn)
        return out
    }

    /// Validates `bytes` with `RTPHeaderView`, copies its header without the padding bit, and
    /// lets `body` append the payload (or return an error).
    private static func rebuild(_ bytes: [UInt8], what: String,
                                _ body: (RTPHeaderView, inout [UInt8]) -> RTXError?) throws(RTXError) -> [UInt8] {
        let result: Result<[UInt8], RTXError> = bytes.withUnsafeBytes { p in
            let view: RTPHeaderView
            do throws(RTPError) {
                view = try RTPHeaderView(p)
            } catch {
                return .failure(RTXError(.malformedRTP, "\(what): \(error)"))
            }
            var out: [UInt8] = []
            out.reserveCapacity(view.headerLength + 2 + view.payloadRange.count)
            out.append(contentsOf: p[0..<view.headerLength])
            out[0] &= ~0x20
            if let error = body(view, &out) { return .failure(error) }
            return .success(out)
        }
        return try result.get()
    }

    private static func rewrite(_ out: inout [UInt8], ssrc: UInt32, payloadType: UInt8, sequenceNumber: UInt16) throws(RTXError) {
        do throws(RTPError) {
            try RTPRewrite.set(ssrc: ssrc, payloadType: payloadType, sequenceNumber: sequenceNumber, in: &out)
        } catch {
            // The header was validated just before; only a bug gets here.
            throw RTXError(.malformedRTP, "rewriting the header failed: \(error)")
        }
    }
}
