import COpenSSL
import Foundation
import Testing
import TestSupport
@testable import TLS

/// A throwaway test CA and a server certificate it signed for DNS:turn.test and IP:127.0.0.1
/// (P-256, valid until 2126; made with the openssl CLI for these tests only).
enum TestPKI {
    static let ca = """
-----BEGIN CERTIFICATE-----
MIIBpDCCAUugAwIBAgIUevyE5SKhQYl/oEHKD+eHEKX6vYUwCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUU3dpZnRSVEMgVExTVGVzdHMgQ0EwIBcNMjYxMjAxMTU1OTM3
WhgPMjEyNjExMDcxNTU5MzdaMB8xHTAbBgNVBAMMFFN3aWZ0UlRDIFRMU1Rlc3Rz
IENBMFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEyAcM7yOCKx0hLPyOMQSVMuHP
2COIuBZBLR8CiGQxQg8x+TTh2w9HnvLElxjKUTWsP3gXW3L+CbTrxqSeIRM67KNj
MGEwHQYDVR0OBBYEFB/MGLE9TaK0s5Ez3FkVCvc6iivpMB8GA1UdIwQYMBaAFB/M
GLE9TaK0s5Ez3FkVCvc6iivpMA8GA1UdEwEB/wQFMAMBAf8wDgYDVR0PAQH/BAQD
AgIEMAoGCCqGSM49BAMCA0cAMEQCIHu4wp4wZOmHuGUu79z/n4kRtwgve9pHj7fM
FdT8+HutAiBTEXliuNKzSbKGd2HEnGZMYwAteJxYsWBtiQOpG4VEhw==
-----END CERTIFICATE-----
"""
    static let serverCertificate = """
-----BEGIN CERTIFICATE-----
MIIBtjCCAVugAwIBAgIUU52KFFb51FnLT+nLU+gPhloEjPYwCgYIKoZIzj0EAwIw
HzEdMBsGA1UEAwwUU3dpZnRSVEMgVExTVGVzdHMgQ0EwIBcNMjYxMjAxMTU1OTM3
WhgPMjEyNjExMDcxNTU5MzdaMBQxEjAQBgNVBAMMCXR1cm4udGVzdDBZMBMGByqG
SM49AgEGCCqGSM49AwEHA0IABDDztpmO9L1wvFHSu6ejpXMlOjOG99xL3hsQYD81
MuLzAKsJJT7bgCV2u7JcKxkGYNpon5P7TqTqIV2ppKBslBSjfjB8MBoGA1UdEQQT
MBGCCXR1cm4udGVzdIcEfwAAATAJBgNVHRMEAjAAMBMGA1UdJQQMMAoGCCsGAQUF
BwMBMB0GA1UdDgQWBBQ3Kn1+G0NhsdnLRww618ilTRMi+zAfBgNVHSMEGDAWgBQf
zBixPU2itLORM9xZFQr3Ooor6TAKBggqhkjOPQQDAgNJADBGAiEA4TEN/bZlnvM7
IbSfl+y57KiqOI6gY0rkW6Mt7xta4xgCIQDJM8c4rU93u3c1m24sG8W/qPinXkjb
utmDY4dTkIIPug==
-----END CERTIFICATE-----
"""
    static let serverKey = """
-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQg/SMoZRIumNGN25wt
vvfflkYGeCKtxpcSTUNeeBOeG+qhRANCAAQw87aZjvS9cLxR0runo6VzJTozhvfc
S94bEGA/NTLi8wCrCSU+24AldruyXCsZBmDaaJ+T+06k6iFdqaSgbJQU
-----END PRIVATE KEY-----
"""

    /// The three PEM files in a fresh directory.
    static func files() throws -> (ca: String, certificate: String, key: String) {
        let dir = try TempDir("tlstests")
        func write(_ name: String, _ text: String) throws -> String {
            try (text + "\n").write(toFile: dir.path(name), atomically: true, encoding: .utf8)
            return dir.path(name)
        }
        return (try write("ca.pem", ca), try write("server.pem", serverCertificate), try write("server.key", serverKey))
    }
}
