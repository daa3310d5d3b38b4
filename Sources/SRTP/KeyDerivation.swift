import COpenSSL

/// SRTP key derivation (RFC 3711 §4.3) with the AES-CM PRF and key derivation rate 0, as
/// DTLS-SRTP uses it. GCM (RFC 7714 §11) uses the same PRF; its 12-byte master salt is padded
/// with two zero bytes to the 14 bytes the PRF expects.
enum KeyDerivation {
    enum Label: UInt8 {
        case rtpEncryption = 0, rtpAuthentication = 1, rtpSalt = 2
        case rtcpEncryption = 3, rtcpAuthentication = 4, rtcpSalt = 5
    }

    /// The first `length` bytes of AES-CM keyed with the master key, starting at
    /// IV = (master salt XOR (label << 48)) << 16. With kdr 0 the index part r is zero.
    static func derive(masterKey: [UInt8], masterSalt: [UInt8], label: Label, length: Int) throws(SRTPError) -> [UInt8] {
        guard masterKey.count == 16 else {
            throw SRTPError(.internalError("master key is \(masterKey.count) bytes, expected 16"))
        }
        guard masterSalt.count <= 14 else {
            throw SRTPError(.internalError("master salt is \(masterSalt.count) bytes, expected at most 14"))
        }
        var iv = [UInt8](repeating: 0, count: 16)
        for (i, b) in masterSalt.enumerated() { iv[i] = b }
        iv[7] ^= label.rawValue
        return try keystream(key: masterKey, iv: iv, length: length)
    }

    /// AES-128-CTR keystream of `length` bytes from a 16-byte initial counter block.
    static func keystream(key: [UInt8], iv: [UInt8], length: Int) throws(SRTPError) -> [UInt8] {
        guard iv.count == 16 else { throw SRTPError(.internalError("counter block is \(iv.count) bytes, expected 16")) }
        let ctx = try AESCounterMode.context(key: key)
        defer { EVP_CIPHER_CTX_free(ctx) }
        var out = [UInt8](repeating: 0, count: length)
        let ok = iv.withUnsafeBufferPointer { ivp in
            out.withUnsafeMutableBytes { o in
                guard let base = o.baseAddress, let ivBase = ivp.baseAddress else { return length == 0 }
                return AESCounterMode.apply(ctx, iv: ivBase, data: base, count: length)
            }
        }
        guard ok else { throw SRTPError(.internalError("AES-CM keystream failed")) }
        return out
    }
}
