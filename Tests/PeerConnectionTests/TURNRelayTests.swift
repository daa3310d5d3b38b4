import ICE
import PeerConnection
import STUN
import Testing
import Transport

@Suite(.serialized) struct TURNRelayTests {
    func relayPeer(_ server: MiniTURNServer, password: String = "p",
                   _ configure: (inout PeerConnection.Configuration) -> Void = { _ in }) throws -> PeerConnection {
        try loopbackPeer {
            $0.iceServers = [IceServer(urls: ["turn:\(server.address)?transport=udp"], username: "u", credential: password)]
            $0.iceTransportPolicy = .relay
            configure(&$0)
        }
    }

    @Test("relay-only peers connect through a TURN server, RTP both ways as ChannelData, allocations released on close")
    func relayOnlyPeersConnectThroughTURN() async throws {
        let server = try MiniTURNServer()
        defer { server.stop() }
        let a = try relayPeer(server), b = try relayPeer(server) { $0.remoteTransceiverDirection = .sendrecv }
        let videoA = try await a.addTransceiver(.video, codecs: [.h264])
        try await negotiate(a, b)
        // Only relay candidates were offered and answered.
        for pc in [a, b] {
            let sdp = try #require(pc.localDescription).sdp
            let types = sdp.split(separator: "\r\n").filter { $0.hasPrefix("a=candidate:") }
                .compactMap { try? Candidate(parsing: String($0)).type }
            #expect(types == [.relay], "\(sdp)")
        }
        try await a.waitConnected(timeout: .seconds(10))
        try await b.waitConnected(timeout: .seconds(10))
        #expect(await a.selectedLocalCandidateType() == "relay")
        #expect(await b.selectedLocalCandidateType() == "relay")

        let atB = PacketLog(), atA = PacketLog()
        let videoB = try #require(b.transceivers.first)
        videoB.receiver.onRTP = { atB.append($0) }
        videoA.receiver.onRTP = { atA.append($0) }
        let payloads = (0..<20).map { i in [UInt8](repeating: UInt8(i), count: 800) }
        for (i, p) in payloads.enumerated() { videoA.sender.send(payloadType: 102, payload: p, timestamp: UInt32(i * 3000)) }
        #expect(await atB.wait(for: 20).map(\.payload) == payloads)
        videoB.sender.send(payloadType: 102, payload: [1, 2, 3], timestamp: 1)
        #expect(await atA.wait(for: 1).first?.payload == [1, 2, 3])

        let stats = await a.transportStatistics()
        #expect((stats["turnChannelDataSent"] ?? 0) > 20)
        #expect((stats["turnChannelDataReceived"] ?? 0) > 0)
        let relayed = server.counters.withLock { $0 }
        #expect(relayed.allocations == 2 && relayed.channelDataFromClients > 20)

        await a.close()
        await b.close()
        let end = ContinuousClock.now + .seconds(2)
        while server.counters.withLock({ $0.released }) < 2, ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(server.counters.withLock { $0.released } == 2)
    }

    @Test("a release that meets a stale nonce is retried before the sockets close")
    func releaseRetriesAStaleNonce() async throws {
        let server = try MiniTURNServer(staleNonceOnRelease: true)
        defer { server.stop() }
        let a = try relayPeer(server)
        _ = try await a.addTransceiver(.audio)
        try await a.setLocalDescription(try await a.createOffer())
        await a.waitForGatheringComplete(timeout: .seconds(2))
        try #require(server.counters.withLock { $0.allocations } == 1)
        await a.close()
        let end = ContinuousClock.now + .seconds(2)
        while server.counters.withLock({ $0.released }) < 1, ContinuousClock.now < end {
            try await Task.sleep(for: .milliseconds(10))
        }
        #expect(server.counters.withLock { $0 }.staleNonces == 1)
        #expect(server.counters.withLock { $0 }.released == 1)
    }

    @Test("relay policy without a TURN server fails and says why")
    func relayPolicyWithoutTURNFails() async throws {
        let a = try loopbackPeer { $0.iceTransportPolicy = .relay }
        _ = try await a.addTransceiver(.audio)
        try await a.setLocalDescription(try await a.createOffer())
        await a.waitForGatheringComplete(timeout: .seconds(2))
        #expect(a.peerConnectionState == .failed)
        await #expect(throws: PeerConnectionError("connection failed: iceTransportPolicy relay, but no usable turn: server: there is nothing to gather")) {
            try await a.waitConnected(timeout: .seconds(2))
        }
        await a.close()
    }

    @Test("a wrong TURN password fails the relay-only connection at once with the server's 401")
    func wrongPasswordFailsClearly() async throws {
        let server = try MiniTURNServer()
        defer { server.stop() }
        let a = try relayPeer(server, password: "wrong")
        _ = try await a.addTransceiver(.audio)
        try await a.setLocalDescription(try await a.createOffer())
        let started = ContinuousClock.now
        await a.waitForGatheringComplete(timeout: .seconds(5))
        do {
            try await a.waitConnected(timeout: .seconds(5))
            Issue.record("connected with a wrong password")
        } catch {
            #expect("\(error)" == "connection failed: TURN server \(server.address) rejected the credentials for user u (401 Unauthorized)")
        }
        #expect(ContinuousClock.now - started < .seconds(2))
        #expect(a.peerConnectionState == .failed)
        await a.close()
    }
}
