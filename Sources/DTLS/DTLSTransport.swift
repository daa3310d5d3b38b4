import COpenSSL
import CShim

/// DTLS 1.2 for WebRTC (RFC 5763, 5764, 8827) over OpenSSL, sans-I/O: datagrams and time go in,
/// datagrams, a timer deadline and events come out. One per connection.
///
/// Not thread-safe: drive it from one serial context. Feed every UDP datagram whose first byte
/// is 20–63 (RFC 7983) to `handleDatagram`, then drain `pollTransmit` and `pollEvent`, and call
/// `handleTimeout` when `pollTimeout` is reached.
///
/// Time: OpenSSL 3.0 runs the retransmission timer on the real clock internally
/// (gettimeofday). `pollTimeout` maps the time OpenSSL says remains onto the last `now` given,
/// and `handleTimeout` retransmits only once OpenSSL's own clock agrees the timer expired, so
/// retransmission timing follows OpenSSL's clock, not the caller's. (OpenSSL treats a timer
/// with less than 15 ms left as expired.)
public final class DTLSTransport {
    public let role: DTLSRole
    public private(set) var state: DTLSState = .new
    public private(set) var stats = DTLSStats()

    private let connection: SSLHandle
    private let remoteFingerprints: [Fingerprint]
    /// Set by the verify callback during the handshake.
    private var peerCheck: Result<Fingerprint, DTLSError>?
    private var events: [DTLSEvent] = []
    private var eventHead = 0
    private var lastNow: ContinuousClock.Instant?
    private var readBuffer = [UInt8](repeating: 0, count: 16_384)
    /// The negotiated suite's smallest epoch-1 record body; 0 until the suite is known.
    private var minimumProtectedLength = 0

