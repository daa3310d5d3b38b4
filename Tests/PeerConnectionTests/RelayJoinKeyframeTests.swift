import PeerConnection
import Relay
import RTP
import Locks
import SessionSupport
import Testing
import Transport

/// A player that joins sees a picture at once: the relay asks the publisher for a keyframe. Its
/// requests are throttled (one per 300 ms answers everyone asking meanwhile), but the keyframe
/// already on its way may pass before a second player is there to get it — a viewer back on a
/// new session right after another joined would wait for someone else's next request. So a
/// join's request that the throttle holds back goes out when the throttle allows.
@Suite struct RelayJoinKeyframeTests {
    /// A relay with a publisher of `stream` (RTP written by the test), and the times of the
    /// keyframe requests (PLIs) the publisher gets. `endpoint`: the publisher's network.
    func published(_ stream: String, endpoint: (@Sendable (VirtualEndpoint) -> Void)? = nil) async throws
        -> (Simulation, RelayServer, PeerConnection, RtpTransceiver, Locked<[ContinuousClock.Instant]>) {
        let sim = Simulation()
        let relay = try sim.relay()
        let publisher = try sim.peer({ $0.mediaPipeline = false }, endpoint: endpoint)
        let sending = try await publisher.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        let plis = Locked<[ContinuousClock.Instant]>([])
        sending.sender.onRTCP = { p in if case .pli = p { plis.withLock { $0.append(sim.loop.now) } } }
        try await sim.exchange(relay, publisher, endpoint: "whip", stream: stream)
        return (sim, relay, publisher, sending, plis)
    }

    /// One small H.264 packet that starts no keyframe every 33 ms of virtual time, for `duration`.
    static func send(_ sim: Simulation, _ sending: RtpTransceiver, payloadType: UInt8, timestamp: inout UInt32, for duration: Duration) {
        let end = sim.loop.now + duration
        while sim.loop.now < end {
            timestamp &+= 3000
            sending.sender.send(payloadType: payloadType, payload: [0x41, 1], timestamp: timestamp, marker: true)
            sim.advance(by: .milliseconds(33))
        }
    }

