/// Fuzzing entry point (libFuzzer: `-sanitize=fuzzer`). Parsing arbitrary bytes must never trap;
/// whatever parses must survive an encode/parse round trip unchanged.
public func fuzzSTUN(_ bytes: [UInt8]) {
    _ = STUNMessage.isSTUN(bytes)
    _ = STUNMessage.verifyFingerprint(bytes)
    _ = STUNMessage.verifyIntegrity(bytes, key: Array("fuzz-password".utf8))
    guard let message = try? STUNMessage(parsing: bytes) else { return }
    let plain = message.attributes.filter {
        switch $0 {
        case .messageIntegrity, .fingerprint: return false
        default: return true
        }
    }
    let key: [UInt8] = Array("fuzz-password".utf8)
    let encoded = message.encode(integrityKey: key, fingerprint: true)
    // Only oversized inputs can be clipped by the encoder; skip the oracle for those.
    guard encoded.count < 0xFFFF - 64 else { return }
    do {
        let again = try STUNMessage(parsing: encoded)
        precondition(again.method == message.method && again.messageClass == message.messageClass
                     && again.transactionID == message.transactionID, "fuzzSTUN: header changed on round trip")
        precondition(Array(again.attributes.dropLast(2)) == plain, "fuzzSTUN: attributes changed on round trip")
        precondition(STUNMessage.verifyIntegrity(encoded, key: key) && STUNMessage.verifyFingerprint(encoded),
                     "fuzzSTUN: own integrity/fingerprint do not verify")
    } catch {
        preconditionFailure("fuzzSTUN: own encoding does not parse: \(error)")
    }
}