    /// - Parameters:
    ///   - remoteFingerprints: the peer's `a=fingerprint` values; the handshake succeeds only if
    ///     its certificate matches one of them (each compared with its own hash function).
    ///   - srtpProfiles: offered (client) or accepted (server) in this order of preference; the
    ///     server's order decides. Empty: no use_srtp extension (data channels only).
    ///   - mtu: the largest UDP payload to send; handshake messages are fragmented to fit.
    ///   - initialRetransmitTimeout: how long a flight waits for an answer before it is sent
    ///     again; doubled after every retransmission, up to 60 s.
    ///   - cipherSuites: OpenSSL names of the suites offered or accepted, in preference order.
    public init(role: DTLSRole, certificate: DTLSCertificate, remoteFingerprints: [Fingerprint],
                srtpProfiles: [SRTPProtectionProfile] = [.aeadAes128Gcm, .aes128CmHmacSha1_80],
                mtu: Int = 1200, initialRetransmitTimeout: Duration = .milliseconds(100),
                cipherSuites: [String] = DTLSTransport.defaultCipherSuites) throws(DTLSError) {
        let usable = remoteFingerprints.filter { (try? FingerprintHash(name: $0.algorithm)) != nil }
        guard !usable.isEmpty else {
            let given = remoteFingerprints.isEmpty ? "none was given" : "given: " + remoteFingerprints.map(\.algorithm).joined(separator: ", ")
            throw DTLSError(.configuration, "no remote fingerprint with a supported hash function (sha-1, sha-224, sha-256, sha-384, sha-512); \(given)")
        }
        // 256 is OpenSSL's floor for DTLS_set_link_mtu; 65507 the largest UDP payload over IPv4.
        guard (256...65_507).contains(mtu) else {
            throw DTLSError(.configuration, "MTU \(mtu) is outside 256...65507")
        }
        var profiles: [SRTPProtectionProfile] = []
        for profile in srtpProfiles where !profiles.contains(profile) { profiles.append(profile) }

        let context = try DTLSContextFactory.make(role: role, certificate: certificate, srtpProfiles: profiles,
                                                  cipherSuites: cipherSuites)
        guard let ssl = SSL_new(context.pointer) else {
            throw DTLSError(.configuration, "SSL_new failed: \(openSSLErrors())")
        }
        guard let bio = swiftrtc_dgram_bio_new(mtu) else {
            SSL_free(ssl)
            throw DTLSError(.configuration, "creating the datagram BIO failed: \(openSSLErrors())")
        }
        SSL_set_bio(ssl, bio, bio)  // one reference, used for both directions
        let handle = SSLHandle(ssl, bio: bio, context: context)
        guard swiftrtc_DTLS_set_link_mtu(ssl, mtu) == 1 else {
            throw DTLSError(.configuration, "DTLS_set_link_mtu(\(mtu)) failed: \(openSSLErrors())")
        }
        let (seconds, attoseconds) = initialRetransmitTimeout.components
        let micros = max(1, min(60_000_000, seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
        swiftrtc_dtls_set_retransmit_timer(ssl, UInt32(micros), 60_000_000)
        switch role {
        case .client: SSL_set_connect_state(ssl)
        case .server: SSL_set_accept_state(ssl)
        }
        self.role = role
        self.connection = handle
        self.remoteFingerprints = usable
        SSL_set_ex_data(ssl, transportExDataIndex, Unmanaged.passUnretained(self).toOpaque())
    }

    /// ECDHE with ECDSA or RSA, AEAD suites first; all are accepted by Chromium and Firefox.
    public static let defaultCipherSuites = DTLSContextFactory.defaultCipherSuites

    /// The negotiated cipher suite's OpenSSL name, once the peer's hello chose one.
    public var cipherSuite: String? {
        SSL_get_current_cipher(connection.pointer).flatMap { SSL_CIPHER_get_name($0) }.map { String(cString: $0) }
    }

    // MARK: Input

    /// Begins the handshake: a client queues its ClientHello flight, a server waits for one.
    public func start(now: ContinuousClock.Instant) {
        lastNow = now
        guard state == .new else { return }
        state = .connecting
        if role == .client { advanceHandshake() }
    }

    /// One UDP datagram from the peer (it may hold several records). Malformed, truncated and
    /// foreign records are dropped and counted in `stats.droppedRecords`.
    public func handleDatagram(_ bytes: [UInt8], now: ContinuousClock.Instant) {
        lastNow = now
        stats.datagramsIn += 1
        stats.bytesIn += bytes.count
        switch state {
        case .closed, .failed: return
        case .new: state = .connecting  // a ClientHello may arrive before our own start()
        case .connecting, .connected: break
        }
        let wasConnected = state == .connected
        if minimumProtectedLength == 0, let cipher = SSL_get_current_cipher(connection.pointer) {
            minimumProtectedLength = RecordProtection.minimumRecordLength(of: cipher)
        }
        let screened = RecordFilter.screen(bytes, handshakeComplete: wasConnected,
                                           minimumProtectedLength: minimumProtectedLength)
        stats.droppedRecords += screened.dropped
        guard !screened.kept.isEmpty else { return }
        let queued = screened.kept.withUnsafeBufferPointer { buffer in
            swiftrtc_dgram_bio_push_incoming(connection.bio, buffer.baseAddress, buffer.count)
        }
        guard queued == 1 else {
            stats.droppedRecords += screened.applicationRecords
            return
        }
        if state == .connecting { advanceHandshake() }
        if state == .connected {
            let delivered = readApplicationData()
            // Each authentic application record yields one SSL_read; the rest OpenSSL discarded.
            if wasConnected { stats.droppedRecords += max(0, screened.applicationRecords - delivered) }
        }
        swiftrtc_dgram_bio_clear_incoming(connection.bio)
    }

    /// Whether a datagram opens with an epoch-0 record: on a connected transport that is a new
    /// handshake (a ClientHello from a new session on a shared port) or a stale flight, which
    /// `handleDatagram` would drop; a driver may offer it to another connection instead.
    public static func startsNewHandshake(_ datagram: UnsafeRawBufferPointer) -> Bool {
        datagram.count >= RecordFilter.headerLength && datagram[3] == 0 && datagram[4] == 0
    }

    /// Retransmits the current flight if its timer expired (by OpenSSL's clock).
    public func handleTimeout(now: ContinuousClock.Instant) {
        lastNow = now
        guard state == .connecting || state == .connected else { return }
        ERR_clear_error()
        let result = swiftrtc_DTLSv1_handle_timeout(connection.pointer)
        if result > 0 {
            stats.retransmissions += 1
        } else if result < 0 {
            fail(DTLSError(.handshake, "handshake timed out after repeated retransmissions: \(openSSLErrors())"))
        }
    }

    // MARK: Output

    /// When `handleTimeout` should next be called, or nil when no timer runs.
    public func pollTimeout() -> ContinuousClock.Instant? {
        guard state == .connecting || state == .connected else { return nil }
        var remaining = timeval()
        guard swiftrtc_DTLSv1_get_timeout(connection.pointer, &remaining) == 1 else { return nil }
        let base = lastNow ?? ContinuousClock.now
        return base.advanced(by: .seconds(Int64(remaining.tv_sec)) + .microseconds(Int64(remaining.tv_usec)))
    }

    /// The next datagram to send to the peer, with its boundaries as DTLS made them.
    public func pollTransmit() -> [UInt8]? {
        let length = swiftrtc_dgram_bio_next_outgoing_length(connection.bio)
        guard length >= 0 else { return nil }
        var datagram = [UInt8](repeating: 0, count: length)
        _ = datagram.withUnsafeMutableBufferPointer { buffer in
            swiftrtc_dgram_bio_pop_outgoing(connection.bio, buffer.baseAddress, buffer.count)
        }
        stats.datagramsOut += 1
        stats.bytesOut += length
        return datagram
    }

    public func pollEvent() -> DTLSEvent? {
        guard eventHead < events.count else { return nil }
        let event = events[eventHead]
        eventHead += 1
        if eventHead == events.count {
            events.removeAll(keepingCapacity: true)
            eventHead = 0
        }
        return event
    }

    // MARK: Application data and shutdown

    /// Sends one application data record (at most 16 KiB; keep it within the MTU).
    public func send(_ applicationData: [UInt8]) throws(DTLSError) {
        guard state == .connected else {
            throw DTLSError(.notConnected, "cannot send application data while \(state)")
        }
        guard !applicationData.isEmpty else { return }
        ERR_clear_error()
        let written = applicationData.withUnsafeBufferPointer { buffer in
            SSL_write(connection.pointer, buffer.baseAddress, Int32(clamping: buffer.count))
        }
        guard written > 0 else {
            throw DTLSError(.send, "sending \(applicationData.count) bytes of application data failed: \(openSSLErrors())")
        }
        stats.applicationRecordsOut += 1
    }

    /// Sends close_notify (if a handshake was under way) and stops. No event follows.
    public func close() {
        switch state {
        case .connecting, .connected:
            ERR_clear_error()
            _ = SSL_shutdown(connection.pointer)
            ERR_clear_error()
            state = .closed
        case .new:
            state = .closed
        case .closed, .failed:
            break
        }
    }

    // MARK: Internals

    private func advanceHandshake() {
        ERR_clear_error()
        let result = SSL_do_handshake(connection.pointer)
        if result == 1 {
            finishHandshake()
            return
        }
        switch SSL_get_error(connection.pointer, result) {
        case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
            break
        case SSL_ERROR_ZERO_RETURN:
            state = .closed
            emit(.closed)
        default:
            let reason = openSSLErrors()
            if case .failure(let mismatch)? = peerCheck {
                fail(mismatch)
            } else {
                fail(DTLSError(.handshake, "handshake failed: \(reason)"))
            }
        }
    }

    private func finishHandshake() {
        // The verify callback already ran; check again in case no certificate reached it.
        let remote: Fingerprint
        switch peerCheck {
        case .success(let fingerprint)?:
            remote = fingerprint
        case .failure(let error)?:
            return abandon(error)
        case nil:
            guard let leaf = SSL_get0_peer_certificate(connection.pointer), checkPeerCertificate(leaf),
                  case .success(let fingerprint)? = peerCheck else {
                if case .failure(let error)? = peerCheck { return abandon(error) }
                return abandon(DTLSError(.handshake, "the peer presented no certificate"))
            }
            remote = fingerprint
        }
        let keying: SRTPKeyingMaterial?
        do {
            keying = try exportSRTPKeyingMaterial()
        } catch {
            return abandon(error)
        }
        state = .connected
        emit(.connected(keying, remoteFingerprint: remote))
    }

    /// Fails after a completed handshake, telling the peer with close_notify.
    private func abandon(_ error: DTLSError) {
        ERR_clear_error()
        _ = SSL_shutdown(connection.pointer)
        ERR_clear_error()
        fail(error)
    }

    private func exportSRTPKeyingMaterial() throws(DTLSError) -> SRTPKeyingMaterial? {
        guard let selected = SSL_get_selected_srtp_profile(connection.pointer) else { return nil }
        let name = selected.pointee.name.map { String(cString: $0) } ?? "id \(selected.pointee.id)"
        guard let profile = SRTPProtectionProfile(rawValue: name) else {
            throw DTLSError(.handshake, "the peer selected SRTP profile \(name), which was not offered")
        }
        let label = "EXTRACTOR-dtls_srtp"  // RFC 5764 §4.2
        var exported = [UInt8](repeating: 0, count: 2 * (profile.keyLength + profile.saltLength))
        let ok = exported.withUnsafeMutableBufferPointer { buffer in
            SSL_export_keying_material(connection.pointer, buffer.baseAddress, buffer.count, label, label.utf8.count, nil, 0, 0)
        }
        guard ok == 1, let keying = SRTPKeyingMaterial(profile: profile, exported: exported, role: role) else {
            throw DTLSError(.handshake, "exporting SRTP keying material failed: \(openSSLErrors())")
        }
        return keying
    }

    /// Reads every decrypted record now available; returns how many there were.
    private func readApplicationData() -> Int {
        var delivered = 0
        while state == .connected {
            ERR_clear_error()
            let count = readBuffer.withUnsafeMutableBufferPointer { buffer in
                SSL_read(connection.pointer, buffer.baseAddress, Int32(buffer.count))
            }
            if count > 0 {
                delivered += 1
                stats.applicationRecordsIn += 1
                emit(.applicationData(Array(readBuffer[0..<Int(count)])))
                continue
            }
            switch SSL_get_error(connection.pointer, count) {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return delivered
            case SSL_ERROR_ZERO_RETURN:
                // close_notify: answer with ours (RFC 5246 §7.2.1) and stop.
                _ = SSL_shutdown(connection.pointer)
                ERR_clear_error()
                state = .closed
                emit(.closed)
            default:
                // In OpenSSL 3.0.19 both SSL_ERROR_SYSCALL (a record shorter than the suite's
                // overhead) and SSL_ERROR_SSL (a bad MAC under encrypt-then-MAC) are fatal
                // inside OpenSSL: it has left the connected state and queued an alert, so they
                // cannot be forgiven here. RecordFilter and NO_ENCRYPT_THEN_MAC keep forged
                // records from getting this far.
                fail(DTLSError(.connection, "connection failed: \(openSSLErrors())"))
            }
        }
        return delivered
    }

    /// Called from the verify callback with the peer's leaf certificate (`X509 *`).
    func checkPeerCertificate(_ certificate: OpaquePointer) -> Bool {
        var computed: [Fingerprint] = []
        for expected in remoteFingerprints {
            guard let hash = try? FingerprintHash(name: expected.algorithm),
                  let actual = try? hash.fingerprint(of: certificate) else { continue }
            if actual.matches(expected) {
                peerCheck = .success(actual)
                return true
            }
            if !computed.contains(actual) { computed.append(actual) }
        }
        let actualText = computed.map(\.description).joined(separator: ", ")
        let expectedText = remoteFingerprints.map(\.description).joined(separator: ", ")
        peerCheck = .failure(DTLSError(.fingerprintMismatch,
            "remote certificate fingerprint \(actualText) does not match the SDP's \(expectedText)"))
        return false
    }

    private func fail(_ error: DTLSError) {
        guard state != .failed else { return }
        state = .failed
        emit(.failed(error))
    }

    private func emit(_ event: DTLSEvent) {
        events.append(event)
    }
}
