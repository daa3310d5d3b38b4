import Foundation
import Glibc
import ICE
import PeerConnection
import SessionSupport
import STUN
import Synchronization
import Testing
import Transport

/// TURN over UDP runs on a `Simulation`: the peers and `MiniTURNServer` on its virtual network,
/// every allocation, permission, channel and release in virtual time. TURN over TCP and TLS stays
/// on real sockets: its client connects a `TCPStream` and polls its descriptor, which a simulated
/// loop does not do (it has no file descriptors to poll), and what those tests check is the
/// socket and handshake path itself.
@Suite(.serialized) struct TURNRelayTests {
    func relayPeer(_ sim: Simulation, _ server: MiniTURNServer, password: String = "p", endpoint: Holder<VirtualEndpoint>? = nil,
                   _ configure: (inout PeerConnection.Configuration) -> Void = { _ in }) throws -> PeerConnection {
        var attach: (@Sendable (VirtualEndpoint) -> Void)?
        if let endpoint { attach = { io in endpoint.value = io } }
        return try sim.peer({ config in
            config.iceServers = [IceServer(urls: ["turn:\(server.address)?transport=udp"], username: "u", credential: password)]
            config.iceTransportPolicy = .relay
            configure(&config)
        }, endpoint: attach)
    }

    @Test("relay-only peers connect through a TURN server, RTP both ways as ChannelData, allocations released on close")
    func relayOnlyPeersConnectThroughTURN() async throws {
        let sim = Simulation()
        let server = try MiniTURNServer(sim)
        defer { server.stop() }
        let socketsA = Holder<VirtualEndpoint>(), socketsB = Holder<VirtualEndpoint>()
        let a = try relayPeer(sim, server, endpoint: socketsA)
        let b = try relayPeer(sim, server, endpoint: socketsB) { $0.remoteTransceiverDirection = .sendrecv }
        let videoA = try await a.addTransceiver(.video, codecs: [.h264])
        try await sim.negotiate(a, b)
        // Only relay candidates were offered and answered.
        for pc in [a, b] {
            let sdp = try #require(pc.localDescription).sdp
            let types = sdp.split(separator: "\r\n").filter { $0.hasPrefix("a=candidate:") }
                .compactMap { try? Candidate(parsing: String($0)).type }
            #expect(types == [.relay], "\(sdp)")
        }
        try sim.connect(a, b)
        #expect(await a.selectedLocalCandidateType() == "relay")
        #expect(await b.selectedLocalCandidateType() == "relay")

        let atB = PacketLog(), atA = PacketLog()
        let videoB = try #require(b.transceivers.first)
        videoB.receiver.onRTP = { atB.append($0) }
        videoA.receiver.onRTP = { atA.append($0) }
        let payloads = (0..<20).map { i in [UInt8](repeating: UInt8(i), count: 800) }
        for (i, p) in payloads.enumerated() { videoA.sender.send(payloadType: 102, payload: p, timestamp: UInt32(i * 3000)) }
        #expect(sim.run { atB.all.count >= 20 })
        #expect(atB.all.map(\.payload) == payloads)
        videoB.sender.send(payloadType: 102, payload: [1, 2, 3], timestamp: 1)
        #expect(sim.run { !atA.all.isEmpty })
        #expect(atA.all.first?.payload == [1, 2, 3])

        let stats = await a.transportStatistics()
        #expect((stats["turnChannelDataSent"] ?? 0) > 20)
        #expect((stats["turnChannelDataReceived"] ?? 0) > 0)
        let relayed = server.counters.withLock { $0 }
        #expect(relayed.allocations == 2 && relayed.channelDataFromClients > 20)

        // Each close releases its allocation and closes the sockets once the server answered,
        // not when the 1 s it waits for that runs out.
        let closing = [await sim.beginClose(a), await sim.beginClose(b)]
        let closedAt = sim.loop.now
        let a0 = try #require(socketsA.value), b0 = try #require(socketsB.value)
        #expect(sim.run(within: .seconds(2)) { server.counters.withLock { $0.released } == 2 && a0.isClosed && b0.isClosed })
        #expect(sim.loop.now - closedAt < .seconds(1), "sockets closed after \(sim.loop.now - closedAt)")
        for task in closing { await task.value }
        #expect(server.counters.withLock { $0.released } == 2)
    }

