// Entry point for fuzzers (libFuzzer via `-sanitize=fuzzer`). Malformed input must throw,
// never trap; a trap here means the codec disagrees with itself.

/// Parses `bytes` as a DCEP message; if that works, its serialization must parse back equal.
public func fuzzDCEP(_ bytes: [UInt8]) {
    guard let message = try? DCEPMessage(parsing: bytes) else { return }
    guard let again = try? DCEPMessage(parsing: message.bytes) else {
        preconditionFailure("DCEP: a parsed message does not re-parse")
    }
    precondition(again == message, "DCEP: the round trip changed the message")
}
