import Capture
import Foundation
import HTTP
import Media
import PeerConnection
import Relay
import Synchronization
import Testing

/// The frame numbers of the test pattern as a player decodes them.
final class PatternLog: VideoRenderer, Sendable {
    private let numbers = Mutex<[UInt32]>([])
    func render(_ frame: VideoFrame) {
        if let n = TestPattern.read(frame)?.frameNumber { numbers.withLock { $0.append(n) } }
    }
    var all: [UInt32] { numbers.withLock { $0 } }
}

/// A viewer stays connected while the stream's publisher is replaced (new SSRCs, a random
/// sequence start): the relay keeps each player's sequence numbers and timestamps continuous,
/// so the player's SRTP replay window and jitter buffer accept the new publisher at once.
@Suite(.serialized) struct RelayTakeoverTests {
    let http = HTTPClient(timeout: .seconds(10))

    func whip(_ relay: RelayServer, _ pc: PeerConnection, endpoint: String) async throws {
        try await relayExchange(relay, pc, endpoint: endpoint, stream: "takeover", http: http)
    }

    func publisher(_ relay: RelayServer) async throws -> (PeerConnection, VideoSource) {
        let pc = try loopbackPeer()
        let source = VideoSource()
        let t = try await pc.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        try await whip(relay, pc, endpoint: "whip")
        try await pc.waitConnected(timeout: .seconds(10))
        return (pc, source)
    }

    /// Sends pattern frames (the capturer numbers them on, from `first`) until the player
    /// decoded `more` numbered ≥ `first`, or 20 s passed. Returns how many were sent.
    func sendUntilSeen(_ log: PatternLog, capturer: TestPatternCapturer, source: VideoSource, pc: PeerConnection,
                       first: Int, more: Int) async throws -> Int {
        var sent = 0
        let end = ContinuousClock.now.advanced(by: .seconds(20))
        while log.all.filter({ $0 >= UInt32(first) }).count < more && ContinuousClock.now < end {
            try await sendFrames(patternFrames(capturer, count: 1, from: first + sent, rotation: .r0), into: source, from: pc,
                                 alreadyEncoded: sent)
            sent += 1
        }
        return sent
    }

    @Test(arguments: [true, false])
    func viewerDecodesTheNewPublisher(takeover: Bool) async throws {
        let relay = try await RelayServer(httpPort: 0, udpPort: 0, takeover: takeover, log: { _ in })
        let capturer = TestPatternCapturer()
        let (a, sourceA) = try await publisher(relay)

        let player = try loopbackPeer()
        _ = try await player.addTransceiver(.video, TransceiverInit(direction: .recvonly))
        try await whip(relay, player, endpoint: "whep")
        try await player.waitConnected(timeout: .seconds(10))
        let log = PatternLog()
        try #require(player.transceivers.first?.receiver.videoTrack).addRenderer(log)
        let sentA = try await sendUntilSeen(log, capturer: capturer, source: sourceA, pc: a, first: 0, more: 5)
        #expect(log.all.count >= 5, "the player decoded \(log.all.count) of \(sentA) frames from the first publisher")

        // With --takeover the new publisher replaces A, alive, at once.
        if !takeover {
            // A goes silent (as if killed): a second publisher is refused while A is fresh, and
            // takes over once A has sent nothing for 3 s.
            let early = try loopbackPeer()
            _ = try await early.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
            try await early.setLocalDescription(try await early.createOffer())
            await early.waitForGatheringComplete()
            let refused = try await http.send(method: "POST", url: "\(relay.url)/rtc/v1/whip/?app=live&stream=takeover",
                                              headers: [("Content-Type", "application/sdp")],
                                              body: Array(try #require(early.localDescription).sdp.utf8))
            #expect(refused.status == 409)
            await early.close()
            try await Task.sleep(for: .milliseconds(3300))
        }
        let (b, sourceB) = try await publisher(relay)
        let switchedAt = ContinuousClock.now
        let before = log.all.count
        let sentB = try await sendUntilSeen(log, capturer: capturer, source: sourceB, pc: b, first: sentA, more: 10)
        let fromB = log.all.dropFirst(before).filter { $0 >= UInt32(sentA) }
        #expect(fromB.count >= 10, "after the switch the player decoded \(fromB.count) of \(sentB) frames from the new publisher")
        #expect(ContinuousClock.now - switchedAt < .seconds(10))
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
