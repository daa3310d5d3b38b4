import COpenSSL

/// HMAC-SHA1 through OpenSSL's one-shot `HMAC()`, for MESSAGE-INTEGRITY.
enum HMACSHA1 {
    /// Returns the 20-byte MAC, or an empty array if OpenSSL failed (which then never verifies).
    static func mac(key: [UInt8], data: ArraySlice<UInt8>) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 20)
        var outLength: UInt32 = 0
        // OpenSSL wants non-null pointers even for empty inputs.
        let safeKey = key.isEmpty ? [0] : key
        let safeData = data.isEmpty ? [0] : data
        let ok = safeKey.withUnsafeBytes { k in
            safeData.withUnsafeBufferPointer { d in
                out.withUnsafeMutableBufferPointer { o in
                    HMAC(EVP_sha1(), k.baseAddress, Int32(key.count),
                         d.baseAddress, data.count, o.baseAddress, &outLength) != nil
                }
            }
        }
        return ok && outLength == 20 ? out : []
    }

    /// Constant-time comparison, so timing does not reveal how much of a MAC matched.
    static func equal(_ a: [UInt8], _ b: ArraySlice<UInt8>) -> Bool {
        guard a.count == b.count, !a.isEmpty else { return false }
        var diff: UInt8 = 0
        for (x, y) in zip(a, b) { diff |= x ^ y }
        return diff == 0
    }
}
