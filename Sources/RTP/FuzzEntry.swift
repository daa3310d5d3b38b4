// Entry points for fuzzers (libFuzzer via `-sanitize=fuzzer`, or the tests' mutation loop).
// Malformed input must throw, never trap; a trap here means the codecs disagree with themselves.

/// Parses `bytes` as RTP; if that works, the serialization must re-parse to an equal packet,
/// and the non-copying header view must accept the packet and agree with it.
public func fuzzRTP(_ bytes: [UInt8]) {
    let parsed: RTPPacket
    do {
        parsed = try RTPPacket(parsing: bytes)
    } catch {
        bytes.withUnsafeBytes { p in
            precondition((try? RTPHeaderView(p)) == nil, "RTPHeaderView accepted a packet RTPPacket rejected")
        }
        return
    }
    bytes.withUnsafeBytes { p in
        guard let view = try? RTPHeaderView(p) else {
            preconditionFailure("RTPHeaderView rejected a packet RTPPacket accepted")
        }
        precondition(view.ssrc == parsed.ssrc && view.sequenceNumber == parsed.sequenceNumber
                     && view.timestamp == parsed.timestamp && view.payloadType == parsed.payloadType
                     && view.marker == parsed.marker && view.payload.elementsEqual(parsed.payload),
                     "RTPHeaderView disagrees with RTPPacket")
        for e in parsed.extensions where parsed.extensionData(id: e.id) == e.data {
            precondition(view.extension(id: e.id).map { $0.elementsEqual(e.data) } == true,
                         "RTPHeaderView extension \(e.id) disagrees")
        }
    }
    let again: RTPPacket
    do {
        again = try RTPPacket(parsing: parsed.serialize())
    } catch {
        preconditionFailure("serialized RTP packet does not re-parse: \(error)")
    }
    precondition(again == parsed, "RTP round trip changed the packet")
}

/// Parses `bytes` as an RTCP compound; if that works, the serialization must re-parse to equal packets.
public func fuzzRTCP(_ bytes: [UInt8]) {
    guard let parsed = try? RTCPPacket.parseCompound(bytes) else { return }
    let again: [RTCPPacket]
    do {
        again = try RTCPPacket.parseCompound(RTCPPacket.serializeCompound(parsed))
    } catch {
        preconditionFailure("serialized RTCP compound does not re-parse: \(error)")
    }
    precondition(again == parsed, "RTCP round trip changed the packets")
}
