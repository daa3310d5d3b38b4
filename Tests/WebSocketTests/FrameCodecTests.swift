import Testing
@testable import WebSocket

/// RFC 6455 §5.7's examples, byte for byte, both ways.
@Suite struct FrameCodecTests {
    static let maskKey: UInt32 = 0x37FA_213D
    let hello = Array("Hello".utf8)

    @Test func unmaskedTextHello() throws {
        let bytes: [UInt8] = [0x81, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: hello)) == bytes)
        var decoder = WebSocketFrameDecoder(role: .client, maxFrameBytes: 1024)
        decoder.append(bytes)
        #expect(try decoder.next() == WebSocketFrame(opcode: .text, payload: hello))
    }

    @Test func maskedTextHello() throws {
        let bytes: [UInt8] = [0x81, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .text, payload: hello), maskKey: Self.maskKey) == bytes)
        var decoder = WebSocketFrameDecoder(role: .server, maxFrameBytes: 1024)
        decoder.append(bytes)
        #expect(try decoder.next() == WebSocketFrame(opcode: .text, payload: hello))
    }

    @Test func fragmentedUnmaskedText() throws {
        let first: [UInt8] = [0x01, 0x03, 0x48, 0x65, 0x6C]
        let second: [UInt8] = [0x80, 0x02, 0x6C, 0x6F]
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(fin: false, opcode: .text, payload: Array("Hel".utf8))) == first)
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .continuation, payload: Array("lo".utf8))) == second)
        var decoder = WebSocketFrameDecoder(role: .client, maxFrameBytes: 1024)
        var assembler = WebSocketMessageAssembler(maxMessageBytes: 1024)
        decoder.append(first + second)
        let a = try #require(try decoder.next())
        let b = try #require(try decoder.next())
        #expect(a == WebSocketFrame(fin: false, opcode: .text, payload: Array("Hel".utf8)))
        #expect(try assembler.push(a) == nil)
        #expect(try assembler.push(b) == .text("Hello"))
    }

    @Test func pingAndMaskedPong() throws {
        let ping: [UInt8] = [0x89, 0x05, 0x48, 0x65, 0x6C, 0x6C, 0x6F]
        let pong: [UInt8] = [0x8A, 0x85, 0x37, 0xFA, 0x21, 0x3D, 0x7F, 0x9F, 0x4D, 0x51, 0x58]
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .ping, payload: hello)) == ping)
        #expect(WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .pong, payload: hello), maskKey: Self.maskKey) == pong)
        var server = WebSocketFrameDecoder(role: .server, maxFrameBytes: 1024)
        server.append(pong)
        #expect(try server.next() == WebSocketFrame(opcode: .pong, payload: hello))
    }

    @Test func sixteenAndSixtyFourBitLengths() throws {
        let small = [UInt8](repeating: 0xAB, count: 256)
        let encoded = WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .binary, payload: small))
        #expect(Array(encoded.prefix(4)) == [0x82, 0x7E, 0x01, 0x00])
        #expect(encoded.count == 4 + 256)

        let large = [UInt8](repeating: 0xCD, count: 65536)
        let big = WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .binary, payload: large))
        #expect(Array(big.prefix(10)) == [0x82, 0x7F, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00])
        #expect(big.count == 10 + 65536)

        var decoder = WebSocketFrameDecoder(role: .client, maxFrameBytes: 1 << 20)
        decoder.append(encoded + big)
        #expect(try decoder.next()?.payload == small)
        #expect(try decoder.next()?.payload == large)
        #expect(try decoder.next() == nil)
    }

    @Test func decodesFedOneByteAtATime() throws {
        let payload = (0..<300).map { UInt8(truncatingIfNeeded: $0) }
        let bytes = WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .binary, payload: payload), maskKey: 0x01020304)
            + WebSocketFrameEncoder.encode(WebSocketFrame(opcode: .ping, payload: [1, 2]), maskKey: 0xA0B0C0D0)
        var decoder = WebSocketFrameDecoder(role: .server, maxFrameBytes: 1024)
        var frames: [WebSocketFrame] = []
        for byte in bytes {
            decoder.append([byte])
            while let frame = try decoder.next() { frames.append(frame) }
        }
        #expect(frames == [WebSocketFrame(opcode: .binary, payload: payload), WebSocketFrame(opcode: .ping, payload: [1, 2])])
        #expect(decoder.bufferedCount == 0)
    }

    @Test func closePayloadCutsTheReasonOnACharacterBoundary() {
        let payload = WebSocketFrameEncoder.closePayload(code: 1000, reason: String(repeating: "é", count: 100))
        #expect(payload.count == 2 + 122)   // 61 two-byte characters fit in 123 bytes
        #expect(Array(payload.prefix(2)) == [0x03, 0xE8])
        #expect(String(validating: payload[2...], as: UTF8.self) != nil)
    }
}
