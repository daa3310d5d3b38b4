import COpenSSL

/// A certificate fingerprint as carried in SDP's `a=fingerprint` (RFC 8122): a hash function
/// name and the digest as colon-separated uppercase hex bytes.
public struct Fingerprint: Sendable, Hashable, CustomStringConvertible {
    /// Hash function textual name, e.g. "sha-256".
    public var algorithm: String
    /// Digest bytes, e.g. "AB:CD:…".
    public var value: String

    public init(algorithm: String, value: String) {
        self.algorithm = algorithm
        self.value = value
    }

    /// The form used in SDP: `sha-256 AB:CD:…`.
    public var description: String { "\(algorithm) \(value)" }

    /// Whether both name the same digest; hex case and the algorithm name's case do not matter
    /// (RFC 8122 §5: the comparison is case-insensitive).
    public func matches(_ other: Fingerprint) -> Bool {
        algorithm.lowercased() == other.algorithm.lowercased() && value.uppercased() == other.value.uppercased()
    }

    static func hex(_ digest: [UInt8]) -> String {
        let digits: [Character] = Array("0123456789ABCDEF")
        var text = ""
        text.reserveCapacity(digest.count * 3)
        for (index, byte) in digest.enumerated() {
            if index > 0 { text.append(":") }
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0x0F)])
        }
        return text
    }
}

/// The hash functions WebRTC peers use for fingerprints (RFC 8122 names).
enum FingerprintHash: String, CaseIterable {
    case sha1 = "sha-1"
    case sha224 = "sha-224"
    case sha256 = "sha-256"
    case sha384 = "sha-384"
    case sha512 = "sha-512"

    init(name: String) throws(DTLSError) {
        guard let hash = FingerprintHash(rawValue: name.lowercased()) else {
            let known = FingerprintHash.allCases.map(\.rawValue).joined(separator: ", ")
            throw DTLSError(.unsupportedHashAlgorithm, "fingerprint hash algorithm \"\(name)\" is not supported (supported: \(known))")
        }
        self = hash
    }

    var digest: OpaquePointer? {
        switch self {
        case .sha1: EVP_sha1()
        case .sha224: EVP_sha224()
        case .sha256: EVP_sha256()
        case .sha384: EVP_sha384()
        case .sha512: EVP_sha512()
        }
    }

    /// The fingerprint of `certificate` (an `X509 *`): the hash of its DER encoding.
    func fingerprint(of certificate: OpaquePointer) throws(DTLSError) -> Fingerprint {
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        let ok = digest.withUnsafeMutableBufferPointer { buffer in
            X509_digest(certificate, self.digest, buffer.baseAddress, &length)
        }
        guard ok == 1, Int(length) <= digest.count else {
            throw DTLSError(.certificate, "computing the \(rawValue) certificate digest failed: \(openSSLErrors())")
        }
        return Fingerprint(algorithm: rawValue, value: Fingerprint.hex(Array(digest.prefix(Int(length)))))
    }
}
