/// Which side of the handshake we play; the lead maps SDP `a=setup` onto it
/// (active → client, passive → server).
public enum DTLSRole: Sendable {
    case client, server
}

/// DTLS-SRTP protection profiles (RFC 5764 §4.1.2, RFC 7714 §14.2), named as OpenSSL names them.
public enum SRTPProtectionProfile: String, Sendable, CaseIterable {
    case aes128CmHmacSha1_80 = "SRTP_AES128_CM_SHA1_80"
    case aeadAes128Gcm = "SRTP_AEAD_AES_128_GCM"

    /// Master key length in bytes.
    public var keyLength: Int { 16 }
    /// Master salt length in bytes.
    public var saltLength: Int {
        switch self {
        case .aes128CmHmacSha1_80: 14
        case .aeadAes128Gcm: 12
        }
    }
}

/// SRTP master keys and salts for both directions, from the DTLS exporter (RFC 5764 §4.2).
/// `local*` protect what we send; `remote*` unprotect what the peer sends.
public struct SRTPKeyingMaterial: Sendable, Equatable {
    public var profile: SRTPProtectionProfile
    public var localKey: [UInt8]
    public var localSalt: [UInt8]
    public var remoteKey: [UInt8]
    public var remoteSalt: [UInt8]

    public init(profile: SRTPProtectionProfile, localKey: [UInt8], localSalt: [UInt8], remoteKey: [UInt8], remoteSalt: [UInt8]) {
        self.profile = profile
        self.localKey = localKey
        self.localSalt = localSalt
        self.remoteKey = remoteKey
        self.remoteSalt = remoteSalt
    }

    /// Splits the exporter output `client key | server key | client salt | server salt`.
    /// Returns nil when `exported` does not have exactly 2 × (key + salt) bytes.
    init?(profile: SRTPProtectionProfile, exported: [UInt8], role: DTLSRole) {
        let key = profile.keyLength, salt = profile.saltLength
        guard exported.count == 2 * (key + salt) else { return nil }
        let clientKey = Array(exported[0..<key])
        let serverKey = Array(exported[key..<2 * key])
        let clientSalt = Array(exported[2 * key..<2 * key + salt])
        let serverSalt = Array(exported[2 * key + salt..<2 * key + 2 * salt])
        switch role {
        case .client:
            self.init(profile: profile, localKey: clientKey, localSalt: clientSalt, remoteKey: serverKey, remoteSalt: serverSalt)
        case .server:
            self.init(profile: profile, localKey: serverKey, localSalt: serverSalt, remoteKey: clientKey, remoteSalt: clientSalt)
        }
    }
}

public enum DTLSEvent: Sendable {
    /// The handshake finished and the peer's certificate matched the SDP. Keying material is nil
    /// when no SRTP profile was negotiated (data channels only).
    case connected(SRTPKeyingMaterial?, remoteFingerprint: Fingerprint)
    /// One decrypted application data record (for SCTP over DTLS).
    case applicationData([UInt8])
    /// The peer sent close_notify.
    case closed
    /// The handshake or the connection failed; the transport is finished.
    case failed(DTLSError)
}

public enum DTLSState: Sendable, Equatable {
    case new, connecting, connected, closed, failed
}

public struct DTLSStats: Sendable, Equatable {
    /// Datagrams given to `handleDatagram`, and their bytes.
    public var datagramsIn = 0
    public var bytesIn = 0
    /// Datagrams taken from `pollTransmit`, and their bytes.
    public var datagramsOut = 0
    public var bytesOut = 0
    /// Records discarded: malformed or truncated headers (and whatever followed them in the
    /// datagram), unknown content types or versions, epochs above 1 (no renegotiation), epoch 0
    /// once connected (stale or foreign handshake records; a peer's retransmitted final flight
    /// lands here too, which OpenSSL would ignore as well: its epoch-1 Finished still gets
    /// through), and, once connected, application data records OpenSSL rejected (failed
    /// authentication, wrong keys, replay). Unauthenticated records that OpenSSL discards
    /// silently during the handshake are not seen and not counted.
    public var droppedRecords = 0
    /// Flights retransmitted by `handleTimeout`. (OpenSSL also resends a flight by itself when
    /// input arrives after its timer expired; those are not counted.)
    public var retransmissions = 0
    /// Application data records received and sent.
    public var applicationRecordsIn = 0
    public var applicationRecordsOut = 0

    public init() {}
}
