// Typed values of the transport attributes: fingerprint, setup, and the media direction.

/// `a=fingerprint:<hash function> <hex bytes>` (RFC 8122), e.g.
/// `sha-256 AB:CD:...`. The value is kept as uppercase hex pairs separated by colons.
public struct Fingerprint: Sendable, Equatable {
    public var algorithm: String
    public var value: String

    /// `value` is uppercased, since RFC 8122 writes fingerprints in uppercase hex.
    public init(algorithm: String, value: String) {
        self.algorithm = algorithm
        self.value = value.uppercased()
    }

    /// From the raw digest bytes, e.g. a certificate's SHA-256.
    public init(algorithm: String, bytes: [UInt8]) {
        let digits: [Character] = Array("0123456789ABCDEF")
        self.algorithm = algorithm
        self.value = bytes.map { String([digits[Int($0 >> 4)], digits[Int($0 & 0x0F)]]) }.joined(separator: ":")
    }

    public init?(attributeValue: String) {
        guard let parsed = try? Self.parse(Substring(attributeValue)) else { return nil }
        self = parsed
    }

    public var attributeValue: String { "\(algorithm) \(value)" }

    /// The digest bytes, or nil when `value` is not colon-separated hex pairs.
    public var bytes: [UInt8]? { try? Self.decodeHex(Substring(value)) }

    static func parse(_ value: Substring) throws(ValueError) -> Fingerprint {
        let parts = fields(value)
        guard parts.count == 2 else {
            throw ValueError("fingerprint \(quoted(value)) is not \"<hash function> <hex bytes>\"")
        }
        guard isToken(parts[0]) else { throw ValueError("fingerprint hash function \(quoted(parts[0])) is not a token") }
        _ = try decodeHex(parts[1])
        return Fingerprint(algorithm: String(parts[0]), value: String(parts[1]))
    }

    static func decodeHex(_ text: Substring) throws(ValueError) -> [UInt8] {
        var bytes: [UInt8] = []
        for pair in text.utf8.split(separator: UInt8(ascii: ":"), omittingEmptySubsequences: false) {
            guard pair.count == 2, let high = pair.first.flatMap(hexValue), let low = pair.last.flatMap(hexValue) else {
                throw ValueError("fingerprint \(quoted(text)) is not colon-separated hex bytes")
            }
            bytes.append(high << 4 | low)
        }
        return bytes
    }
}

private func hexValue(_ unit: UInt8) -> UInt8? {
    switch unit {
    case UInt8(ascii: "0")...UInt8(ascii: "9"): unit - UInt8(ascii: "0")
    case UInt8(ascii: "a")...UInt8(ascii: "f"): unit - UInt8(ascii: "a") + 10
    case UInt8(ascii: "A")...UInt8(ascii: "F"): unit - UInt8(ascii: "A") + 10
    default: nil
    }
}

/// `a=setup:` (RFC 4145 / RFC 8842): which side opens the DTLS association.
public enum SetupRole: String, Sendable, Equatable, CaseIterable {
    case actpass, active, passive, holdconn
}

/// The media direction flags `a=sendrecv`, `a=sendonly`, `a=recvonly`, `a=inactive`.
public enum Direction: String, Sendable, Equatable, CaseIterable {
    case sendrecv, sendonly, recvonly, inactive

    /// The direction the other side sees: sendonly ↔ recvonly (what an answer mirrors).
    public var reversed: Direction {
        switch self {
        case .sendonly: .recvonly
        case .recvonly: .sendonly
        case .sendrecv, .inactive: self
        }
    }

    public var sends: Bool { self == .sendrecv || self == .sendonly }
    public var receives: Bool { self == .sendrecv || self == .recvonly }
}
