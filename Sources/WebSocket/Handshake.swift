// The opening handshake (RFC 6455 §4): the accept value from the key, the checks a server makes on
// a client's request and a client on the server's response. Headers come in as a lookup that
// returns every value of a name (case-insensitively), so any HTTP layer can supply them.
import COpenSSL
import Foundation

public enum WebSocketHandshake {
    /// §1.3: appended to the key before hashing.
    public static let guid = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
    public static let version = "13"

    /// `Sec-WebSocket-Accept` for `key`: base64(SHA-1(key + GUID)).
    public static func acceptValue(forKey key: String) -> String {
        let input = Array((key + guid).utf8)
        var digest = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        _ = EVP_Digest(input, input.count, &digest, &length, EVP_sha1(), nil)
        return Data(digest.prefix(Int(length))).base64EncodedString()
    }

    /// A fresh `Sec-WebSocket-Key`: 16 random bytes, base64.
    public static func makeKey() -> String {
        var generator = SystemRandomNumberGenerator()
        return Data((0..<16).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }

    /// The header fields a client adds to its `GET` (§4.1), besides Host.
    public static func requestHeaders(key: String) -> [(String, String)] {
        [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Key", key), ("Sec-WebSocket-Version", version)]
    }

    /// The header fields of the server's `101 Switching Protocols` (§4.2.2).
    public static func responseHeaders(accept: String) -> [(String, String)] {
        [("Upgrade", "websocket"), ("Connection", "Upgrade"), ("Sec-WebSocket-Accept", accept)]
    }

    /// Checks a client's opening request (§4.2.1) and returns the `Sec-WebSocket-Accept` value to
    /// answer with. A wrong version fails with 426 (the answer then lists `Sec-WebSocket-Version: 13`).
    public static func validateRequest(method: String, httpVersion: String,
                                       header: (String) -> [String]) throws(WebSocketHandshakeError) -> String {
        guard method == "GET" else { throw WebSocketHandshakeError(status: 405, "a WebSocket handshake is a GET, not \(method)") }
        guard httpVersion != "HTTP/1.0" else { throw WebSocketHandshakeError("a WebSocket handshake needs HTTP/1.1") }
        guard hasToken(header("Upgrade"), "websocket") else {
            throw WebSocketHandshakeError(status: 426, "missing \"Upgrade: websocket\" header")
        }
        guard hasToken(header("Connection"), "upgrade") else { throw WebSocketHandshakeError("missing \"Connection: Upgrade\" header") }
        let versions = header("Sec-WebSocket-Version").map(trimmed)
        guard versions == [version] else {
            let got = versions.isEmpty ? "none" : versions.joined(separator: ", ")
            throw WebSocketHandshakeError(status: 426, "unsupported Sec-WebSocket-Version \(got): only 13 is supported")
        }
        let keys = header("Sec-WebSocket-Key").map(trimmed)
        guard keys.count == 1, let key = keys.first else {
            throw WebSocketHandshakeError(keys.isEmpty ? "missing Sec-WebSocket-Key header" : "more than one Sec-WebSocket-Key header")
        }
        guard let decoded = Data(base64Encoded: key), decoded.count == 16 else {
            throw WebSocketHandshakeError("Sec-WebSocket-Key \"\(key.prefix(40))\" is not 16 bytes in base64")
        }
        return acceptValue(forKey: key)
    }

    /// Checks the server's answer to a request sent with `key` (§4.1, the client's checks).
    public static func validateResponse(status: Int, key: String, header: (String) -> [String]) throws(WebSocketHandshakeError) {
        guard status == 101 else { throw WebSocketHandshakeError(status: status, "server answered \(status) instead of 101 Switching Protocols") }
        guard hasToken(header("Upgrade"), "websocket") else { throw WebSocketHandshakeError(status: status, "101 response without \"Upgrade: websocket\"") }
        guard hasToken(header("Connection"), "upgrade") else { throw WebSocketHandshakeError(status: status, "101 response without \"Connection: Upgrade\"") }
        let accept = header("Sec-WebSocket-Accept").map(trimmed)
        guard accept == [acceptValue(forKey: key)] else {
            throw WebSocketHandshakeError(status: status, "Sec-WebSocket-Accept \(accept.first.map { "\"\($0)\"" } ?? "missing") does not match the key sent")
        }
        if let extensions = header("Sec-WebSocket-Extensions").first, !trimmed(extensions).isEmpty {
            throw WebSocketHandshakeError(status: status, "server chose extensions \"\(extensions)\" that were not offered")
        }
    }

    /// Whether comma-separated header values list `token`, ASCII case-insensitively.
    static func hasToken(_ values: [String], _ token: String) -> Bool {
        values.contains { value in value.split(separator: ",").contains { trimmed($0).lowercased() == token } }
    }

    static func trimmed<S: StringProtocol>(_ text: S) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
