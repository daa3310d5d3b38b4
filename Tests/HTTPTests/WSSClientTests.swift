import Testing
@testable import HTTP
import Signaling

/// wss:// end to end: SignalingClients through TLS (Python's ssl in front of a SignalServer),
/// here because the TLS test server lives with the HTTP tests.
@Suite(.serialized) struct WSSClientTests {
    /// Events are awaited in order; the time limit bounds a hang.
    @Test(.timeLimit(.minutes(1))) func signalingOverWSS() async throws {
        let signal = try SignalServer(host: "127.0.0.1", port: 0)
        defer { signal.stop() }
        let port = try #require(signal.port)
        try await withTLSServer(forwardingTo: port) { tls in
            let url = "wss://127.0.0.1:\(tls.port)/rtc/v1/signal/?room=tls"
            // The certificate is self-signed: refused unless insecure.
            await #expect(throws: HTTPError.self) { try await SignalingClient.connect(url) }

            let a = try await SignalingClient.connect(url, insecure: true)
            var aEvents = a.events.makeAsyncIterator()
            #expect(await aEvents.next() == .joined(peers: 0))
            let b = try await SignalingClient.connect(url, insecure: true)
            var bEvents = b.events.makeAsyncIterator()
            #expect(await bEvents.next() == .joined(peers: 1))
            #expect(await aEvents.next() == .peerJoined)
            let sdp = "v=0\r\n" + String(repeating: "a=x\r\n", count: 2000)   // several TLS records
            a.sendOffer(sdp)
            #expect(await bEvents.next() == .offer(sdp))
            b.close()
            #expect(await bEvents.next() == .closed(code: 1000, reason: ""))
            #expect(await aEvents.next() == .peerLeft)
            a.close()
            #expect(await aEvents.next() == .closed(code: 1000, reason: ""))
        }
    }
}
