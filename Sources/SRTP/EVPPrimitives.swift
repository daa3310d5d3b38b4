import COpenSSL

// OpenSSL cipher and MAC state as raw contexts, keyed once when created; per packet only the IV
// changes, so the hot path allocates nothing. The contexts are owned by `OpenSSLKeys`, which the
// SRTP engine keeps inline, so a packet loads no owner object of ours on the way to OpenSSL.

/// AES-128 in counter mode (RFC 3711 §4.1.1).
enum AESCounterMode {
    /// A context keyed with `key`; the caller frees it (`EVP_CIPHER_CTX_free`).
    static func context(key: [UInt8]) throws(SRTPError) -> OpaquePointer {
        guard key.count == 16, let ctx = EVP_CIPHER_CTX_new() else {
            throw SRTPError(.internalError("EVP_CIPHER_CTX_new (AES-128-CTR) failed"))
        }
        guard EVP_EncryptInit_ex(ctx, EVP_aes_128_ctr(), nil, key, nil) == 1 else {
            EVP_CIPHER_CTX_free(ctx)
            throw SRTPError(.internalError("EVP_EncryptInit_ex (AES-128-CTR) failed"))
        }
        return ctx
    }

    /// XORs `count` bytes at `data` (in place) with the keystream that starts at the 16-byte `iv`.
    @inline(__always)
    static func apply(_ ctx: OpaquePointer, iv: UnsafePointer<UInt8>, data: UnsafeMutableRawPointer, count: Int) -> Bool {
        guard EVP_EncryptInit_ex(ctx, nil, nil, nil, iv) == 1 else { return false }
        if count == 0 { return true }
        let p = data.assumingMemoryBound(to: UInt8.self)
        var outLength: Int32 = 0
        return EVP_EncryptUpdate(ctx, p, &outLength, p, Int32(count)) == 1 && Int(outLength) == count
    }
}

/// HMAC-SHA1 (RFC 2104): the inner and outer pad states are hashed once, when keyed, and copied
/// per packet (see `swiftrtc_hmac_sha1` in COpenSSL's shim for why not EVP_MAC).
enum HMACSHA1 {
    static let digestLength = 20

    /// Key state for `bytes`; the caller frees it with `free(_:)`.
    static func key(_ bytes: [UInt8]) throws(SRTPError) -> UnsafeMutablePointer<swiftrtc_hmac_sha1_key> {
        let key = UnsafeMutablePointer<swiftrtc_hmac_sha1_key>.allocate(capacity: 1)
        key.initialize(to: swiftrtc_hmac_sha1_key())
        guard swiftrtc_hmac_sha1_init(key, bytes, bytes.count) == 1 else {
            free(key)
            throw SRTPError(.internalError("HMAC-SHA1 key setup failed"))
        }
        return key
    }

    static func free(_ key: UnsafeMutablePointer<swiftrtc_hmac_sha1_key>) {
        OPENSSL_cleanse(key, MemoryLayout<swiftrtc_hmac_sha1_key>.size)
        key.deallocate()
    }

    /// Writes the 20-byte HMAC of `data[0..<count]` followed by `suffix[0..<suffixCount]` to `out`.
    @inline(__always)
    static func compute(_ key: UnsafePointer<swiftrtc_hmac_sha1_key>, _ data: UnsafeRawPointer, count: Int,
                        suffix: UnsafePointer<UInt8>, suffixCount: Int, into out: UnsafeMutablePointer<UInt8>) -> Bool {
        swiftrtc_hmac_sha1(key, data, count, suffix, suffixCount, out) == 1
    }
}

/// AES-128-GCM (RFC 7714) in one direction; 12-byte IV, 16-byte tag.
enum AESGCM {
    static let tagLength = 16

    /// A context keyed with `key` for one direction; the caller frees it (`EVP_CIPHER_CTX_free`).
    static func context(key: [UInt8], encrypting: Bool) throws(SRTPError) -> OpaquePointer {
        guard key.count == 16, let ctx = EVP_CIPHER_CTX_new() else {
            throw SRTPError(.internalError("EVP_CIPHER_CTX_new (AES-128-GCM) failed"))
        }
        guard EVP_CipherInit_ex(ctx, EVP_aes_128_gcm(), nil, key, nil, encrypting ? 1 : 0) == 1 else {
            EVP_CIPHER_CTX_free(ctx)
            throw SRTPError(.internalError("EVP_CipherInit_ex (AES-128-GCM) failed"))
        }
        return ctx
    }

    /// Encrypts `count` bytes at `data` in place after authenticating the two AAD pieces, and
    /// writes the tag to `tag`.
    @inline(__always)
    static func seal(_ ctx: OpaquePointer, iv: UnsafePointer<UInt8>, aad: UnsafeRawPointer, aadCount: Int,
                     aad2: UnsafePointer<UInt8>?, aad2Count: Int,
                     data: UnsafeMutableRawPointer, count: Int, tag: UnsafeMutableRawPointer) -> Bool {
        guard EVP_CipherInit_ex(ctx, nil, nil, nil, iv, 1) == 1 else { return false }
        var n: Int32 = 0
        guard aadCount == 0 || EVP_CipherUpdate(ctx, nil, &n, aad.assumingMemoryBound(to: UInt8.self), Int32(aadCount)) == 1 else { return false }
        if let aad2, aad2Count > 0 {
            guard EVP_CipherUpdate(ctx, nil, &n, aad2, Int32(aad2Count)) == 1 else { return false }
        }
        let p = data.assumingMemoryBound(to: UInt8.self)
        if count > 0 {
            guard EVP_CipherUpdate(ctx, p, &n, p, Int32(count)) == 1, Int(n) == count else { return false }
        }
        guard EVP_CipherFinal_ex(ctx, p.advanced(by: count), &n) == 1 else { return false }
        return EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(AESGCM.tagLength), tag) == 1
    }

    /// Decrypts `count` bytes from `input` into `output` (which may equal `input`) and verifies
    /// the tag; false when the tag does not match.
    @inline(__always)
    static func open(_ ctx: OpaquePointer, iv: UnsafePointer<UInt8>, aad: UnsafeRawPointer, aadCount: Int,
                     aad2: UnsafePointer<UInt8>?, aad2Count: Int,
                     input: UnsafeRawPointer, output: UnsafeMutableRawPointer, count: Int,
                     tag: UnsafeRawPointer) -> Bool {
        guard EVP_CipherInit_ex(ctx, nil, nil, nil, iv, 0) == 1 else { return false }
        var n: Int32 = 0
        guard aadCount == 0 || EVP_CipherUpdate(ctx, nil, &n, aad.assumingMemoryBound(to: UInt8.self), Int32(aadCount)) == 1 else { return false }
        if let aad2, aad2Count > 0 {
            guard EVP_CipherUpdate(ctx, nil, &n, aad2, Int32(aad2Count)) == 1 else { return false }
        }
        let out = output.assumingMemoryBound(to: UInt8.self)
        if count > 0 {
            guard EVP_CipherUpdate(ctx, out, &n, input.assumingMemoryBound(to: UInt8.self), Int32(count)) == 1,
                  Int(n) == count else { return false }
        }
        guard EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(AESGCM.tagLength), UnsafeMutableRawPointer(mutating: tag)) == 1 else { return false }
        return EVP_CipherFinal_ex(ctx, out.advanced(by: count), &n) == 1
    }
}

/// Constant-time comparison, so a forger learns nothing from timing.
@inline(__always)
func constantTimeEqual(_ a: UnsafeRawPointer, _ b: UnsafeRawPointer, count: Int) -> Bool {
    CRYPTO_memcmp(a, b, count) == 0
}
