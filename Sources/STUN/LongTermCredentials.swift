import COpenSSL

/// Long-term credentials (RFC 8489 §9.2): the MESSAGE-INTEGRITY key TURN servers use.
public enum LongTermCredentials {
    /// MD5(username ":" realm ":" password), the key for `STUNMessage.encode(integrityKey:)` and
    /// `verifyIntegrity`. Empty if OpenSSL failed (such a key never verifies).
    public static func key(username: String, realm: String, password: String) -> [UInt8] {
        let input = Array("\(username):\(realm):\(password)".utf8)
        var out = [UInt8](repeating: 0, count: 16)
        var length: UInt32 = 0
        let ok = input.withUnsafeBytes { i in
            out.withUnsafeMutableBufferPointer { o in
                EVP_Digest(i.baseAddress, input.count, o.baseAddress, &length, EVP_md5(), nil) == 1
            }
        }
        return ok && length == 16 ? out : []
    }
}
