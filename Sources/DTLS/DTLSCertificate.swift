import COpenSSL

/// The local DTLS identity: an ECDSA P-256 key and a self-signed certificate for it, made the way
/// browsers make theirs (random serial, CN "SwiftRTC", valid 30 days). Peers authenticate it by
/// the fingerprint in the SDP, not by a CA.
///
/// `@unchecked Sendable`: the key and certificate are never mutated after `generate()`, and
/// OpenSSL reference-counts them safely when SSL contexts on other threads use them.
public final class DTLSCertificate: @unchecked Sendable {
    /// `EVP_PKEY *`
    let privateKey: OpaquePointer
    /// `X509 *`
    let certificate: OpaquePointer
    /// SHA-256 of the DER certificate, for `a=fingerprint:sha-256 …`.
    public let fingerprint: Fingerprint

    static let commonName = "SwiftRTC"
    static let validity: Int = 30 * 24 * 60 * 60
    /// notBefore lies a day back so peers with a slow clock accept it too.
    static let backdate: Int = 24 * 60 * 60

    private init(privateKey: OpaquePointer, certificate: OpaquePointer) throws(DTLSError) {
        self.privateKey = privateKey
        self.certificate = certificate
        do {
            self.fingerprint = try FingerprintHash.sha256.fingerprint(of: certificate)
        } catch {
            X509_free(certificate)
            EVP_PKEY_free(privateKey)
            throw error
        }
    }

    deinit {
        X509_free(certificate)
        EVP_PKEY_free(privateKey)
    }

    /// A new key pair and self-signed certificate.
    public static func generate() throws(DTLSError) -> DTLSCertificate {
        guard let key = swiftrtc_EVP_EC_gen_p256() else {
            throw DTLSError(.certificate, "generating a P-256 key failed: \(openSSLErrors())")
        }
        guard let x509 = X509_new() else {
            EVP_PKEY_free(key)
            throw DTLSError(.certificate, "allocating a certificate failed: \(openSSLErrors())")
        }
        if let reason = fill(x509, key: key) {
            X509_free(x509)
            EVP_PKEY_free(key)
            throw DTLSError(.certificate, "building the self-signed certificate failed at \(reason): \(openSSLErrors())")
        }
        return try DTLSCertificate(privateKey: key, certificate: x509)
    }

    /// Fills in and signs the certificate; returns the failing step, or nil on success.
    private static func fill(_ x509: OpaquePointer, key: OpaquePointer) -> String? {
        guard X509_set_version(x509, 2) == 1 else { return "version" }  // 2 means v3
        // 63 random bits: positive and non-zero in practice, as RFC 5280 asks.
        var serial = [UInt8](repeating: 0, count: 8)
        guard RAND_bytes(&serial, Int32(serial.count)) == 1 else { return "serial" }
        serial[0] &= 0x7F
        serial[0] |= 0x01
        guard let bignum = BN_bin2bn(serial, Int32(serial.count), nil) else { return "serial" }
        defer { BN_free(bignum) }
        guard BN_to_ASN1_INTEGER(bignum, X509_get_serialNumber(x509)) != nil else { return "serial" }
        guard let name = X509_NAME_new() else { return "name" }
        defer { X509_NAME_free(name) }
        guard X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, commonName, -1, -1, 0) == 1,
              X509_set_subject_name(x509, name) == 1,
              X509_set_issuer_name(x509, name) == 1 else { return "name" }
        guard X509_gmtime_adj(X509_getm_notBefore(x509), -backdate) != nil,
              X509_gmtime_adj(X509_getm_notAfter(x509), validity) != nil else { return "validity" }
        guard X509_set_pubkey(x509, key) == 1 else { return "public key" }
        guard X509_sign(x509, key, EVP_sha256()) > 0 else { return "signature" }
        return nil
    }

    /// The fingerprint with another hash function: sha-1, sha-224, sha-256, sha-384 or sha-512.
    public func fingerprint(algorithm: String) throws(DTLSError) -> Fingerprint {
        try FingerprintHash(name: algorithm).fingerprint(of: certificate)
    }

    /// The certificate's DER encoding.
    public var der: [UInt8] {
        let length = i2d_X509(certificate, nil)
        guard length > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: Int(length))
        let written = bytes.withUnsafeMutableBufferPointer { buffer -> Int32 in
            var cursor = buffer.baseAddress
            return i2d_X509(certificate, &cursor)
        }
        return written == length ? bytes : []
    }
}