    @Test("a release that meets a stale nonce is retried before the sockets close")
    func releaseRetriesAStaleNonce() async throws {
        let sim = Simulation()
        let server = try MiniTURNServer(sim, staleNonceOnRelease: true)
        defer { server.stop() }
        let sockets = Holder<VirtualEndpoint>()
        let a = try relayPeer(sim, server, endpoint: sockets)
        _ = try await a.addTransceiver(.audio)
        try await a.setLocalDescription(try await a.createOffer())
        #expect(sim.run(within: .seconds(2)) { a.iceGatheringState == .complete })
        try #require(server.counters.withLock { $0.allocations } == 1)
        let closing = await sim.beginClose(a)
        let io = try #require(sockets.value)
        #expect(sim.run(within: .seconds(2)) { server.counters.withLock { $0.released } == 1 && io.isClosed })
        await closing.value
        #expect(server.counters.withLock { $0 }.staleNonces == 1)
        #expect(server.counters.withLock { $0 }.released == 1)
    }

    @Test("relay policy without a TURN server fails and says why")
    func relayPolicyWithoutTURNFails() async throws {
        let sim = Simulation()
        let a = try sim.peer { $0.iceTransportPolicy = .relay }
        _ = try await a.addTransceiver(.audio)
        try await a.setLocalDescription(try await a.createOffer())
        #expect(sim.run(within: .seconds(2)) { a.iceGatheringState == .complete })
        #expect(a.connectionState == .failed)
        await #expect(throws: PeerConnectionError(.transport, "connection failed: iceTransportPolicy relay, but no usable turn: server: there is nothing to gather")) {
            try await a.waitConnected(timeout: .seconds(2))
        }
        await a.close()
    }

    @Test("a wrong TURN password fails the relay-only connection at once with the server's 401")
    func wrongPasswordFailsClearly() async throws {
        let sim = Simulation()
        let server = try MiniTURNServer(sim)
        defer { server.stop() }
        let a = try relayPeer(sim, server, password: "wrong")
        await expectFailsAtOnce(sim, a, "connection failed: TURN server \(server.address) rejected the credentials for user u (401 Unauthorized)")
        await a.close()
    }

    /// Offers, gathers, and expects the connection to fail within 2 s of virtual time with `message`.
    func expectFailsAtOnce(_ sim: Simulation, _ a: PeerConnection, _ message: String,
                           sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            _ = try await a.addTransceiver(.audio)
            try await a.setLocalDescription(try await a.createOffer())
        } catch {
            Issue.record("cannot offer: \(error)", sourceLocation: sourceLocation)
        }
        let started = sim.loop.now
        let ended = sim.run(within: .seconds(5)) {
            a.iceGatheringState == .complete && [.connected, .failed, .closed].contains(a.connectionState)
        }
        #expect(ended, "gathering \(a.iceGatheringState), \(a.connectionState)", sourceLocation: sourceLocation)
        #expect(sim.loop.now - started < .seconds(2), sourceLocation: sourceLocation)
        do {
            try await a.waitConnected(timeout: .seconds(5))   // the state is final: it returns at once
            Issue.record("connected, but expected: \(message)", sourceLocation: sourceLocation)
        } catch {
            #expect("\(error)" == message, sourceLocation: sourceLocation)
        }
        #expect(a.connectionState == .failed, sourceLocation: sourceLocation)
    }

    /// On real sockets and the wall clock: offers, gathers, and expects the connection to fail
    /// within 2 s with `message` (the waits end on the connection's events).
    func expectFailsAtOnce(_ a: PeerConnection, _ message: String, sourceLocation: SourceLocation = #_sourceLocation) async {
        do {
            _ = try await a.addTransceiver(.audio)
            try await a.setLocalDescription(try await a.createOffer())
        } catch {
            Issue.record("cannot offer: \(error)", sourceLocation: sourceLocation)
        }
        let started = ContinuousClock.now
        await a.waitForGatheringComplete(timeout: .seconds(5))
        do {
            try await a.waitConnected(timeout: .seconds(5))
            Issue.record("connected, but expected: \(message)", sourceLocation: sourceLocation)
        } catch {
            #expect("\(error)" == message, sourceLocation: sourceLocation)
        }
        #expect(ContinuousClock.now - started < .seconds(2), sourceLocation: sourceLocation)
        #expect(a.connectionState == .failed, sourceLocation: sourceLocation)
    }

    /// turns: to a TCP server that answers the ClientHello with something that is not TLS, or
    /// hangs up: the handshake error is the relay-only connection's failure, at once.
    @Test("turns: to a server that does not speak TLS fails the relay-only connection with the handshake's error",
          arguments: [TCPAnswerer.Reply.garbage, .hangUp])
    func turnsHandshakeFailureFailsClearly(_ reply: TCPAnswerer.Reply) async throws {
        let server = try TCPAnswerer(reply)
        let a = try loopbackPeer {
            $0.iceServers = [IceServer(urls: ["turns:127.0.0.1:\(server.port)?transport=tcp"], username: "u", credential: "p")]
            $0.iceTransportPolicy = .relay
        }
        let reason = reply == .hangUp ? "connection closed by the server" : "wrong version number"
        await expectFailsAtOnce(a, "connection failed: TURN server 127.0.0.1:\(server.port): TLS handshake with 127.0.0.1 failed: \(reason)")
        #expect((server.received() ?? 0) > 0, "no ClientHello reached the server")
        #expect(try #require(a.localDescription).sdp.contains(" typ relay") == false)
        await a.close()
    }

    /// A server that never gets an allocation (no TCP connection; a CA file that does not load)
    /// is the relay-only connection's failure, in its own words.
    @Test("a TURN server that cannot be set up fails the relay-only connection with why")
    func setupErrorsAreTheFailure() async throws {
        // Bound and not listening: a connection to it is refused.
        let (unlistened, port) = try boundTCPSocket()
        defer { close(unlistened) }
        let refused = try loopbackPeer {
            $0.iceServers = [IceServer(urls: ["turn:127.0.0.1:\(port)?transport=tcp"], username: "u", credential: "p")]
            $0.iceTransportPolicy = .relay
        }
        await expectFailsAtOnce(refused, "connection failed: TURN server turn:127.0.0.1:\(port)?transport=tcp: cannot connect TCP to 127.0.0.1:\(port): Connection refused")
        await refused.close()

        let badCA = try loopbackPeer {
            $0.iceServers = [IceServer(urls: ["turns:127.0.0.1:\(port)"], username: "u", credential: "p", tlsCAFile: "/nonexistent/ca.pem")]
            $0.iceTransportPolicy = .relay
        }
        await expectFailsAtOnce(badCA, "connection failed: TURN server turns:127.0.0.1:\(port)?transport=tcp: cannot load the CA certificates in /nonexistent/ca.pem: No such file or directory")
        await badCA.close()
    }
}

