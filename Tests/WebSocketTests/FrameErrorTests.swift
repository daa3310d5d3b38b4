import Testing
@testable import WebSocket

/// Every rule broken gives a typed error with the close code the connection fails with.
@Suite struct FrameErrorTests {
    func decodeError(_ bytes: [UInt8], role: WebSocketFrameDecoder.Role = .server, maxFrameBytes: Int = 1024) -> WebSocketError? {
        var decoder = WebSocketFrameDecoder(role: role, maxFrameBytes: maxFrameBytes)
        decoder.append(bytes)
        do {
            while try decoder.next() != nil {}
            return nil
        } catch {
            return error
        }
    }

    @Test(arguments: [
        ([0xC1, 0x80, 0, 0, 0, 0], "reserved bits 100 set in a frame header, but no extension was negotiated"),
        ([0x83, 0x80, 0, 0, 0, 0], "unknown opcode 0x3"),
        ([0x8B, 0x80, 0, 0, 0, 0], "unknown opcode 0xB"),
        ([0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F], "a client frame (opcode text) is not masked"),
        ([0x09, 0x80, 0, 0, 0, 0], "fragmented ping frame: control frames must not be fragmented"),
        ([0x88, 0xFE, 0x00, 0x7E], "close frame with a payload of more than 125 bytes"),
        ([0x82, 0xFF, 0x80, 0, 0, 0, 0, 0, 0, 0], "64-bit payload length with the most significant bit set"),
    ] as [([UInt8], String)])
    func protocolErrors(bytes: [UInt8], message: String) {
        #expect(decodeError(bytes) == WebSocketError(1002, message))
    }

    @Test func maskedServerFrameAtTheClient() {
        #expect(decodeError([0x81, 0x80, 1, 2, 3, 4], role: .client) == WebSocketError(1002, "a server frame (opcode text) is masked"))
    }

    @Test func frameOverTheLimitFailsBeforeItsPayloadArrives() {
        // Only the header of a 2000-byte frame.
        #expect(decodeError([0x82, 0xFE, 0x07, 0xD0], maxFrameBytes: 1000)
                == WebSocketError(1009, "frame of 2000 bytes exceeds the limit of 1000 bytes"))
    }

    func assemble(_ frames: [WebSocketFrame], maxMessageBytes: Int = 1024) -> Result<[WebSocketMessage], WebSocketError> {
        var assembler = WebSocketMessageAssembler(maxMessageBytes: maxMessageBytes)
        var messages: [WebSocketMessage] = []
        do {
            for frame in frames { if let message = try assembler.push(frame) { messages.append(message) } }
            return .success(messages)
        } catch {
            return .failure(error)
        }
    }

    @Test func controlFramesBetweenFragments() {
        let frames = [WebSocketFrame(fin: false, opcode: .binary, payload: [1]),
                      WebSocketFrame(opcode: .ping, payload: [9]),
                      WebSocketFrame(fin: false, opcode: .continuation, payload: [2]),
                      WebSocketFrame(opcode: .pong, payload: []),
                      WebSocketFrame(opcode: .continuation, payload: [3])]
        #expect(assemble(frames) == .success([.ping([9]), .pong([]), .binary([1, 2, 3])]))
    }

    @Test func fragmentationErrors() {
        #expect(assemble([WebSocketFrame(opcode: .continuation, payload: [1])])
                == .failure(WebSocketError(1002, "continuation frame without a fragmented message to continue")))
        #expect(assemble([WebSocketFrame(fin: false, opcode: .text, payload: [0x41]), WebSocketFrame(opcode: .binary, payload: [])])
                == .failure(WebSocketError(1002, "a new binary message began before the fragmented text message ended")))
    }

    @Test func messageLimitCountsAllFragments() {
        let frames = [WebSocketFrame(fin: false, opcode: .binary, payload: [UInt8](repeating: 0, count: 600)),
                      WebSocketFrame(opcode: .continuation, payload: [UInt8](repeating: 0, count: 600))]
        #expect(assemble(frames, maxMessageBytes: 1000) == .failure(WebSocketError(1009, "message of more than 1000 bytes exceeds the limit")))
    }

    @Test func invalidUTF8() {
        // "é" split across fragments is fine; a lone continuation byte is not.
        let split = [WebSocketFrame(fin: false, opcode: .text, payload: [0xC3]), WebSocketFrame(opcode: .continuation, payload: [0xA9])]
        #expect(assemble(split) == .success([.text("é")]))
        #expect(assemble([WebSocketFrame(opcode: .text, payload: [0x41, 0x80])]) == .failure(WebSocketError(1007, "text message is not valid UTF-8")))
        #expect(assemble([WebSocketFrame(opcode: .close, payload: [0x03, 0xE8, 0xFF])]) == .failure(WebSocketError(1007, "close reason is not valid UTF-8")))
    }

    @Test func closePayloads() {
        #expect(assemble([WebSocketFrame(opcode: .close, payload: [])]) == .success([.close(code: nil, reason: "")]))
        #expect(assemble([WebSocketFrame(opcode: .close, payload: [0x03, 0xE8, 0x62, 0x79, 0x65])]) == .success([.close(code: 1000, reason: "bye")]))
        #expect(assemble([WebSocketFrame(opcode: .close, payload: [0x03])]) == .failure(WebSocketError(1002, "close frame with a 1-byte payload")))
        for code: UInt16 in [999, 1004, 1005, 1006, 1015, 2999, 5000] {
            #expect(assemble([WebSocketFrame(opcode: .close, payload: [UInt8(code >> 8), UInt8(code & 0xFF)])])
                    == .failure(WebSocketError(1002, "invalid close code \(code)")))
        }
    }
}
