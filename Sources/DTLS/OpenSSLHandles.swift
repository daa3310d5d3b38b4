import COpenSSL
import CShim

/// Owns an `SSL_CTX *`.
final class SSLContextHandle {
    let pointer: OpaquePointer
    init(_ pointer: OpaquePointer) { self.pointer = pointer }
    deinit { SSL_CTX_free(pointer) }
}

/// Owns an `SSL *` and, through it, its datagram BIO (SSL_free frees the BIO).
final class SSLHandle {
    let pointer: OpaquePointer
    /// The datagram BIO (`BIO *`) used for both directions; valid while `pointer` lives.
    let bio: OpaquePointer
    /// Keeps the context alive for as long as the connection (SSL_new also takes a reference).
    let context: SSLContextHandle

    init(_ pointer: OpaquePointer, bio: OpaquePointer, context: SSLContextHandle) {
        self.pointer = pointer
        self.bio = bio
        self.context = context
    }

    deinit { SSL_free(pointer) }
}

/// The SSL_CTX settings WebRTC peers expect of DTLS-SRTP.
enum DTLSContextFactory {
    /// ECDHE with ECDSA first (our certificate's type, what browsers use); ECDHE-RSA so a
    /// server with an RSA certificate works too. All are accepted by Chromium and Firefox.
    static let defaultCipherSuites = [
        "ECDHE-ECDSA-AES128-GCM-SHA256", "ECDHE-ECDSA-AES256-GCM-SHA384", "ECDHE-ECDSA-CHACHA20-POLY1305",
        "ECDHE-RSA-AES128-GCM-SHA256", "ECDHE-RSA-AES256-GCM-SHA384", "ECDHE-RSA-CHACHA20-POLY1305",
        "ECDHE-ECDSA-AES128-SHA", "ECDHE-RSA-AES128-SHA", "ECDHE-ECDSA-AES256-SHA", "ECDHE-RSA-AES256-SHA",
    ]
    static let groups = "X25519:P-256"

    static func make(role: DTLSRole, certificate: DTLSCertificate, srtpProfiles: [SRTPProtectionProfile],
                     cipherSuites: [String] = defaultCipherSuites) throws(DTLSError) -> SSLContextHandle {
        guard let pointer = SSL_CTX_new(DTLS_method()) else {
            throw DTLSError(.configuration, "SSL_CTX_new failed: \(openSSLErrors())")
        }
        let context = SSLContextHandle(pointer)
        func check(_ ok: Bool, _ step: String) throws(DTLSError) {
            if !ok { throw DTLSError(.configuration, "\(step) failed: \(openSSLErrors())") }
        }
        // DTLS 1.2 only: WebRTC requires it (RFC 8827 §6.5) and DTLS 1.0 lacks AEAD suites.
        try check(swiftrtc_SSL_CTX_set_min_proto_version(pointer, DTLS1_2_VERSION) == 1, "setting the minimum version to DTLS 1.2")
        try check(swiftrtc_SSL_CTX_set_max_proto_version(pointer, DTLS1_2_VERSION) == 1, "setting the maximum version to DTLS 1.2")
        // The MTU comes from us, not from a socket; no renegotiation (keys must not change
        // under SRTP) and no session tickets or caching (every WebRTC handshake is fresh).
        // No encrypt-then-MAC (RFC 7366) either: BoringSSL, hence Chromium, never does it, and
        // OpenSSL 3.0.19 ends a DTLS connection on one bad ETM MAC instead of dropping the record.
        _ = swiftrtc_SSL_CTX_set_dtls_srtp_options(pointer)  // NO_QUERY_MTU | NO_RENEGOTIATION | NO_TICKET | NO_ENCRYPT_THEN_MAC
        _ = swiftrtc_SSL_CTX_set_session_cache_mode(pointer, Int(SSL_SESS_CACHE_OFF))
        let cipherList = cipherSuites.joined(separator: ":")
        try check(SSL_CTX_set_cipher_list(pointer, cipherList) == 1, "setting the cipher list \(cipherList)")
        try check(swiftrtc_SSL_CTX_set1_groups_list(pointer, groups) == 1, "setting the ECDHE groups \(groups)")
        try check(SSL_CTX_use_certificate(pointer, certificate.certificate) == 1, "loading the certificate")
        try check(SSL_CTX_use_PrivateKey(pointer, certificate.privateKey) == 1, "loading the private key")
        try check(SSL_CTX_check_private_key(pointer) == 1, "checking the private key against the certificate")
        // Peers present self-signed certificates; they are authenticated by fingerprint in
        // verifyPeerCertificate instead of a CA chain. A server must demand the client's.
        let mode = role == .server ? SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT : SSL_VERIFY_PEER
        SSL_CTX_set_verify(pointer, mode, verifyPeerCertificate)
        if !srtpProfiles.isEmpty {
            let names = srtpProfiles.map(\.rawValue).joined(separator: ":")
            // Returns 0 on success, unlike most of OpenSSL.
            try check(SSL_CTX_set_tlsext_use_srtp(pointer, names) == 0, "offering the SRTP profiles \(names)")
        }
        return context
    }
}

/// The SSL ex_data slot that holds the unretained `DTLSTransport` (slot 0 is SSL_set_app_data's).
let transportExDataIndex: Int32 = 0

/// OpenSSL's verify callback. Self-signed certificates fail chain verification by design, so
/// the chain result is ignored; the leaf must instead match one of the SDP fingerprints. Doing
/// it here (as libwebrtc does) makes OpenSSL abort with a bad_certificate alert, so the peer
/// fails too, and no keys are ever exported for a wrong peer.
private func verifyPeerCertificate(_ preverified: Int32, _ store: OpaquePointer?) -> Int32 {
    guard let store,
          let ssl = X509_STORE_CTX_get_ex_data(store, SSL_get_ex_data_X509_STORE_CTX_idx()),
          let owner = SSL_get_ex_data(OpaquePointer(ssl), transportExDataIndex),
          let leaf = X509_STORE_CTX_get0_cert(store) else { return 0 }
    let transport = Unmanaged<DTLSTransport>.fromOpaque(owner).takeUnretainedValue()
    if transport.checkPeerCertificate(leaf) { return 1 }
    // Makes OpenSSL send bad_certificate rather than the chain error's unknown_ca.
    X509_STORE_CTX_set_error(store, X509_V_ERR_CERT_REJECTED)
    return 0
}
