import COpenSSL

// Thin owners of OpenSSL cipher and MAC state. Each is keyed once when created; per packet only
// the IV changes, so the hot path allocates nothing.

/// AES-128 in counter mode (RFC 3711 §4.1.1), keyed once.
final class AESCounterMode {
    private let ctx: OpaquePointer

    init(key: [UInt8]) throws(SRTPError) {
        guard key.count == 16, let ctx = EVP_CIPHER_CTX_new() else {
            throw SRTPError(.internalError("EVP_CIPHER_CTX_new (AES-128-CTR) failed"))
        }
        self.ctx = ctx
        let ok = EVP_EncryptInit_ex(ctx, EVP_aes_128_ctr(), nil, key, nil)
        guard ok == 1 else { throw SRTPError(.internalError("EVP_EncryptInit_ex (AES-128-CTR) failed")) }
    }

    deinit { EVP_CIPHER_CTX_free(ctx) }

    /// XORs `count` bytes at `data` (in place) with the keystream that starts at the 16-byte `iv`.
    @inline(__always)
    func apply(iv: UnsafePointer<UInt8>, data: UnsafeMutableRawPointer, count: Int) -> Bool {
        guard EVP_EncryptInit_ex(ctx, nil, nil, nil, iv) == 1 else { return false }
        if count == 0 { return true }
        let p = data.assumingMemoryBound(to: UInt8.self)
        var outLength: Int32 = 0
        return EVP_EncryptUpdate(ctx, p, &outLength, p, Int32(count)) == 1 && Int(outLength) == count
    }
}

/// HMAC-SHA1 (RFC 2104) keyed once: the inner and outer pad states are hashed up front and
/// copied per packet (see `swiftrtc_hmac_sha1` in COpenSSL's shim for why not EVP_MAC).
final class HMACSHA1 {
    private let key: UnsafeMutablePointer<swiftrtc_hmac_sha1_key>
    static let digestLength = 20

    init(key bytes: [UInt8]) throws(SRTPError) {
        key = .allocate(capacity: 1)
        key.initialize(to: swiftrtc_hmac_sha1_key())
        guard swiftrtc_hmac_sha1_init(key, bytes, bytes.count) == 1 else {
            throw SRTPError(.internalError("HMAC-SHA1 key setup failed"))
        }
    }

    deinit {
        OPENSSL_cleanse(key, MemoryLayout<swiftrtc_hmac_sha1_key>.size)
        key.deallocate()
    }

    /// Writes the 20-byte HMAC of `data[0..<count]` followed by `suffix[0..<suffixCount]` to `out`.
    @inline(__always)
    func compute(_ data: UnsafeRawPointer, count: Int, suffix: UnsafePointer<UInt8>, suffixCount: Int,
                 into out: UnsafeMutablePointer<UInt8>) -> Bool {
        swiftrtc_hmac_sha1(key, data, count, suffix, suffixCount, out) == 1
    }
}

/// AES-128-GCM (RFC 7714) in one direction, keyed once; 12-byte IV, 16-byte tag.
final class AESGCM {
    private let ctx: OpaquePointer
    let encrypting: Bool
    static let tagLength = 16

    init(key: [UInt8], encrypting: Bool) throws(SRTPError) {
        guard key.count == 16, let ctx = EVP_CIPHER_CTX_new() else {
            throw SRTPError(.internalError("EVP_CIPHER_CTX_new (AES-128-GCM) failed"))
        }
        self.ctx = ctx
        self.encrypting = encrypting
        let ok = EVP_CipherInit_ex(ctx, EVP_aes_128_gcm(), nil, key, nil, encrypting ? 1 : 0)
        guard ok == 1 else { throw SRTPError(.internalError("EVP_CipherInit_ex (AES-128-GCM) failed")) }
    }

    deinit { EVP_CIPHER_CTX_free(ctx) }

    /// Encrypts `count` bytes at `data` in place after authenticating the two AAD pieces, and
    /// writes the tag to `tag`.
    @inline(__always)
    func seal(iv: UnsafePointer<UInt8>, aad: UnsafeRawPointer, aadCount: Int,
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
    func open(iv: UnsafePointer<UInt8>, aad: UnsafeRawPointer, aadCount: Int,
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
