/// The SRTP protection profiles WebRTC negotiates through DTLS-SRTP (RFC 5764, RFC 7714).
public enum SRTPProfile: Sendable, Hashable, CustomStringConvertible {
    /// AES-128 counter mode with an 80-bit HMAC-SHA1 tag (RFC 3711); Chromium's and SRS's default.
    case aes128CmHmacSha1_80
    /// AES-128-GCM with a 16-byte tag (RFC 7714).
    case aeadAes128Gcm

    /// Master key length in bytes.
    public var keyLength: Int { 16 }

    /// Master salt length in bytes: 112 bits for AES-CM, 96 bits for GCM.
    public var saltLength: Int {
        switch self {
        case .aes128CmHmacSha1_80: 14
        case .aeadAes128Gcm: 12
        }
    }

    /// Bytes an SRTP packet grows by: the authentication tag.
    public var rtpOverhead: Int { tagLength }

    /// Bytes an SRTCP packet grows by: the tag plus the 4-byte E flag and SRTCP index.
    public var rtcpOverhead: Int { tagLength + 4 }

    /// Length of the authentication tag appended to each packet.
    var tagLength: Int {
        switch self {
        case .aes128CmHmacSha1_80: 10
        case .aeadAes128Gcm: 16
        }
    }

    /// The DTLS-SRTP protection profile identifier (RFC 5764 §4.1.2, RFC 7714 §14.2).
    public var dtlsProfileID: UInt16 {
        switch self {
        case .aes128CmHmacSha1_80: 0x0001
        case .aeadAes128Gcm: 0x0007
        }
    }

    public var description: String {
        switch self {
        case .aes128CmHmacSha1_80: "SRTP_AES128_CM_HMAC_SHA1_80"
        case .aeadAes128Gcm: "SRTP_AEAD_AES_128_GCM"
        }
    }
}

/// Which implementation does the cryptography.
public enum SRTPBackend: Sendable, Hashable {
    /// Our RFC 3711 / RFC 7714 implementation on OpenSSL 3 EVP. The default: Debian's libsrtp2
    /// is built on NSS and is several times slower for AES-CM-HMAC-SHA1-80.
    case openssl
    /// Debian's libsrtp2, called through CSRTP.
    case libsrtp
}
