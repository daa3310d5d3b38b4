import Testing
@testable import HTTP
@testable import Signaling
@testable import WebSocket

/// Real servers on 127.0.0.1 port 0, real clients; every wait is for an event, with a timeout.
@Suite(.serialized) struct SignalServerTests {
    func withSignalServer(_ options: SignalServer.Options = .init(), _ body: (String) async throws -> Void) async throws {
        let server = try SignalServer(host: "127.0.0.1", port: 0, options: options)
        defer { server.stop() }
        try await body(try #require(server.url))
    }

    func join(_ base: String, room: String) async throws -> (SignalingClient, Inbox<SignalingClient.Event>) {
        let client = try await SignalingClient.connect("\(base)?room=\(room)")
        return (client, Inbox.draining(client.events))
    }

    @Test func twoPeersSignalThroughTheServer() async throws {
        try await withSignalServer { base in
            let (a, aEvents) = try await join(base, room: "call")
            #expect(try await aEvents.next() == .joined(peers: 0))
            let (b, bEvents) = try await join(base, room: "call")
            #expect(try await bEvents.next() == .joined(peers: 1))
            #expect(try await aEvents.next() == .peerJoined)

            let offer = "v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
            a.sendOffer(offer)
            #expect(try await bEvents.next() == .offer(offer))
            b.sendAnswer(offer + "a=setup:active\r\n")
            #expect(try await aEvents.next() == .answer(offer + "a=setup:active\r\n"))
            let line = "candidate:1 1 udp 2122260223 127.0.0.1 50000 typ host"
            a.sendCandidate(line, sdpMid: "0", sdpMLineIndex: 0)
            #expect(try await bEvents.next() == .candidate(line, sdpMid: "0", sdpMLineIndex: 0))
            b.sendEndOfCandidates(sdpMid: "0", sdpMLineIndex: 0)
            #expect(try await aEvents.next() == .endOfCandidates)
            a.sendBye()
            #expect(try await bEvents.next() == .bye)

            b.close()
            #expect(try await bEvents.next() == .closed(code: 1000, reason: ""))
            #expect(try await aEvents.next() == .peerLeft)
            a.close()
            #expect(try await aEvents.next() == .closed(code: 1000, reason: ""))
        }
    }

    @Test func forwardsTextVerbatimIncludingTheReferenceAppsCandidateKey() async throws {
        try await withSignalServer { base in
            let a = try await WebSocketClient.connect("\(base)?room=raw")
            let aMessages = Inbox.draining(a.messages)
            #expect(try await aMessages.next() == .text(#"{"type":"joined","room":"raw","peers":0}"#))
            let b = try await WebSocketClient.connect("\(base)?room=raw")
            let bMessages = Inbox.draining(b.messages)
            #expect(try await bMessages.next() == .text(#"{"type":"joined","room":"raw","peers":1}"#))
            #expect(try await aMessages.next() == .text(#"{"type":"peer-joined"}"#))
            for text in [#"{ "type": "candidate", "sdp": "candidate:2 1 udp 1 10.0.0.2 5001 typ host", "sdpMLineIndex": 0, "sdpMid": "0" }"#,
                         #"{"type":"offer","sdp":"v=0\r\n","x":{"nested":true}}"#] {
                #expect(a.send(text))
                #expect(try await bMessages.next() == .text(text))
            }
            #expect(SignalingClient.event(#"{ "type": "candidate", "sdp": "candidate:2", "sdpMLineIndex": 0, "sdpMid": "0" }"#)
                    == .candidate("candidate:2", sdpMid: "0", sdpMLineIndex: 0))
            a.close()
            b.close()
        }
    }

    @Test func thirdPeerIsRefusedAndClosed() async throws {
        try await withSignalServer { base in
            let (_, aEvents) = try await join(base, room: "full")
            #expect(try await aEvents.next() == .joined(peers: 0))
            let (_, bEvents) = try await join(base, room: "full")
            #expect(try await bEvents.next() == .joined(peers: 1))
            let (_, cEvents) = try await join(base, room: "full")
            #expect(try await cEvents.next() == .error("room full"))
            #expect(try await cEvents.next() == .closed(code: 1008, reason: "room full"))
            #expect(try await aEvents.next() == .peerJoined)
        }
    }

