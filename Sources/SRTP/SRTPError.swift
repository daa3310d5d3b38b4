/// Why a packet could not be protected or unprotected.
///
/// Two errors are equal when their `kind` is equal; `detail` only adds context for people.
public struct SRTPError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Kind: Sendable, Equatable {
        /// The authentication tag did not match: tampered, wrong key, or not SRTP at all.
        case authenticationFailed
        /// The packet index was already seen, or lies before the replay window.
        case replay
        /// The packet is shorter than its fixed header plus trailer.
        case tooShort
        /// A header field is invalid or points past the end of the packet.
        case badHeader
        /// A failure inside the crypto library or a misuse of the API (for example a buffer
        /// without room for the trailer).
        case internalError(String)
    }

    public let kind: Kind
    /// What was wrong and where (lengths, offsets).
    public let detail: String

    public init(_ kind: Kind, _ detail: String = "") {
        self.kind = kind
        self.detail = detail
    }

    public static var authenticationFailed: SRTPError { SRTPError(.authenticationFailed) }
    public static var replay: SRTPError { SRTPError(.replay) }
    public static var tooShort: SRTPError { SRTPError(.tooShort) }
    public static var badHeader: SRTPError { SRTPError(.badHeader) }

    public static func == (lhs: SRTPError, rhs: SRTPError) -> Bool { lhs.kind == rhs.kind }

    public var description: String {
        let head: String
        switch kind {
        case .authenticationFailed: head = "SRTP authentication failed"
        case .replay: head = "SRTP replayed or too old packet"
        case .tooShort: head = "SRTP packet too short"
        case .badHeader: head = "SRTP bad packet header"
        case .internalError(let what): head = "SRTP internal error: \(what)"
        }
        return detail.isEmpty ? head : "\(head): \(detail)"
    }
}
