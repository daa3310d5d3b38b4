import PeerConnection
import Relay
import RTP
import Locks
import SessionSupport
import Testing

/// A player that joins sees a picture at once: the relay asks the publisher for a keyframe. Its
/// requests are throttled (one per 300 ms answers everyone asking meanwhile), but the keyframe
/// already on its way may pass before a second player is there to get it — a viewer back on a
/// new session right after another joined would wait for someone else's next request. So a
/// join's request that the throttle holds back goes out when the throttle allows.
@Suite struct RelayJoinKeyframeTests {
    /// A relay with a publisher of `stream` (RTP written by the test), and the times of the
    /// keyframe requests (PLIs) the publisher gets.
    func published(_ stream: String) async throws
        -> (Simulation, RelayServer, PeerConnection, RtpTransceiver, Locked<[ContinuousClock.Instant]>) {
        let sim = Simulation()
        let relay = try sim.relay()
        let publisher = try sim.peer { $0.mediaPipeline = false }
        let sending = try await publisher.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        let plis = Locked<[ContinuousClock.Instant]>([])
        sending.sender.onRTCP = { p in if case .pli = p { plis.withLock { $0.append(sim.loop.now) } } }
        try await sim.exchange(relay, publisher, endpoint: "whip", stream: stream)
        return (sim, relay, publisher, sending, plis)
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

    /// A publisher that sends again after half a second of silence (an outage, a NAT rebinding)
    /// is asked for a keyframe at once: its players lost what went into the silence.
    @Test func aPublisherBackFromSilenceIsAskedForAKeyframe() async throws {
        let (sim, relay, publisher, sending, plis) = try await published("resume")
        let pt = try #require(sending.negotiatedCodecs.first?.payloadType)
        var timestamp: UInt32 = 0
        func send(for duration: Duration) {
            let end = sim.loop.now + duration
            while sim.loop.now < end {
                timestamp &+= 3000
                sending.sender.send(payloadType: pt, payload: [0x41, 1], timestamp: timestamp, marker: true)
                sim.advance(by: .milliseconds(33))
            }
        }
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
}