    @Test func malformedJSONGetsAnErrorAndTheConnectionStaysOpen() async throws {
        try await withSignalServer { base in
            let (a, aEvents) = try await join(base, room: "bad")
            #expect(try await aEvents.next() == .joined(peers: 0))
            a.socket.send("{not json")
            #expect(try await aEvents.next() == .error("malformed JSON: expected one object per message"))
            a.socket.send(#"{"type":"dance"}"#)
            #expect(try await aEvents.next() == .error(#"unknown type "dance""#))
            a.socket.send([1, 2, 3])
            #expect(try await aEvents.next() == .error("binary messages are not part of the protocol"))
            let (b, bEvents) = try await join(base, room: "bad")
            #expect(try await bEvents.next() == .joined(peers: 1))
            #expect(try await aEvents.next() == .peerJoined)
            a.sendOffer("v=0\r\n")
            #expect(try await bEvents.next() == .offer("v=0\r\n"))
            b.close()
        }
    }

    @Test func messageOverTheLimitClosesWith1009() async throws {
        try await withSignalServer { base in
            let (a, aEvents) = try await join(base, room: "big")
            #expect(try await aEvents.next() == .joined(peers: 0))
            let big = String(repeating: "x", count: 1 << 20)
            a.socket.send(#"{"type":"offer","sdp":"\#(big)"}"#)
            #expect(try await aEvents.next() == .closed(code: 1009, reason: "frame of 1048601 bytes exceeds the limit of 262144 bytes"))
            // The seat is free again.
            let (_, bEvents) = try await join(base, room: "big")
            #expect(try await bEvents.next() == .joined(peers: 0))
        }
    }

    /// A raw connection after a real handshake: exact frames, fragmented, with a ping between.
    @Test func assemblesAFragmentedMessageFromARawSocket() async throws {
        // The raw socket never answers our close: the server waits closeTimeout before leaving.
        try await withSignalServer(SignalServer.Options(closeTimeout: .milliseconds(300))) { base in
            let (_, aEvents) = try await join(base, room: "frag")
            #expect(try await aEvents.next() == .joined(peers: 0))
            let raw = try await RawWebSocket(url: "\(base)?room=frag")
            #expect(try await raw.nextFrame() == WebSocketFrame(opcode: .text, payload: Array(#"{"type":"joined","room":"frag","peers":1}"#.utf8)))
            #expect(try await aEvents.next() == .peerJoined)

            let text = Array(#"{"type":"offer","sdp":"v=0 fragmented"}"#.utf8)
            raw.send(WebSocketFrame(fin: false, opcode: .text, payload: Array(text[0..<10])), maskKey: 0x11223344)
            raw.send(WebSocketFrame(opcode: .ping, payload: Array("are you there".utf8)), maskKey: 0x55667788)
            raw.send(WebSocketFrame(fin: false, opcode: .continuation, payload: Array(text[10..<20])), maskKey: 0x99AABBCC)
            raw.send(WebSocketFrame(opcode: .continuation, payload: Array(text[20...])), maskKey: 0xDDEEFF00)
            #expect(try await raw.nextFrame() == WebSocketFrame(opcode: .pong, payload: Array("are you there".utf8)))
            #expect(try await aEvents.next() == .offer("v=0 fragmented"))

            // An unmasked frame fails the connection with 1002.
            raw.send(WebSocketFrame(opcode: .text, payload: Array("{}".utf8)), maskKey: nil)
            let close = try await raw.nextFrame()
            #expect(close.opcode == .close)
            #expect(try WebSocketMessageAssembler.close(close.payload) == .close(code: 1002, reason: "a client frame (opcode text) is not masked"))
            #expect(try await aEvents.next() == .peerLeft)
        }
    }

    @Test func silentPeersArePingedThenDropped() async throws {
        try await withSignalServer(SignalServer.Options(pingInterval: .milliseconds(200))) { base in
            // A real client answers pings and stays; a raw one that never answers is dropped.
            let (_, aEvents) = try await join(base, room: "idle")
            #expect(try await aEvents.next() == .joined(peers: 0))
            let raw = try await RawWebSocket(url: "\(base)?room=idle")
            #expect(try await raw.nextFrame().opcode == .text)          // joined
            #expect(try await aEvents.next() == .peerJoined)
            #expect(try await raw.nextFrame() == WebSocketFrame(opcode: .ping, payload: []))
            #expect(try await aEvents.next() == .peerLeft)                 // dropped after another interval
            #expect(try await raw.nextFrameOrEnd() == nil)
            let (_, bEvents) = try await join(base, room: "idle")
            #expect(try await bEvents.next() == .joined(peers: 1))          // a is still there
        }
    }

    /// As `swiftrtc serve` does it: mounted on a server whose handler keeps its other paths.
    @Test func mountedOnAnotherServer() async throws {
        let http = try HTTPServer(host: "127.0.0.1", port: 0) { request in .text(200, "api \(request.path)") }
        let signaling = SignalServer(mountingOn: http)
        http.start()
        defer { http.stop() }
        #expect(signaling.url == nil)
        let api = try await HTTPClient().send(method: "GET", url: "http://127.0.0.1:\(http.port)/api/v1/versions")
        #expect(api.text == "api /api/v1/versions")
        let (a, aEvents) = try await join("ws://127.0.0.1:\(http.port)/rtc/v1/signal", room: "mounted")
        #expect(try await aEvents.next() == .joined(peers: 0))
        a.close()
        #expect(try await aEvents.next() == .closed(code: 1000, reason: ""))
    }

    /// With a token: none is 401, a wrong one 403 (Bearer, or a browser's subprotocol), every
    /// room needs a key, and a joiner with another key is refused without a seat or the offer.
    @Test func tokenAndRoomKeysKeepStrangersOut() async throws {
        try await withSignalServer(SignalServer.Options(access: .token("sig"))) { base in
            let http = "http" + base.dropFirst(2)
            let key = "k7Qm2-Xa9_LpW3zT"
            let none = try await HTTPClient().send(method: "GET", url: http + "?room=r&key=\(key)")
            #expect(none.status == 401 && none.text.hasPrefix("signaling needs a token: Authorization: Bearer T"))
            let wrong = try await HTTPClient().send(method: "GET", url: http + "?room=r&key=\(key)", headers: ["Authorization": "Bearer nope"])
            #expect(wrong.status == 403 && wrong.text == "wrong signaling token\n")
            let keyless = try await HTTPClient().send(method: "GET", url: http + "?room=r", headers: ["Authorization": "Bearer sig"])
            #expect(keyless.status == 400 && keyless.text.hasPrefix("this server needs a room key: ?room=NAME&key=KEY"))
            let short = try await HTTPClient().send(method: "GET", url: http + "?room=r&key=short", headers: ["Authorization": "Bearer sig"])
            #expect(short.status == 400 && short.text == "invalid room key: 16-128 letters, digits, '-', '_' or '.'\n")

            let a = try await SignalingClient.connect("\(base)?room=r&key=\(key)", token: "sig")
            let aEvents = Inbox.draining(a.events)
            #expect(try await aEvents.next() == .joined(peers: 0))
            let stranger = try await SignalingClient.connect("\(base)?room=r&key=\(key)x", token: "sig")
            let strangerEvents = Inbox.draining(stranger.events)
            #expect(try await strangerEvents.next() == .error("wrong room key"))
            #expect(try await strangerEvents.next() == .closed(code: 1008, reason: "wrong room key"))
            // A browser: the token as a subprotocol, which the 101 answers with swiftrtc.signal.
            let browser = try await RawWebSocket(url: "\(base)?room=r&key=\(key)",
                                                 headers: ["Sec-WebSocket-Protocol": "swiftrtc.signal, swiftrtc.bearer.c2ln"])
            #expect(browser.response.headers["Sec-WebSocket-Protocol"] == "swiftrtc.signal")
            #expect(try await browser.nextFrame() == WebSocketFrame(opcode: .text, payload: Array(#"{"type":"joined","room":"r","peers":1}"#.utf8)))
            #expect(try await aEvents.next() == .peerJoined)
            a.close()
        }
    }

    @Test func missingOrInvalidRoomIs400() async throws {
        try await withSignalServer { base in
            let http = "http" + base.dropFirst(2)
            for query in ["", "?room=", "?room=a%20b", "?other=x"] {
                let response = try await HTTPClient().send(method: "GET", url: http + query)
                #expect(response.status == 400)
                #expect(response.text == "missing or invalid room: ?room=NAME with 1-64 letters, digits, '-', '_' or '.'\n")
            }
            let plain = try await HTTPClient().send(method: "GET", url: http + "?room=x")
            #expect(plain.status == 426 && plain.text == "missing \"Upgrade: websocket\" header\n")
            await #expect(throws: SignalingError.self) { try await WebSocketClient.connect(base) }
            do {
                _ = try await WebSocketClient.connect(base)
            } catch {
                #expect("\(error)".contains("server answered 400 instead of 101 Switching Protocols: missing or invalid room"))
            }
        }
    }
}

/// A WebSocket client with no protocol logic: the handshake through HTTPClient.upgrade, then
/// exact frames out and frames decoded as they come.
final class RawWebSocket: @unchecked Sendable {   // used by one test task at a time
    let connection: UpgradedConnection
    let response: HTTPClientResponse
    private var decoder = WebSocketFrameDecoder(role: .client, maxFrameBytes: 1 << 20)

    init(url: String, headers: HTTPHeaders = [:]) async throws {
        let key = WebSocketHandshake.makeKey()
        var request = headers
        for (name, value) in WebSocketHandshake.requestHeaders(key: key) { request.add(name, value) }
        let (response, connection) = try await HTTPClient().upgrade(url: "http" + url.dropFirst(2), headers: request)
        try WebSocketHandshake.validateResponse(status: response.status, key: key) { response.headers.values($0) }
        self.response = response
        self.connection = try #require(connection)
    }

    func send(_ frame: WebSocketFrame, maskKey: UInt32?) {
        connection.write(WebSocketFrameEncoder.encode(frame, maskKey: maskKey))
    }

    func nextFrame() async throws -> WebSocketFrame {
        guard let frame = try await nextFrameOrEnd() else { throw Timeout(description: "connection ended") }
        return frame
    }

    /// The next frame, or nil when the server closed the connection.
    func nextFrameOrEnd() async throws -> WebSocketFrame? {
        try await JoinableThread.offPool { [self] in
            while true {
                if let frame = try decoder.next() { return frame }
                switch connection.read(timeout: .seconds(10)) {
                case .data(let bytes): decoder.append(bytes)
                case .timedOut: throw Timeout(description: "no frame within 10 s")
                case .closed: return nil
                }
            }
        }
    }
}
