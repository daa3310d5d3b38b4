import Capture
import HTTP
import Locks
import Media
import PeerConnection
import Relay
import SessionSupport
import TestSupport
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
@Suite(.serialized, .timeLimit(.minutes(2))) struct RelayTakeoverTests {
    func publisher(_ sim: Simulation, _ relay: RelayServer) async throws -> (PeerConnection, VideoSource) {
        let pc = try sim.peer()
        let source = VideoSource()
        let t = try await pc.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        try await sim.exchange(relay, pc, endpoint: "whip", stream: "takeover")
        return (pc, source)
    }

    /// A complete WHIP offer of a would-be publisher of the stream (not sent).
    func offer(_ sim: Simulation) async throws -> (PeerConnection, [UInt8]) {
        let pc = try sim.peer()
        _ = try await pc.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        try await pc.setLocalDescription(try await pc.createOffer())
        #expect(sim.run { pc.iceGatheringState == .complete })
        return (pc, Array(try #require(pc.localDescription).sdp.utf8))
    }

    /// What a test sees of a request: its answer (and the virtual time it came at), and how many
    /// publishes the relay has held (it logs each).
    struct Seen: Sendable {
        var answer: (HTTPResponse, ContinuousClock.Instant)?
        var held = 0
    }

    /// A relay that reports its holds to `seen`.
    func relay(_ sim: Simulation, takeover: Bool, _ seen: Monitor<Seen>) throws -> RelayServer {
        try sim.relay(takeover: takeover) { line in if line.contains(" held ") { seen.withLock { $0.held += 1 } } }
    }

    /// POSTs `body`; if the relay holds it (waiting for the stream's publisher to be silent long
    /// enough), `whileHeld` moves virtual time on until the hold ends. The answer and the virtual
    /// time it came at. The hold is an event of the relay, so time moves only once it is armed;
    /// until then the request runs on the test's threads, so the waits have no wall-clock limit
    /// of their own (a loaded host took over 10 s): the suite's time limit catches a hang.
    func post(_ sim: Simulation, _ relay: RelayServer, _ seen: Monitor<Seen>, _ body: [UInt8],
              whileHeld: () -> Void = {}) async -> (response: HTTPResponse?, at: ContinuousClock.Instant, held: Bool) {
        let heldBefore = seen.withLock { s -> Int in
            s.answer = nil
            return s.held
        }
        Task {
            let r = await sim.request(relay, "POST", "/rtc/v1/whip/?app=live&stream=takeover", body: body,
                                      headers: ["Content-Type": "application/sdp"])
            seen.withLock { $0.answer = (r, sim.loop.now) }
        }
        #expect(await seen.wait(until: { $0.answer != nil || $0.held > heldBefore }, timeout: nil))
        let held = seen.value.answer == nil
        if held { whileHeld() }
        #expect(await seen.wait(until: { $0.answer != nil }, timeout: nil), "no answer after the hold")
        return (seen.value.answer?.0, seen.value.answer?.1 ?? sim.loop.now, held)
    }

    @Test(arguments: [true, false])
    func viewerDecodesTheNewPublisher(takeover: Bool) async throws {
        let sim = Simulation()
        let seen = Monitor(Seen())
        let relay = try relay(sim, takeover: takeover, seen)
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
            // A second publisher is refused while A is live; A goes silent (as if killed) and
            // one takes over once A has sent nothing for a second.
            let (early, body) = try await offer(sim)
            let refused = await post(sim, relay, seen, body)
            #expect(refused.response?.status == 409 && !refused.held)
            await early.close()
            sim.advance(by: .milliseconds(1100))
        }
        let (b, sourceB) = try await publisher(sim, relay)
        let switchedAt = sim.loop.now
        let before = log.all.count
        feed.source = sourceB
        let decoded = feed.run(within: .seconds(20)) { log.all.dropFirst(before).filter { $0 >= UInt32(sentA) }.count >= 10 }
        let fromB = log.all.dropFirst(before).filter { $0 >= UInt32(sentA) }
        #expect(decoded && fromB.count >= 10, "after the switch the player decoded \(fromB.count) of \(feed.sent - sentA) frames from the new publisher")
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

    /// How the relay recognises a publisher back on a new session (address changed, NAT
    /// rebound, ICE failed): by its old session's silence. A publish that comes 0.3 s into the
    /// silence is held, not refused, and takes the stream over when the silence reaches
    /// `publisherSilence` (0.5 s); one that comes while the publisher is live gets 409 at once, and
    /// one whose publisher speaks again during the hold gets 409 after it.
    @Test func aPublisherBackOnANewSessionIsHeldUntilTheOldOneIsSilent() async throws {
        let sim = Simulation()
        let seen = Monitor(Seen())
        let relay = try relay(sim, takeover: false, seen)
        let (a, sourceA) = try await publisher(sim, relay)
        let feed = PatternFeed(sim, into: sourceA, width: 320, height: 180)
        feed.run(for: .seconds(1))
        let (stranger, body) = try await offer(sim)
        let live = await post(sim, relay, seen, body)
        #expect(live.response?.status == 409 && !live.held, "a publish to a live stream is refused at once")

        // A pauses 0.3 s and then speaks again while the publish is held: refused after the hold.
        sim.advance(by: .milliseconds(300))
        let resumed = await post(sim, relay, seen, body) { feed.run(for: .milliseconds(800)) }
        #expect(resumed.held && resumed.response?.status == 409)

        // A stops for good: 0.3 s later a new session comes, is held, and takes over at 0.5 s.
        let quietFrom = sim.loop.now
        sim.advance(by: .milliseconds(300))
        let (back, body2) = try await offer(sim)
        let taken = await post(sim, relay, seen, body2) { sim.advance(by: relay.publisherSilence - .milliseconds(300)) }
        #expect(taken.held && taken.response?.status == 201,
                "\(taken.response.map { String(decoding: $0.body, as: UTF8.self) } ?? "no answer")")
        let waited = taken.at - quietFrom
        #expect(waited >= .milliseconds(450) && waited <= .milliseconds(550), "answered \(waited) after the old publisher's last frame")
        await stranger.close()
        await back.close()
        await a.close()
        await relay.stop()
    }

    /// A reconnecting client's attempt whose path is still down never connects; its next attempt
    /// must not get 409s until the relay's connect timeout: a publisher session that has not
    /// connected a second after its offer gives way (one still within that second keeps the name).
    @Test func aPublisherThatNeverConnectedGivesWayAfterASecond() async throws {
        let sim = Simulation()
        let seen = Monitor(Seen())
        let relay = try relay(sim, takeover: false, seen)
        let (stalled, body) = try await offer(sim)   // posted, its answer never applied: it never connects
        #expect(await post(sim, relay, seen, body).response?.status == 201)
        sim.advance(by: .milliseconds(500))
        let (early, earlyBody) = try await offer(sim)
        #expect(await post(sim, relay, seen, earlyBody).response?.status == 409, "inside its first second it keeps the name")
        sim.advance(by: .milliseconds(600))
        let (next, nextBody) = try await offer(sim)
        let taken = await post(sim, relay, seen, nextBody)
        #expect(taken.response?.status == 201 && !taken.held)
        for pc in [stalled, early, next] { await pc.close() }
        await relay.stop()
    }
}
