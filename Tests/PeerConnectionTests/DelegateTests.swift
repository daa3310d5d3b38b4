import Media
import PeerConnection
import Relay
import Streaming
import Synchronization
import Testing
import STUN

/// The delegates (the iOS SDK's shape) beside the AsyncStreams: the same events, on the loop
/// thread, held weakly; a data channel's delegate takes its messages.
@Suite("Delegates", .serialized)
struct DelegateTests {
    /// Whether each call came on the connection's loop thread.
    final class ThreadCheck: PeerConnectionDelegate {
        let onLoop = Mutex<[Bool]>([])
        func peerConnection(_ pc: PeerConnection, didChange state: SignalingState) { onLoop.withLock { $0.append(pc.loop.inLoop) } }
        func peerConnection(_ pc: PeerConnection, didGenerate candidate: IceCandidate) { onLoop.withLock { $0.append(pc.loop.inLoop) } }
    }

    @Test("the delegate gets every event that goes on events, in the same order, on the loop thread")
    func sameEventsAsTheStream() async throws {
        let a = try loopbackPeer(), b = try loopbackPeer()
        let log = EventLog(a)
        try await a.addTransceiver(.audio)
        _ = try await a.createDataChannel("x")
        try await negotiate(a, b)
        try await a.waitConnected(timeout: .seconds(10))
        await a.close()   // ends the stream after what it holds
        var streamed: [String] = []
        for await event in a.events { streamed.append("\(event)") }
        #expect(log.all.map { "\($0)" } == streamed)
        for expected in ["negotiationNeeded", "signalingStateChanged(", "iceGatheringStateChanged(", "iceCandidate(",
                         "iceConnectionStateChanged(", "connectionStateChanged(", "selectedCandidatePairChanged("] {
            #expect(streamed.contains { $0.hasPrefix(expected) }, "\(expected) in \(streamed)")
        }
        #expect(log.all.contains { if case .connectionStateChanged(.connected) = $0 { return true }; return false })
        await b.close()

        let c = try loopbackPeer()
        let check = ThreadCheck()
        c.delegate = check
        try await c.addTransceiver(.audio)
        try await c.setLocalDescription(try await c.createOffer())
        await c.waitForGatheringComplete()
        let calls = check.onLoop.withLock { $0 }
        #expect(calls.count >= 2 && calls.allSatisfy { $0 }, "\(calls)")
        await c.close()
    }

    @Test("the connection holds its delegate weakly")
    func weak() throws {
        let pc = try loopbackPeer()
        var log: EventLog? = EventLog(pc)
        weak let held = log
        #expect(pc.delegate === held)
        log = nil
        #expect(held == nil && pc.delegate == nil)
    }

    @Test("a data channel's delegate takes its messages; without one they go on messages")
    func channelDelegateTakesMessages() async throws {
        let (a, b, atA, atB) = try await connectedChannel("takes")
        let log = DelegateLog()
        atB.delegate = log
        try atA.send("to the delegate")
        #expect(await log.wait { $0.messages == ["to the delegate"] })
        atB.delegate = nil
        try atA.send("to the stream")
        // The first message never went on the stream: the stream's first is the second.
        #expect(await collect(atB, 1).map(\.text) == ["to the stream"])
        await a.close()
        await b.close()
    }

    @Test("a StreamingSession reads its connection's events itself: states follow them, the delegate is the app's")
    func streamingSession() async throws {
        let relay = try await RelayServer(httpPort: 0, udpPort: 0, log: { _ in })
        var options = StreamingSession.Options()
        options.configuration.interfaceAddresses = [SocketAddress(host: "127.0.0.1", port: 0)].compactMap { $0 }
        options.videoCodecs = [.vp8]
        let publisher = try StreamingSession(role: .publish, url: "\(relay.url)/rtc/v1/whip/?app=live&stream=d", options: options)
        let log = EventLog(publisher.peerConnection)
        let states = publisher.states, again = publisher.states
        try await publisher.publish(video: VideoTrack(id: "v", source: VideoSource()), audio: nil)
        await publisher.close()
        var seen: [PeerConnectionState] = []
        for await state in states { seen.append(state) }
        #expect(seen.first == .new && seen.contains(.connected) && seen.last == .closed, "\(seen)")
        var seenAgain: [PeerConnectionState] = []
        for await state in again { seenAgain.append(state) }
        #expect(seenAgain == seen, "every states stream gets every state")
        #expect(log.all.contains { if case .connectionStateChanged(.connected) = $0 { return true }; return false })
        #expect(log.all.contains { if case .iceCandidate = $0 { return true }; return false })
        await relay.stop()
    }
}
