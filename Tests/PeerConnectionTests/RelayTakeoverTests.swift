import Capture
import Locks
import Media
import PeerConnection
import Relay
import SessionSupport
import Testing

/// The frame numbers of the test pattern as a player decodes them.
final class PatternLog: VideoRenderer, Sendable {
    private let numbers = Locked<[UInt32]>([])
    func render(_ frame: VideoFrame) {
        if let n = TestPattern.read(frame)?.frameNumber { numbers.withLock { $0.append(n) } }
    }
    var all: [UInt32] { numbers.value }
}

/// A viewer stays connected while the stream's publisher is replaced (new SSRCs, a random
/// sequence start): the relay keeps each player's sequence numbers and timestamps continuous,
/// so the player's SRTP replay window and jitter buffer accept the new publisher at once.
/// The relay and the peers run in process on a simulated loop (`Simulation`); frames go out one
/// per 33 ms of virtual time.
@Suite(.serialized) struct RelayTakeoverTests {
    func publisher(_ sim: Simulation, _ relay: RelayServer) async throws -> (PeerConnection, VideoSource) {
        let pc = try sim.peer()
        let source = VideoSource()
        let t = try await pc.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        try await sim.exchange(relay, pc, endpoint: "whip", stream: "takeover")
        return (pc, source)
    }

    @Test(arguments: [true, false])
    func viewerDecodesTheNewPublisher(takeover: Bool) async throws {
        let sim = Simulation()
        let relay = try sim.relay(takeover: takeover)
        let (a, sourceA) = try await publisher(sim, relay)

        let player = try sim.peer()
        _ = try await player.addTransceiver(.video, TransceiverInit(direction: .recvonly))
        try await sim.exchange(relay, player, endpoint: "whep", stream: "takeover")
        let log = PatternLog()
        try #require(player.transceivers.first?.receiver.videoTrack).addRenderer(log)
        // One camera's numbering across both publishers: A's frames from 0, B's after them.
        let feed = PatternFeed(sim, into: sourceA, width: 640, height: 360)
        #expect(feed.run(within: .seconds(20)) { log.all.count >= 5 })
        let sentA = feed.sent
        #expect(log.all.count >= 5, "the player decoded \(log.all.count) of \(sentA) frames from the first publisher")

        // With --takeover the new publisher replaces A, alive, at once.
        if !takeover {
            // A goes silent (as if killed): a second publisher is refused while A is fresh, and
            // takes over once A has sent nothing for 3 s.
            let early = try sim.peer()
            _ = try await early.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
            try await early.setLocalDescription(try await early.createOffer())
            #expect(sim.run { early.iceGatheringState == .complete })
            let refused = await sim.request(relay, "POST", "/rtc/v1/whip/?app=live&stream=takeover",
                                            body: Array(try #require(early.localDescription).sdp.utf8),
                                            headers: ["Content-Type": "application/sdp"])
            #expect(refused.status == 409)
            await early.close()
            sim.advance(by: .milliseconds(3300))
        }
        let (b, sourceB) = try await publisher(sim, relay)
        let switchedAt = sim.loop.now
        let before = log.all.count
        feed.source = sourceB
        let seen = feed.run(within: .seconds(20)) { log.all.dropFirst(before).filter { $0 >= UInt32(sentA) }.count >= 10 }
        let fromB = log.all.dropFirst(before).filter { $0 >= UInt32(sentA) }
        #expect(seen && fromB.count >= 10, "after the switch the player decoded \(fromB.count) of \(feed.sent - sentA) frames from the new publisher")
        #expect(sim.loop.now - switchedAt < .seconds(10))
        let stats = await player.getStats()
        let inbound = stats.ofType("inbound-rtp").first
        #expect((inbound?.int("framesDecoded") ?? 0) >= before + 10)
        // Passed through, the new publisher's random sequence start is either "too old" (SRTP
        // drops it: no frames) or a jump the player counts as thousands of packets lost.
        #expect((inbound?.int("packetsLost") ?? 99) <= 5, "packetsLost \(inbound?.int("packetsLost") ?? -1)")
        await player.close()
        await b.close()
        await a.close()
        await relay.stop()
    }
}
