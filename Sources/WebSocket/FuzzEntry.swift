// Entry point for fuzzing (see Sources/swiftrtc-fuzz): must return normally for every input.

/// Feeds `bytes` to a server-side and a client-side connection, split where the first byte
/// says, and checks the handshake validation on the bytes read as header values.
public func fuzzWebSocket(_ bytes: [UInt8]) {
    let split = bytes.isEmpty ? 0 : Int(bytes[0]) % (bytes.count + 1)
    let limits = WebSocketLimits(maxFrameBytes: 2048, maxMessageBytes: 4096)
    for role in [WebSocketFrameDecoder.Role.server, .client] {
        var connection = WebSocketConnection(role: role, limits: limits)
        _ = connection.receive(bytes[..<split])
        _ = connection.receive(bytes[split...])
    }
    let text = String(decoding: bytes, as: UTF8.self)
    _ = try? WebSocketHandshake.validateRequest(method: "GET", httpVersion: "HTTP/1.1") { name in
        name == "Sec-WebSocket-Key" ? [text] : name == "Sec-WebSocket-Version" ? ["13"] : ["websocket, Upgrade"]
    }
}
