// Errors of the WebSocket protocol (RFC 6455): every one carries the close code the connection is
// failed with (§7.4.1) and a message meant to be shown as is (also sent as the close reason).

public struct WebSocketError: Error, CustomStringConvertible, Sendable, Equatable {
    /// 1002 protocol error, 1007 invalid payload data (bad UTF-8), 1009 message too big.
    public var closeCode: UInt16
    public var message: String

    public init(_ closeCode: UInt16, _ message: String) {
        self.closeCode = closeCode
        self.message = message
    }

    public var description: String { "\(message) (close code \(closeCode))" }

    static func protocolError(_ message: String) -> WebSocketError { WebSocketError(WebSocketCloseCode.protocolError, message) }
}

/// The close codes of RFC 6455 §7.4.1 this implementation sends or checks.
public enum WebSocketCloseCode {
    public static let normal: UInt16 = 1000
    public static let goingAway: UInt16 = 1001
    public static let protocolError: UInt16 = 1002
    /// Never sent on the wire: reported when a close frame carried no code.
    public static let noStatus: UInt16 = 1005
    /// Never sent on the wire: reported when the connection ended without a close frame.
    public static let abnormal: UInt16 = 1006
    public static let invalidPayload: UInt16 = 1007
    public static let policyViolation: UInt16 = 1008
    public static let messageTooBig: UInt16 = 1009

    /// Whether `code` may appear in a close frame (§7.4.1, §7.4.2 and IANA's registry).
    public static func isValidOnWire(_ code: UInt16) -> Bool {
        switch code {
        case 1000...1003, 1007...1014, 3000...4999: return true
        default: return false
        }
    }
}

/// A failed opening handshake: what was wrong, and the HTTP status a server answers with.
public struct WebSocketHandshakeError: Error, CustomStringConvertible, Sendable, Equatable {
    public var status: Int
    public var message: String

    public init(status: Int = 400, _ message: String) {
        self.status = status
        self.message = message
    }

    public var description: String { message }
}
