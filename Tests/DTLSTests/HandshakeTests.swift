import Testing
@testable import DTLS

@Suite struct HandshakeTests {
    @Test func connectsAndDerivesMatchingKeys() throws {
        let link = try Link()
        #expect(link.client.state == .new)
        try link.connect()
        #expect(link.client.state == .connected)
        #expect(link.server.state == .connected)
        let client = try #require(link.clientEvents.connected)
        let server = try #require(link.serverEvents.connected)
        #expect(client.1 == link.serverCertificate.fingerprint)
        #expect(server.1 == link.clientCertificate.fingerprint)
        let clientKeys = try #require(client.0), serverKeys = try #require(server.0)
        // Both prefer GCM by default.
        #expect(clientKeys.profile == .aeadAes128Gcm && serverKeys.profile == .aeadAes128Gcm)
        #expect(clientKeys.localKey.count == 16 && clientKeys.localSalt.count == 12)
        #expect(clientKeys.remoteKey.count == 16 && clientKeys.remoteSalt.count == 12)
        #expect(clientKeys.localKey == serverKeys.remoteKey)
        #expect(clientKeys.localSalt == serverKeys.remoteSalt)
        #expect(clientKeys.remoteKey == serverKeys.localKey)
        #expect(clientKeys.remoteSalt == serverKeys.localSalt)
        #expect(clientKeys.localKey != clientKeys.remoteKey)
        #expect(link.client.stats.droppedRecords == 0 && link.server.stats.droppedRecords == 0)
        #expect(link.client.stats.datagramsOut == link.server.stats.datagramsIn)
        #expect((link.sentByClient + link.sentByServer).allSatisfy { $0.count <= 1200 })
        #expect(link.clientEvents.failure == nil && link.serverEvents.failure == nil)
    }

    @Test func serverPreferenceChoosesTheProfile() throws {
        let link = try Link(clientProfiles: [.aeadAes128Gcm, .aes128CmHmacSha1_80], serverProfiles: [.aes128CmHmacSha1_80, .aeadAes128Gcm])
        try link.connect()
        let clientKeys = try #require(link.clientEvents.connected?.0)
        let serverKeys = try #require(link.serverEvents.connected?.0)
        #expect(clientKeys.profile == .aes128CmHmacSha1_80 && serverKeys.profile == .aes128CmHmacSha1_80)
        #expect(clientKeys.localKey.count == 16 && clientKeys.localSalt.count == 14)
        #expect(clientKeys.localKey == serverKeys.remoteKey && clientKeys.localSalt == serverKeys.remoteSalt)
        #expect(clientKeys.remoteKey == serverKeys.localKey && clientKeys.remoteSalt == serverKeys.localSalt)
    }

    @Test func onlyCommonProfileIsChosen() throws {
        let link = try Link(clientProfiles: [.aes128CmHmacSha1_80], serverProfiles: [.aeadAes128Gcm, .aes128CmHmacSha1_80])
        try link.connect()
        #expect(link.clientEvents.connected?.0?.profile == .aes128CmHmacSha1_80)
        #expect(link.serverEvents.connected?.0?.profile == .aes128CmHmacSha1_80)
    }

    @Test func withoutSRTPThereIsNoKeyingMaterial() throws {
        let link = try Link(clientProfiles: [], serverProfiles: [])
        try link.connect()
        let client = try #require(link.clientEvents.connected)
        let server = try #require(link.serverEvents.connected)
        #expect(client.0 == nil && server.0 == nil)
    }

    @Test func serverRejectsClientWithWrongFingerprint() throws {
        let wrong = Fingerprint(algorithm: "sha-256", value: Array(repeating: "AB", count: 32).joined(separator: ":"))
        let link = try Link(serverExpects: { _ in [wrong] })
        try link.connect()
        #expect(link.server.state == .failed)
        let error = try #require(link.serverEvents.failure)
        #expect(error.kind == .fingerprintMismatch)
        #expect(error.description.contains("remote certificate fingerprint sha-256 \(link.clientCertificate.fingerprint.value)"))
        #expect(error.description.contains("does not match the SDP's sha-256 \(wrong.value)"))
        #expect(link.serverEvents.connected == nil)
        // The bad_certificate alert fails the client too; it never sees keys.
        #expect(link.client.state == .failed)
        #expect(link.clientEvents.connected == nil)
        #expect(link.clientEvents.failure?.kind == .handshake)
        #expect(link.clientEvents.failure?.description.hasPrefix("DTLS: handshake failed: error:") == true)
        #expect(link.clientEvents.failure?.description.contains("alert bad certificate") == true)
    }

    @Test func clientRejectsServerWithWrongFingerprint() throws {
        let other = try DTLSCertificate.generate()
        let link = try Link(clientExpects: { _ in [try other.fingerprint(algorithm: "sha-1")] })
        try link.connect()
        #expect(link.client.state == .failed)
        let error = try #require(link.clientEvents.failure)
        #expect(error.kind == .fingerprintMismatch)
        let actual = try link.serverCertificate.fingerprint(algorithm: "sha-1")
        let expected = try other.fingerprint(algorithm: "sha-1")
        #expect(error.description == "DTLS: remote certificate fingerprint sha-1 \(actual.value) does not match the SDP's sha-1 \(expected.value)")
        #expect(link.serverEvents.connected == nil)
        #expect(link.server.state == .failed)
    }

    @Test func anyMatchingFingerprintWithItsOwnHashIsAccepted() throws {
        let link = try Link(clientExpects: { server in
            [Fingerprint(algorithm: "sha-1", value: "00:11"), try server.fingerprint(algorithm: "sha-512")]
        })
        try link.connect()
        #expect(link.client.state == .connected)
        #expect(link.clientEvents.connected?.1 == (try link.serverCertificate.fingerprint(algorithm: "sha-512")))
    }

    @Test func smallMTUFragmentsTheHandshake() throws {
        let link = try Link(mtu: 300)
        try link.connect()
        #expect(link.client.state == .connected && link.server.state == .connected)
        #expect((link.sentByClient + link.sentByServer).allSatisfy { $0.count <= 300 })
        // The server's certificate flight does not fit one 300-byte datagram.
        #expect(link.sentByServer.count > 2)
    }

    @Test func invalidConfigurationThrows() throws {
        let certificate = try DTLSCertificate.generate()
        #expect(throws: DTLSError.self) { try DTLSTransport(role: .client, certificate: certificate, remoteFingerprints: []) }
        #expect(throws: DTLSError.self) {
            try DTLSTransport(role: .client, certificate: certificate, remoteFingerprints: [Fingerprint(algorithm: "md5", value: "00")])
        }
        #expect(throws: DTLSError.self) {
            try DTLSTransport(role: .client, certificate: certificate, remoteFingerprints: [certificate.fingerprint], mtu: 100)
        }
    }
}
