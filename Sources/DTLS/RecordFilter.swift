/// Screens an incoming datagram record by record before OpenSSL sees it, so that what OpenSSL
/// would silently discard is counted, and so a bad header does not cost the records before it.
/// DTLS record header (RFC 6347 §4.1): type(1) version(2) epoch(2) sequence(6) length(2).
struct RecordFilter {
    static let headerLength = 13
    /// RFC 6347 §4.1.2.1: a ciphertext fragment may not exceed 2^14 + 2048 bytes.
    static let maxFragmentLength = 16_384 + 2_048
    static let changeCipherSpec: UInt8 = 20
    static let alert: UInt8 = 21
    static let handshake: UInt8 = 22
    static let applicationData: UInt8 = 23

    struct Result {
        /// The records to hand to OpenSSL, in order, as one datagram.
        var kept: [UInt8] = []
        var dropped = 0
        /// Kept application data records of the current epoch (each yields one SSL_read).
        var applicationRecords = 0
        /// Epoch-1 records dropped for being shorter than the cipher suite's overhead.
        var tooShort = 0
    }

    /// `handshakeComplete`: both sides are on epoch 1, so epoch 0 records are stale or foreign
    /// (OpenSSL ignores them too). Epochs above 1 never occur: renegotiation is off.
    /// `minimumProtectedLength`: once the cipher suite is known, an epoch-1 body shorter than
    /// its overhead cannot be genuine (see `RecordProtection`).
    static func screen(_ datagram: [UInt8], handshakeComplete: Bool, minimumProtectedLength: Int = 0) -> Result {
        var result = Result()
        result.kept.reserveCapacity(datagram.count)
        var offset = 0
        while offset < datagram.count {
            let remaining = datagram.count - offset
            guard remaining >= headerLength else {
                result.dropped += 1  // truncated header
                break
            }
            let type = datagram[offset]
            let major = datagram[offset + 1], minor = datagram[offset + 2]
            let epoch = Int(datagram[offset + 3]) << 8 | Int(datagram[offset + 4])
            let length = Int(datagram[offset + 11]) << 8 | Int(datagram[offset + 12])
            // DTLS 1.0 (FEFF) appears on the ClientHello record; DTLS 1.2 is FEFD.
            let knownType = (changeCipherSpec...applicationData).contains(type)
            let knownVersion = major == 0xFE && (minor == 0xFF || minor == 0xFD)
            guard knownType, knownVersion, length <= maxFragmentLength, length <= remaining - headerLength else {
                // Without a trustworthy length the rest of the datagram cannot be parsed.
                result.dropped += 1
                break
            }
            let end = offset + headerLength + length
            let expectedEpoch = epoch == 1 || (epoch == 0 && !handshakeComplete)
            if epoch == 1 && length < minimumProtectedLength {
                result.dropped += 1
                result.tooShort += 1
            } else if expectedEpoch {
                result.kept.append(contentsOf: datagram[offset..<end])
                if type == applicationData && epoch == 1 { result.applicationRecords += 1 }
            } else {
                result.dropped += 1
            }
            offset = end
        }
        return result
    }
}
