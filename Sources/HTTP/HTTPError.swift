// Errors of the HTTP target: request parsing on the server side (each maps to the status the server
// answers with) and transport or protocol failures on the client side.

/// What went wrong; `message` is the human-readable text, meant to be shown as is.
public struct HTTPError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        // Request errors, answered by the server without calling the handler.
        case badRequest            // 400
        case bodyTooLarge          // 413
        case headersTooLarge       // 431
        case notImplemented        // 501 (a transfer coding other than chunked)
        case versionNotSupported   // 505
        // Client and socket errors.
        case invalidURL
        case connectionRefused
        case timedOut
        case connectionFailed      // resolution, reset, unexpected close, other socket errors
        case malformedResponse
        case tooManyRedirects
        case tlsFailed             // TLS handshake failed, the certificate not verified included
        case cancelled
        case system                // socket/bind/thread creation failed
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// The status a server answers with for a request error; nil for client-side kinds.
    public var responseStatus: Int? {
        switch kind {
        case .badRequest: return 400
        case .bodyTooLarge: return 413
        case .headersTooLarge: return 431
        case .notImplemented: return 501
        case .versionNotSupported: return 505
        default: return nil
        }
    }
}
