/// Fuzzing entry point: decodes `bytes` as UTF-8 (invalid sequences become U+FFFD) and parses.
/// Any input may fail to parse; but when it parses, our own serialization must parse again to
/// an equal description, so only that case traps.
public func fuzzSDP(_ bytes: [UInt8]) {
    guard let parsed = try? SessionDescription(parsing: String(decoding: bytes, as: UTF8.self)) else { return }
    requireRoundTrip(parsed, "SDP description", write: { $0.serialize() }, parse: { try SessionDescription(parsing: $0) })
}

/// Fuzzing entry point for `application/trickle-ice-sdpfrag` bodies: the same contract as
/// `fuzzSDP`, and the accessors a WHIP server reads must not trap either.
public func fuzzSDPFragment(_ bytes: [UInt8]) {
    guard let parsed = try? TrickleICEFragment(parsing: String(decoding: bytes, as: UTF8.self)) else { return }
    _ = try? parsed.iceCredentials()
    _ = parsed.candidateGroups
    requireRoundTrip(parsed, "sdpfrag", write: { $0.serialize() }, parse: { try TrickleICEFragment(parsing: $0) })
}

/// Traps unless `value` written and parsed again is `value`.
private func requireRoundTrip<T: Equatable>(_ value: T, _ what: String, write: (T) -> String, parse: (String) throws -> T) {
    let written = write(value)
    let reparsed: T
    do {
        reparsed = try parse(written)
    } catch {
        preconditionFailure("\(what): re-parse of our own output failed: \(error)\n\(written)")
    }
    precondition(reparsed == value, "\(what): round trip changed it:\n\(written)")
}
