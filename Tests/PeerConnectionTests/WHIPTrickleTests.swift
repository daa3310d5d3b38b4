import Capture
import Foundation
import HTTP
import Media
import PeerConnection
import Relay
import STUN
import Streaming
import Synchronization
import Testing
import Transport

/// Our WHIP/WHEP client against the embedded relay, trickle and ICE restart by PATCH
/// (RFC 9725 §4.3): the publisher POSTs without waiting for its TURN allocation and trickles the
/// relay candidate and end-of-candidates; publisher, player, publisher again restart ICE mid-stream and
/// the player's video goes on (no freeze over 1 s, no connection state change).
@Suite(.serialized) struct WHIPTrickleTests {
    final class Lines: Sendable {
        private let lines = Mutex<[String]>([])
        func add(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
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
        #expect(await eventually { publisher.trickledCandidates == 1 && relayLog.all.contains { $0.hasSuffix("end of candidates") } },
                "trickled \(publisher.trickledCandidates); relay said \(relayLog.all)")
        let trickled = relayLog.all.filter { $0.contains("trickled") }
        #expect(trickled.count <= 2 && trickled.first?.contains("trickled 1 candidate(s)") == true, "\(trickled)")

        let feeding = feedPattern(source)
        defer { feeding.cancel() }
        let player = try StreamingSession(role: .play, url: "\(relay.url)/rtc/v1/whep/?app=live&stream=t", options: options {
            $0.onSignalingProblem = problems.add
        })
        let tracks = try await player.play(audio: false)
        let log = ArrivalLog()
        try #require(tracks.video).addRenderer(log)
        #expect(await eventually(timeout: .seconds(10)) { log.all.count >= 10 }, "frames before the restarts: \(log.all.count)")
        let events = EventLog(player.peerConnection), publisherEvents = EventLog(publisher.peerConnection)

        let start = ContinuousClock.now
        let before = (iceUfrag(publisher.peerConnection), iceUfrag(player.peerConnection))
        try await publisher.restartIce()
        #expect(iceUfrag(publisher.peerConnection) != before.0)
        #expect(await eventually { await restartedPairSelected(publisher.peerConnection) })
        let framesAfterFirst = log.all.count
        #expect(await eventually { log.all.count >= framesAfterFirst + 15 }, "frames after the publisher's restart")
        try await player.restartIce()
        #expect(iceUfrag(player.peerConnection) != before.1)
        #expect(await eventually { await restartedPairSelected(player.peerConnection) })
        let framesAfterSecond = log.all.count
        #expect(await eventually { log.all.count >= framesAfterSecond + 15 }, "frames after the player's restart")
        // A second restart of the same session starts from the first one's descriptions.
        let second = iceUfrag(publisher.peerConnection)
        try await publisher.restartIce()
        #expect(iceUfrag(publisher.peerConnection) != second)
        let framesAfterThird = log.all.count
        #expect(await eventually { log.all.count >= framesAfterThird + 15 }, "frames after the publisher's second restart")
        #expect(await eventually { await restartedPairSelected(publisher.peerConnection) })
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
        #expect(await eventually { patches.all.count == 1 }, "one PATCH tried: \(patches.all)")
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