/// A TCP listener on 127.0.0.1 that accepts one connection, reads what comes, then answers
/// `reply` and closes.
final class TCPAnswerer: Sendable {
    enum Reply: Sendable { case garbage, hangUp }
    let port: UInt16
    private let count = Mutex(0)
    private let done = DispatchSemaphore(value: 0)

    init(_ reply: Reply) throws {
        let (listener, port) = try boundTCPSocket()
        guard listen(listener, 1) == 0 else {
            close(listener)
            throw TransportError("cannot listen on 127.0.0.1:\(port)")
        }
        self.port = port
        Thread.detachNewThread { [self] in
            let connection = accept(listener, nil, nil)
            var buffer = [UInt8](repeating: 0, count: 4096)
            let n = buffer.withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
            count.withLock { $0 = max(0, n) }
            if reply == .garbage {
                let text = Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8)
                _ = text.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            }
            close(connection)
            close(listener)
            done.signal()
        }
    }

    /// Bytes the first read got (the ClientHello), once the exchange is over; nil if no client
    /// came within 5 s (the accept thread then stays blocked until the process ends).
    func received() -> Int? {
        guard done.wait(timeout: .now() + 5) == .success else { return nil }
        return count.withLock { $0 }
    }
}

/// A TCP socket bound to 127.0.0.1 on a port of the kernel's choosing.
func boundTCPSocket() throws -> (fd: Int32, port: UInt16) {
    let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    var length = socklen_t(MemoryLayout<sockaddr_in>.size)
    let bound = withUnsafeMutablePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) == 0 && getsockname(fd, $0, &length) == 0 }
    }
    guard fd >= 0, bound else {
        close(fd)
        throw TransportError("cannot bind a TCP socket on 127.0.0.1")
    }
    return (fd, UInt16(bigEndian: address.sin_port))
}
