import COpenSSL

/// The smallest epoch-1 record body the negotiated cipher suite can produce, so records that
/// cannot be genuine are dropped before OpenSSL sees them. OpenSSL 3.0.19 turns a protected
/// record shorter than its explicit nonce + tag into a fatal internal_error (SSL_ERROR_SYSCALL,
/// an alert to the peer) instead of discarding it as RFC 6347 §4.1.2.7 asks; one forged
/// datagram on the 5-tuple would end the call.
enum RecordProtection {
    /// AES-GCM and AES-CCM carry an 8-byte explicit nonce and a 16-byte tag (RFC 5288, 6655);
    /// ChaCha20-Poly1305 only the tag (RFC 7905). CBC (MAC-then-encrypt: encrypt-then-MAC is
    /// off, see the context options): the explicit IV, then MAC + at least 1 padding byte
    /// rounded up to the block.
    static func minimumRecordLength(of cipher: OpaquePointer) -> Int {
        let cipherNID = SSL_CIPHER_get_cipher_nid(cipher)
        if SSL_CIPHER_is_aead(cipher) == 1 {
            return cipherNID == NID_chacha20_poly1305 ? 16 : 8 + 16
        }
        guard let evp = EVP_get_cipherbyname(OBJ_nid2sn(cipherNID)) else { return 1 }
        let block = max(1, Int(EVP_CIPHER_get_block_size(evp)))
        let iv = Int(EVP_CIPHER_get_iv_length(evp))
        var mac = 0
        if let digest = EVP_get_digestbyname(OBJ_nid2sn(SSL_CIPHER_get_digest_nid(cipher))) {
            mac = Int(EVP_MD_get_size(digest))
        }
        return iv + (mac + 1 + block - 1) / block * block
    }
}
