import Testing
@testable import WebSocket

@Suite struct HandshakeTests {
    /// RFC 6455 §1.3.
    @Test func acceptKeyExample() {
        #expect(WebSocketHandshake.acceptValue(forKey: "dGhlIHNhbXBsZSBub25jZQ==") == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    func lookup(_ fields: [(String, String)]) -> (String) -> [String] {
        { name in fields.filter { $0.0.lowercased() == name.lowercased() }.map(\.1) }
    }

    let good = [("Host", "x"), ("Upgrade", "WebSocket"), ("Connection", "keep-alive, Upgrade"),
                ("Sec-WebSocket-Key", "dGhlIHNhbXBsZSBub25jZQ=="), ("Sec-WebSocket-Version", "13")]

    @Test func acceptsAValidRequest() throws {
        #expect(try WebSocketHandshake.validateRequest(method: "GET", httpVersion: "HTTP/1.1", header: lookup(good))
                == "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=")
    }

    @Test(arguments: [
        ("Upgrade", nil, 426, "missing \"Upgrade: websocket\" header"),
        ("Connection", "keep-alive", 400, "missing \"Connection: Upgrade\" header"),
        ("Sec-WebSocket-Version", "8", 426, "unsupported Sec-WebSocket-Version 8: only 13 is supported"),
        ("Sec-WebSocket-Key", nil, 400, "missing Sec-WebSocket-Key header"),
        ("Sec-WebSocket-Key", "c2hvcnQ=", 400, "Sec-WebSocket-Key \"c2hvcnQ=\" is not 16 bytes in base64"),
    ] as [(String, String?, Int, String)])
    func rejectsBadRequests(name: String, value: String?, status: Int, message: String) {
        var fields = good.filter { $0.0 != name }
        if let value { fields.append((name, value)) }
        #expect(throws: WebSocketHandshakeError(status: status, message)) {
            try WebSocketHandshake.validateRequest(method: "GET", httpVersion: "HTTP/1.1", header: lookup(fields))
        }
    }

    @Test func rejectsPostAndHTTP10() {
        #expect(throws: WebSocketHandshakeError(status: 405, "a WebSocket handshake is a GET, not POST")) {
            try WebSocketHandshake.validateRequest(method: "POST", httpVersion: "HTTP/1.1", header: lookup(good))
        }
        #expect(throws: WebSocketHandshakeError("a WebSocket handshake needs HTTP/1.1")) {
            try WebSocketHandshake.validateRequest(method: "GET", httpVersion: "HTTP/1.0", header: lookup(good))
        }
    }

    @Test func validatesTheServerResponse() throws {
        let key = WebSocketHandshake.makeKey()
        let accept = WebSocketHandshake.acceptValue(forKey: key)
        try WebSocketHandshake.validateResponse(status: 101, key: key, header: lookup(WebSocketHandshake.responseHeaders(accept: accept)))
        #expect(throws: WebSocketHandshakeError(status: 101, "Sec-WebSocket-Accept \"x\" does not match the key sent")) {
            try WebSocketHandshake.validateResponse(status: 101, key: key, header: lookup([("Upgrade", "websocket"), ("Connection", "upgrade"),
                                                                                         ("Sec-WebSocket-Accept", "x")]))
        }
        #expect(throws: WebSocketHandshakeError(status: 404, "server answered 404 instead of 101 Switching Protocols")) {
            try WebSocketHandshake.validateResponse(status: 404, key: key, header: lookup([]))
        }
    }
}
