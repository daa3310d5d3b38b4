import COpenSSL

/// What went wrong in DTLS; `description` reads as a sentence starting with "DTLS:".
public struct DTLSError: Error, CustomStringConvertible, Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        /// Generating or reading a certificate failed.
        case certificate
        /// The transport could not be set up with the given options.
        case configuration
        /// A fingerprint names a hash function we do not support.
        case unsupportedHashAlgorithm
        /// The handshake failed (OpenSSL's reason, a fatal alert from the peer, or too many retransmissions).
        case handshake
        /// The peer's certificate matches none of the fingerprints from the SDP.
        case fingerprintMismatch
        /// Application data was sent while not connected.
        case notConnected
        /// OpenSSL refused to send application data.
        case send
        /// A fatal alert or protocol error after the handshake.
        case connection
    }

    public var kind: Kind
    /// The reason without the "DTLS: " prefix.
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { "DTLS: \(message)" }
}

/// Drains OpenSSL's thread-local error queue into one line (oldest first).
func openSSLErrors() -> String {
    var parts: [String] = []
    while true {
        let code = ERR_get_error()
        if code == 0 { break }
        var buffer = [CChar](repeating: 0, count: 256)
        let text = buffer.withUnsafeMutableBufferPointer { pointer -> String in
            guard let base = pointer.baseAddress else { return "" }
            ERR_error_string_n(code, base, pointer.count)
            return String(cString: base)
        }
        parts.append(text)
    }
    return parts.isEmpty ? "no OpenSSL error reported" : parts.joined(separator: "; ")
}
