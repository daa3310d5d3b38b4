import Capture
import Dispatch
import Foundation
import HTTP
import Media
import PeerConnection
import Relay
import SessionSupport
import STUN
import Streaming
import Testing
import TestSupport
import Transport

/// Test-pattern frames into `source`, 320x180 at ~30 fps on a wall-clock timer, until cancelled.
final class RealTimePatternFeed: @unchecked Sendable {
    // @unchecked: a dispatch source may be cancelled from any thread.
    private let timer: any DispatchSourceTimer

    init(_ source: VideoSource) {
        let capturer = TestPatternCapturer(delegate: source)
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "pattern-feed"))
        nonisolated(unsafe) var i: Int64 = 0   // touched only by the timer's serial queue
        timer.setEventHandler {
            capturer.captureFrame(at: i * 33_333_333, width: 320, height: 180)
            i += 1
        }
        timer.schedule(deadline: .now(), repeating: .milliseconds(33))
        timer.resume()
        self.timer = timer
    }

    func cancel() { timer.cancel() }
}

extension ArrivalLog {
    /// Checks `condition` (one only an async call reads, such as statistics) again each time a
    /// frame arrives, for at most `frames` frames (150: about 5 s of video): frames are this
    /// test's clock.
    func recheck(frames: Int = 150, _ condition: () async -> Bool) async -> Bool {
        for _ in 0..<frames {
            if await condition() { return true }
            guard await wait(forCount: count + 1) else { break }
        }
        return await condition()
    }
}

