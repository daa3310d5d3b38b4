import CWallClock
@testable import DTLS

/// Two transports wired back to back in process, with a fake clock.
final class Link {
    let client: DTLSTransport
    let server: DTLSTransport
    let clientCertificate: DTLSCertificate
    let serverCertificate: DTLSCertificate
    var now = ContinuousClock.now
    var clientEvents: [DTLSEvent] = []
    var serverEvents: [DTLSEvent] = []
    /// Every datagram each side sent, in order.
    var sentByClient: [[UInt8]] = []
    var sentByServer: [[UInt8]] = []

    init(clientProfiles: [SRTPProtectionProfile] = [.aeadAes128Gcm, .aes128CmHmacSha1_80],
         serverProfiles: [SRTPProtectionProfile] = [.aeadAes128Gcm, .aes128CmHmacSha1_80],
         clientExpects: ((DTLSCertificate) throws -> [Fingerprint])? = nil,
         serverExpects: ((DTLSCertificate) throws -> [Fingerprint])? = nil,
         mtu: Int = 1200, retransmitTimeout: Duration = .milliseconds(100),
         cipherSuites: [String] = DTLSTransport.defaultCipherSuites) throws {
        clientCertificate = try DTLSCertificate.generate()
        serverCertificate = try DTLSCertificate.generate()
        let clientRemote = try clientExpects?(serverCertificate) ?? [serverCertificate.fingerprint]
        let serverRemote = try serverExpects?(clientCertificate) ?? [clientCertificate.fingerprint]
        client = try DTLSTransport(role: .client, certificate: clientCertificate, remoteFingerprints: clientRemote,
                                   srtpProfiles: clientProfiles, mtu: mtu, initialRetransmitTimeout: retransmitTimeout,
                                   cipherSuites: cipherSuites)
        server = try DTLSTransport(role: .server, certificate: serverCertificate, remoteFingerprints: serverRemote,
                                   srtpProfiles: serverProfiles, mtu: mtu, initialRetransmitTimeout: retransmitTimeout,
                                   cipherSuites: cipherSuites)
    }

    func start() {
        client.start(now: now)
        server.start(now: now)
    }

    /// Moves datagrams both ways until neither side has anything to send. `drop` sees each
    /// datagram with its sender's role and returns true to lose it. Returns datagrams delivered.
    @discardableResult
    func pump(drop: (DTLSRole, [UInt8]) -> Bool = { _, _ in false }) -> Int {
        var delivered = 0
        for _ in 0..<200 {
            var moved = false
            while let datagram = client.pollTransmit() {
                moved = true
                sentByClient.append(datagram)
                if !drop(.client, datagram) { server.handleDatagram(datagram, now: now); delivered += 1 }
            }
            while let datagram = server.pollTransmit() {
                moved = true
                sentByServer.append(datagram)
                if !drop(.server, datagram) { client.handleDatagram(datagram, now: now); delivered += 1 }
            }
            drainEvents()
            if !moved { break }
            now = now.advanced(by: .milliseconds(1))
        }
        return delivered
    }

    func drainEvents() {
        while let event = client.pollEvent() { clientEvents.append(event) }
        while let event = server.pollEvent() { serverEvents.append(event) }
    }

    func connect() throws {
        start()
        pump()
    }

    /// OpenSSL 3.0 runs the retransmission timer on gettimeofday, whatever `now` says: this
    /// moves that clock (the test binary's own, see CWallClock) and `now` together. Undone when
    /// the link goes away.
    func advanceOpenSSLClock(by duration: Duration) {
        let (s, atto) = duration.components
        swiftrtc_test_wall_clock_advance(s * 1_000_000 + atto / 1_000_000_000_000)
        now = now.advanced(by: duration)
    }

    deinit { swiftrtc_test_wall_clock_reset() }
}

extension [DTLSEvent] {
    var connected: (SRTPKeyingMaterial?, Fingerprint)? {
        for case .connected(let keying, let fingerprint) in self { return (keying, fingerprint) }
        return nil
    }
    var failure: DTLSError? {
        for case .failed(let error) in self { return error }
        return nil
    }
    var applicationData: [[UInt8]] {
        compactMap { if case .applicationData(let bytes) = $0 { bytes } else { nil } }
    }
    var closedCount: Int {
        filter { if case .closed = $0 { true } else { false } }.count
    }
}
