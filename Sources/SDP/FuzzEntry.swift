/// Fuzzing entry point: decodes `bytes` as UTF-8 (invalid sequences become U+FFFD) and parses.
/// Any input may fail to parse; but when it parses, our own serialization must parse again to
/// an equal description, so only that case traps.
public func fuzzSDP(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let parsed = try? SessionDescription(parsing: text) else { return }
    let written = parsed.serialize()
    let reparsed: SessionDescription
    do {
        reparsed = try SessionDescription(parsing: written)
    } catch {
        preconditionFailure("SDP re-parse of our own output failed: \(error)\n\(written)")
    }
    precondition(reparsed == parsed, "SDP round trip changed the description:\n\(written)")
}

/// Fuzzing entry point for `application/trickle-ice-sdpfrag` bodies: the same contract as
/// `fuzzSDP`, and the accessors a WHIP server reads must not trap either.
public func fuzzSDPFragment(_ bytes: [UInt8]) {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let parsed = try? TrickleICEFragment(parsing: text) else { return }
    _ = try? parsed.iceCredentials()
    _ = parsed.candidateGroups
    let written = parsed.serialize()
    let reparsed: TrickleICEFragment
    do {
        reparsed = try TrickleICEFragment(parsing: written)
    } catch {
        preconditionFailure("sdpfrag re-parse of our own output failed: \(error)\n\(written)")
    }
    precondition(reparsed == parsed, "sdpfrag round trip changed the fragment:\n\(written)")
}