    @Test func aSecondPlayerJoiningInsideTheThrottleStillGetsItsKeyframeRequest() async throws {
        let (sim, relay, publisher, sending, plis) = try await published("join")
        // The relay learns the publisher's SSRC from its packets.
        let pt = try #require(sending.negotiatedCodecs.first?.payloadType)
        for i in 0..<3 {
            sending.sender.send(payloadType: pt, payload: [0x41, UInt8(i)], timestamp: UInt32(i) * 3000, marker: true)
        }
        sim.advance(by: .seconds(1))   // past the throttle of any request so far
        let settled = plis.value.count

        func join() async throws -> PeerConnection {
            let player = try sim.peer { $0.mediaPipeline = false }
            _ = try await player.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: [.h264])
            try await sim.exchange(relay, player, endpoint: "whep", stream: "join")
            return player
        }
        let first = try await join()
        #expect(sim.run { plis.value.count == settled + 1 }, "the first player's join asked for a keyframe")
        let firstAt = try #require(plis.value.last)
        sim.advance(by: .milliseconds(100))
        let second = try await join()
        #expect(sim.run(within: .seconds(1)) { plis.value.count == settled + 2 }, "the second player's request was dropped")
        if let secondAt = plis.value.last, plis.value.count == settled + 2 {
            let gap = secondAt - firstAt
            #expect(gap >= .milliseconds(300) && gap < .milliseconds(350), "sent \(gap) after the first (throttle 300 ms)")
        }
        sim.advance(by: .seconds(1))
        #expect(plis.value.count == settled + 2, "one request per join: \(plis.value.count - settled)")
        await first.close()
        await second.close()
        await publisher.close()
        await relay.stop()
    }

    /// A publisher drops keyframe requests for 300 ms after a keyframe leaves (ours and
    /// libwebrtc's throttle). Two viewers back from a 40 s outage rejoin a few tens of ms apart:
    /// the first one's join brings a keyframe, and the second, connected just after it passed,
    /// waited out that window (0.43 s where the first took 0.1 s). It is sent that keyframe and
    /// the packets since from the relay's history at once, and no request is made. Not when it
    /// joins after the window (`joinAfter` 400 ms: a request goes out at once and brings a fresh
    /// one), nor when no player asked for that keyframe (`asked` false: a lone viewer of a
    /// publisher that just started; its request goes when the window ends).
    @Test(arguments: [(100, true), (400, true), (100, false)])
    func aPlayerJoiningJustAfterAnotherPlayersKeyframeIsSentItFromTheHistory(joinAfter: Int, asked: Bool) async throws {
        let (sim, relay, publisher, sending, plis) = try await published("window")
        let pt = try #require(sending.negotiatedCodecs.first?.payloadType)
        var timestamp: UInt32 = 0
        func send(for duration: Duration) { Self.send(sim, sending, payloadType: pt, timestamp: &timestamp, for: duration) }
        func join(_ received: Locked<[RTPPacket]>? = nil) async throws -> PeerConnection {
            let player = try sim.peer { $0.mediaPipeline = false }
            let receiving = try await player.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: [.h264])
            if let received { receiving.receiver.onRTP = { p in received.withLock { $0.append(p) } } }
            try await sim.exchange(relay, player, endpoint: "whep", stream: "window")
            return player
        }
        send(for: .seconds(1))
        var first: PeerConnection?
        if asked {
            let before = plis.value.count
            first = try await join()
            #expect(sim.run { plis.value.count > before }, "the first player's join asked for a keyframe")
        }
        let before = plis.value.count
        let keyframeAt = sim.loop.now
        timestamp &+= 3000
        // SPS and PPS (a STAP-A), then the IDR: both packets could start a keyframe; it starts at the first.
        let parameterSets: [UInt8] = [0x78, 0, 2, 0x67, 0x42, 0, 2, 0x68, 0xce]
        sending.sender.send(payloadType: pt, payload: parameterSets, timestamp: timestamp, marker: false)
        sending.sender.send(payloadType: pt, payload: [0x65, 0x88], timestamp: timestamp, marker: true)
        sim.advance(by: .milliseconds(33))
        send(for: keyframeAt + .milliseconds(joinAfter) - sim.loop.now)
        let received = Locked<[RTPPacket]>([])
        let player = try await join(received)
        let joined = sim.loop.now
        // Nothing more sent yet: what comes now is from the history.
        let replayed = sim.run(within: .milliseconds(100)) { received.value.count >= 3 }
        send(for: .seconds(1))
        let requests = plis.value.dropFirst(before)
        let got = received.value
        let metrics = String(decoding: await sim.request(relay, "GET", "/metrics").body, as: UTF8.self)
        if asked && joinAfter < 300 {
            try #require(joined - keyframeAt < .milliseconds(250), "joined \(joined - keyframeAt) after the keyframe")
            #expect(requests.isEmpty, "no request: the keyframe came from the history (asked \(requests.map { $0 - keyframeAt }))")
            #expect(got.prefix(2).map(\.payload) == [parameterSets, [0x65, 0x88]],
                    "starts on the keyframe, SPS and PPS first: \(got.prefix(3).map(\.payload))")
            #expect(replayed, "the keyframe and the two frames since, at the join: \(received.value.count)")
            #expect(zip(got, got.dropFirst()).allSatisfy { $1.sequenceNumber == $0.sequenceNumber &+ 1 }, "continuous numbers")
            #expect(zip(got.dropFirst(), got.dropFirst(2)).allSatisfy { $1.timestamp &- $0.timestamp == 3000 }, "the publisher's timing kept")
            #expect(metrics.contains("swiftrtc_keyframes_replayed_total 1"), "\(metrics)")
        } else {
            #expect(requests.count == 1, "one request for the join: \(requests.map { $0 - keyframeAt })")
            if let at = requests.first {
                if asked {
                    #expect(at - joined < .milliseconds(50), "asked \(at - joined) after the join")
                } else {
                    #expect(at - keyframeAt >= .milliseconds(330) && at - keyframeAt < .milliseconds(400),
                            "asked \(at - keyframeAt) after the keyframe (the publisher's window: 300 ms after it leaves)")
                }
            }
            #expect(!got.contains { $0.payload == [0x65, 0x88] || $0.payload == parameterSets }, "not sent the old keyframe")
            #expect(metrics.contains("swiftrtc_keyframes_replayed_total 0"), "\(metrics)")
        }
        await player.close()
        if let first { await first.close() }
        await publisher.close()
        await relay.stop()
    }

    /// A publisher that sends again after half a second of silence (an outage, a NAT rebinding)
    /// is asked for a keyframe at once: its players lost what went into the silence.
    @Test func aPublisherBackFromSilenceIsAskedForAKeyframe() async throws {
        let (sim, relay, publisher, sending, plis) = try await published("resume")
        let pt = try #require(sending.negotiatedCodecs.first?.payloadType)
        var timestamp: UInt32 = 0
        func send(for duration: Duration) { Self.send(sim, sending, payloadType: pt, timestamp: &timestamp, for: duration) }
        send(for: .seconds(1))
        let before = plis.value.count
        send(for: .seconds(1))
        #expect(plis.value.count == before, "no request while the publisher sends steadily")
        sim.advance(by: .milliseconds(400))   // shorter than resumeAfter: nothing
        send(for: .milliseconds(100))
        #expect(plis.value.count == before)
        sim.advance(by: .milliseconds(600))
        let resumed = sim.loop.now
        send(for: .milliseconds(100))
        #expect(plis.value.count == before + 1, "asked once on its return")
        if let at = plis.value.last { #expect(at - resumed < .milliseconds(50), "asked \(at - resumed) after the first packet back") }
        await publisher.close()
        await relay.stop()
    }

    /// A NAT rebinding after a 2 s gap (interop's outage proxy: both directions lost, then the
    /// publisher's packets come from a new port): the relay moves its path when the publisher's
    /// checked media comes from the new port, and the keyframe request reaches the publisher
    /// well inside a second (CI saw 1.24 s: the move waited a second of quiet from the old port).
    @Test func aPublisherRebindingAfterAGapIsAskedForAKeyframeSoon() async throws {
        let endpoint = Holder<VirtualEndpoint>()
        let (sim, relay, publisher, sending, plis) = try await published("rebind", endpoint: { endpoint.value = $0 })
        let pt = try #require(sending.negotiatedCodecs.first?.payloadType)
        var timestamp: UInt32 = 0
        func send(for duration: Duration) { Self.send(sim, sending, payloadType: pt, timestamp: &timestamp, for: duration) }
        send(for: .seconds(3))
        let before = plis.value.count
        let io = try #require(endpoint.value)
        let local = try #require(io.localAddresses.first)
        sim.loop.perform {
            io.uplink.blackHole(for: .seconds(2))
            io.downlink.blackHole(for: .seconds(2))
        }
        send(for: .seconds(2))
        let back = sim.loop.now
        // One packet still leaves on the old mapping as the new one takes over (CI's proxy did
        // this): the relay hears the old port at the very moment its path moves away.
        try sim.loop.perform {
            timestamp &+= 3000
            sending.sender.send(payloadType: pt, payload: [0x41, 1], timestamp: timestamp, marker: true)
            try sim.network.rebind(local, to: sim.nextAddress())
        }
        send(for: .seconds(2))
        let after = plis.value.filter { $0 >= back }
        #expect(plis.value.count > before, "no keyframe request reached the publisher after the rebinding")
        if let first = after.first { #expect(first - back < .milliseconds(200), "first request \(first - back) after the path came back") }
        await publisher.close()
        await relay.stop()
    }

    /// The request on a publisher's return can be lost (after a NAT rebinding its packets may
    /// come from the new port before our path moves there): with no keyframe 400 ms later it
    /// is made once more, and only once.
    @Test func aResumeRequestLostOnTheWayIsMadeAgain() async throws {
        let endpoint = Holder<VirtualEndpoint>()
        let (sim, relay, publisher, sending, plis) = try await published("lost", endpoint: { endpoint.value = $0 })
        let pt = try #require(sending.negotiatedCodecs.first?.payloadType)
        var timestamp: UInt32 = 0
        func send(for duration: Duration) { Self.send(sim, sending, payloadType: pt, timestamp: &timestamp, for: duration) }
        send(for: .seconds(2))
        let before = plis.value.count
        let io = try #require(endpoint.value)
        sim.loop.perform { io.downlink.blackHole(for: .milliseconds(800)) }   // what the relay sends it is lost
        sim.advance(by: .milliseconds(600))   // silent past resumeAfter
        let resumed = sim.loop.now
        send(for: .milliseconds(150))
        #expect(plis.value.count == before, "the return's request went into the black hole")
        send(for: .milliseconds(600))
        #expect(plis.value.count == before + 1, "asked again: \(plis.value.count - before) requests")
        if let at = plis.value.last, plis.value.count == before + 1 {
            #expect(at - resumed >= .milliseconds(400) && at - resumed < .milliseconds(450), "asked again \(at - resumed) after the return")
        }
        send(for: .seconds(1))
        #expect(plis.value.count == before + 1, "only once")
        await publisher.close()
        await relay.stop()
    }
}
