/// Why a datagram is not a valid STUN message, and where (byte offset) the problem is.
public struct STUNError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// Fewer bytes than the header or an attribute needs.
        case truncated
        /// First two bits not zero or the magic cookie is missing.
        case notSTUN
        /// The header's length field disagrees with the datagram or is not a multiple of 4.
        case badLength
        /// An attribute's value does not have the shape its type requires.
        case malformedAttribute
        /// An attribute appears where RFC 8489 forbids it (after FINGERPRINT).
        case misplacedAttribute
    }

    public var kind: Kind
    /// Byte offset into the datagram where the problem was found.
    public var offset: Int
    public var reason: String

    public init(_ kind: Kind, offset: Int, _ reason: String) {
        self.kind = kind
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "STUN: \(reason) (at byte offset \(offset))" }
}