/// Our WHIP/WHEP client against the embedded relay, trickle and ICE restart by PATCH
/// (RFC 9725 §4.3): the publisher POSTs without waiting for its TURN allocation and trickles the
/// relay candidate and end-of-candidates; publisher, player, publisher again restart ICE mid-stream and
/// the player's video goes on (no freeze over 1 s, no connection state change).
///
/// On real sockets and the wall clock: `StreamingSession` makes its own PeerConnection (the
/// shared threaded loop, real UDP sockets), speaks WHIP over `HTTPClient` (TCP), and batches
/// trickle PATCHes with a wall-clock timer; it has no seam for a simulated loop, a PacketIO
/// factory or an in-process HTTP transport. The test waits for events (relay log lines, decoded
/// frames), never for time.
@Suite(.serialized) struct WHIPTrickleTests {
    final class Lines: Sendable {
        private let lines = Monitor<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.value }
        /// Waits until the lines meet `condition`, at most `timeout`.
        func wait(timeout: Duration = .seconds(5), until condition: @escaping @Sendable ([String]) -> Bool) async -> Bool {
            await lines.wait(until: condition, timeout: timeout)
        }
    }

    func options(_ configure: (inout StreamingSession.Options) -> Void = { _ in }) -> StreamingSession.Options {
        var o = StreamingSession.Options()
        o.configuration.interfaceAddresses = [SocketAddress(host: "127.0.0.1", port: 0)].compactMap { $0 }
        o.videoCodecs = [.vp8]
        o.timeout = .seconds(10)
        configure(&o)
        return o
    }

    @Test func trickleThenRestartBothSidesMidStream() async throws {
        let relayLog = Lines(), problems = Lines()
        let relay = try await RelayServer(httpPort: 0, udpPort: 0, log: relayLog.add)
        // A far TURN server: the allocation ends after the POST, so its candidate is trickled.
        let turn = try MiniTURNServer(responseDelay: .milliseconds(100))
        defer { turn.stop() }
        let publisher = try StreamingSession(role: .publish, url: "\(relay.url)/rtc/v1/whip/?app=live&stream=t", options: options {
            $0.iceServers = [IceServer(urls: ["turn:\(turn.address)?transport=udp"], username: "u", credential: "p")]
            $0.onSignalingProblem = problems.add
        })
        let source = VideoSource()
        try await publisher.publish(video: VideoTrack(id: "v", source: source), audio: nil)
        if let sender = publisher.peerConnection.transceivers.first?.sender { try encodeEveryFrame(sender) }
        // The POST did not wait for the allocation: its relay candidate and the end of
        // candidates came by PATCH, the first with the candidate (one batch), then the end.
        #expect(await relayLog.wait { $0.contains { $0.hasSuffix("end of candidates") } }, "relay said \(relayLog.all)")
        let trickled = relayLog.all.filter { $0.contains("trickled") }
        #expect(trickled.count <= 2 && trickled.first?.contains("trickled 1 candidate(s)") == true, "\(trickled)")

        let feeding = RealTimePatternFeed(source)
        defer { feeding.cancel() }
        let player = try StreamingSession(role: .play, url: "\(relay.url)/rtc/v1/whep/?app=live&stream=t", options: options {
            $0.onSignalingProblem = problems.add
        })
        let tracks = try await player.play(audio: false)
        let log = ArrivalLog()
        try #require(tracks.video).addRenderer(log)
        #expect(await log.wait(forCount: 10), "frames before the restarts: \(log.count)")
        // The answer to the PATCH that carried the candidate has been read by now (the relay
        // logged the end of candidates, the player connected and decoded since).
        #expect(await log.recheck { publisher.trickledCandidates == 1 }, "trickled \(publisher.trickledCandidates)")
        let events = EventLog(player.peerConnection), publisherEvents = EventLog(publisher.peerConnection)

        let start = ContinuousClock.now
        let before = (iceUfrag(publisher.peerConnection), iceUfrag(player.peerConnection))
        try await publisher.restartIce()
        #expect(iceUfrag(publisher.peerConnection) != before.0)
        #expect(await log.recheck { await restartedPairSelected(publisher.peerConnection) })
        let framesAfterFirst = log.count
        #expect(await log.wait(forCount: framesAfterFirst + 15), "frames after the publisher's restart")
        try await player.restartIce()
        #expect(iceUfrag(player.peerConnection) != before.1)
        #expect(await log.recheck { await restartedPairSelected(player.peerConnection) })
        let framesAfterSecond = log.count
        #expect(await log.wait(forCount: framesAfterSecond + 15), "frames after the player's restart")
        // A second restart of the same session starts from the first one's descriptions.
        let second = iceUfrag(publisher.peerConnection)
        try await publisher.restartIce()
        #expect(iceUfrag(publisher.peerConnection) != second)
        let framesAfterThird = log.count
        #expect(await log.wait(forCount: framesAfterThird + 15), "frames after the publisher's second restart")
        #expect(await log.recheck { await restartedPairSelected(publisher.peerConnection) })
        let end = ContinuousClock.now
        let gap = log.longestGap(from: start, to: end)
        print("WHIP/WHEP ICE restarts by PATCH: longest frame gap \(gap) over \(end - start)")
        #expect(gap <= .seconds(1), "freeze \(gap)")
        #expect(relayLog.all.filter { $0.contains("restarted ICE") }.count == 3, "\(relayLog.all)")
        for (pc, events) in [(publisher.peerConnection, publisherEvents), (player.peerConnection, events)] {
            #expect(pc.connectionState == .connected)
            #expect(!events.all.contains { if case .connectionStateChanged = $0 { return true }; return false })
            #expect(await pc.transportStatistics()["srtpErrors"] == 0)
        }
        #expect(problems.all.isEmpty, "\(problems.all)")
        await player.close()
        await publisher.close()
        await relay.stop()
    }

    /// A server that does not take PATCH (405): trickle stops silently, the session runs on
    /// what the offer carried; a restart says why it cannot be done; later sessions to it
    /// gather fully before the POST.
    @Test func serverWithoutPatchFallsBackSilently() async throws {
        let relay = try await RelayServer(httpPort: 0, udpPort: 0, log: { _ in })
        let patches = Lines()
        // A front that forwards POST and DELETE to the relay and answers PATCH with 405.
        let front = try HTTPServerFront(relay: relay, patches: patches)
        defer { front.stop() }
        let turn = try MiniTURNServer(responseDelay: .milliseconds(100))
        defer { turn.stop() }
        let problems = Lines()
        let url = "\(front.url)/rtc/v1/whip/?app=live&stream=nopatch"
        let publisher = try StreamingSession(role: .publish, url: url, options: options {
            $0.iceServers = [IceServer(urls: ["turn:\(turn.address)?transport=udp"], username: "u", credential: "p")]
            $0.onSignalingProblem = problems.add
        })
        try await publisher.publish(video: VideoTrack(id: "v", source: VideoSource()), audio: nil)
        #expect(await patches.wait { $0.count == 1 }, "one PATCH tried: \(patches.all)")
        #expect(publisher.peerConnection.connectionState == .connected && publisher.trickledCandidates == 0)
        #expect(problems.all.isEmpty, "a 405 is not a problem to report: \(problems.all)")
        await #expect {
            try await publisher.restartIce()
        } throws: { "\($0)".contains("does not take ICE restarts by PATCH (405") }
        #expect(publisher.peerConnection.connectionState == .connected, "a refused restart leaves ICE as it was")
        await publisher.close()

        // The next session to that endpoint does not trickle: its offer waited for the relay candidate.
        let again = try StreamingSession(role: .publish, url: url, options: options {
            $0.iceServers = [IceServer(urls: ["turn:\(turn.address)?transport=udp"], username: "u", credential: "p")]
        })
        try await again.publish(video: VideoTrack(id: "v", source: VideoSource()), audio: nil)
        let posted = try #require(front.offers.last)
        #expect(posted.contains("typ relay") && posted.contains("a=end-of-candidates"), "\(posted)")
        #expect(patches.all.count == 2, "no trickle PATCH from the second session: \(patches.all)")
        await again.close()
        await relay.stop()
    }
}

/// A WHIP server without PATCH: POST and DELETE go to the relay, PATCH gets 405.
final class HTTPServerFront: Sendable {
    let server: HTTPServer
    private let posted = WHIPTrickleTests.Lines()
    var offers: [String] { posted.all }
    var url: String { "http://127.0.0.1:\(server.port)" }

    init(relay: RelayServer, patches: WHIPTrickleTests.Lines) throws {
        let upstream = relay.url
        let posted = self.posted
        server = try HTTPServer(host: "127.0.0.1", port: 0) { request in
            if request.method == "PATCH" {
                patches.add(request.bodyText)
                return HTTPResponse(status: 405, headers: ["Allow": "POST, DELETE"])
            }
            if request.method == "POST" { posted.add(request.bodyText) }
            var headers: HTTPHeaders = [:]
            if let type = request.headers["Content-Type"] { headers.add("Content-Type", type) }
            guard let r = try? await HTTPClient(timeout: .seconds(10)).send(method: request.method, url: upstream + request.target,
                                                                            headers: headers, body: request.body)
            else { return .text(502, "relay unreachable\n") }
            var out = HTTPResponse(status: r.status, body: r.body)
            for name in ["Content-Type", "Location"] { if let v = r.headers[name] { out.headers.add(name, v) } }
            return out   // no Accept-Patch, no ETag: a server that knows nothing of PATCH
        }
        server.start()
    }

    func stop() { server.stop() }
}
