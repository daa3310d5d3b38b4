import Testing
@testable import DTLS

@Suite struct CertificateTests {
    @Test func sha256FingerprintIsUppercaseColonHex() throws {
        let certificate = try DTLSCertificate.generate()
        let fingerprint = certificate.fingerprint
        #expect(fingerprint.algorithm == "sha-256")
        #expect(fingerprint.value.count == 32 * 3 - 1)
        #expect(fingerprint.value.allSatisfy { "0123456789ABCDEF:".contains($0) })
        #expect(try certificate.fingerprint(algorithm: "SHA-256") == Fingerprint(algorithm: "sha-256", value: fingerprint.value))
    }

    @Test func everySupportedHashHasItsLength() throws {
        let certificate = try DTLSCertificate.generate()
        for (name, bytes) in [("sha-1", 20), ("sha-224", 28), ("sha-256", 32), ("sha-384", 48), ("sha-512", 64)] {
            let fingerprint = try certificate.fingerprint(algorithm: name)
            #expect(fingerprint.algorithm == name)
            #expect(fingerprint.value.split(separator: ":").count == bytes)
        }
    }

    @Test func unsupportedHashIsATypedError() throws {
        let certificate = try DTLSCertificate.generate()
        #expect { try certificate.fingerprint(algorithm: "md5") } throws: { error in
            guard let error = error as? DTLSError else { return false }
            return error.kind == .unsupportedHashAlgorithm && error.description.contains("\"md5\"")
        }
    }

    @Test func eachCertificateIsNewAndNamedSwiftRTC() throws {
        let a = try DTLSCertificate.generate(), b = try DTLSCertificate.generate()
        #expect(a.fingerprint != b.fingerprint)
        let der = a.der
        #expect(der.first == 0x30)  // SEQUENCE
        let name = Array("SwiftRTC".utf8)
        let containsName = der.count >= name.count && (0...(der.count - name.count)).contains { Array(der[$0..<$0 + name.count]) == name }
        #expect(containsName)
    }

    @Test func fingerprintMatchingIgnoresCase() {
        let upper = Fingerprint(algorithm: "sha-256", value: "AB:CD")
        #expect(upper.matches(Fingerprint(algorithm: "SHA-256", value: "ab:cd")))
        #expect(!upper.matches(Fingerprint(algorithm: "sha-1", value: "AB:CD")))
        #expect(upper.description == "sha-256 AB:CD")
    }
}
