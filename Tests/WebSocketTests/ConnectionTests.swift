import Testing
@testable import WebSocket

/// The sans-I/O connection: a client and a server wired back to back, no sockets.
@Suite struct ConnectionTests {
    @Test func textBothWaysAndPingIsAnswered() {
        var client = WebSocketConnection(role: .client)
        var server = WebSocketConnection(role: .server)
        let toServer = server.receive(client.text("hi") + client.ping([7]))
        #expect(toServer.events == [.text("hi")])
        let toClient = client.receive(toServer.output + server.text("hello"))
        #expect(toClient.events == [.pong([7]), .text("hello")])
        #expect(toClient.output.isEmpty)
    }

    @Test func closingHandshake() {
        var client = WebSocketConnection(role: .client)
        var server = WebSocketConnection(role: .server)
        let close = client.close(code: 1000, reason: "done")
        #expect(client.state == .closing)
        #expect(client.text("late").isEmpty)
        let atServer = server.receive(close)
        #expect(atServer.events == [.closed(code: 1000, reason: "done", error: nil)])
        #expect(server.state == .closed)
        let atClient = client.receive(atServer.output)
        #expect(atClient.events == [.closed(code: 1000, reason: "", error: nil)])
        #expect(client.state == .closed && atClient.output.isEmpty)
    }

    @Test func badInputFailsWithACloseFrameCarryingTheCode() throws {
        var server = WebSocketConnection(role: .server, limits: WebSocketLimits(maxFrameBytes: 100, maxMessageBytes: 100))
        let result = server.receive([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F])   // unmasked
        let error = WebSocketError(1002, "a client frame (opcode text) is not masked")
        #expect(result.events == [.closed(code: 1002, reason: error.message, error: error)])
        var client = WebSocketFrameDecoder(role: .client, maxFrameBytes: 200)
        client.append(result.output)
        let frame = try #require(try client.next())
        #expect(frame.opcode == .close)
        #expect(try WebSocketMessageAssembler.close(frame.payload) == .close(code: 1002, reason: error.message))
        #expect(server.receive([0x81, 0x00]).events.isEmpty)   // closed: nothing more
    }

    @Test func lostConnectionIs1006() {
        var server = WebSocketConnection(role: .server)
        #expect(server.connectionLost() == .closed(code: 1006, reason: "connection closed without a close frame", error: nil))
        #expect(server.connectionLost() == nil)
    }
}
