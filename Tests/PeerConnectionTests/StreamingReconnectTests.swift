import Foundation
import Locks
import Media
import PeerConnection
import Relay
import SessionSupport
import Streaming
import Testing

/// `StreamingSession` publishing and playing through the relay, all on a simulation: the relay
/// serves the sessions' signaling in process, each session's connections sit on a host whose
/// access link the test cuts. Recovery is measured at the player in virtual time.
@Suite(.serialized) struct StreamingReconnectTests {
    /// One relay and a publisher and a player on hosts of their own.
    final class Rig {
        let sim = Simulation()
        let relay: RelayServer
        let activity = SignalingActivity()
        let publisherHost: SimulatedHost, playerHost: SimulatedHost
        let relayLog = Locked<[String]>([])

        init() throws {
            let log = relayLog
            relay = try sim.relay { line in log.withLock { $0.append(line) } }
            publisherHost = sim.host()
            playerHost = sim.host()
        }

        func url(_ signaling: Signaling, _ role: StreamingSession.Role, stream: String = "s") -> String {
            switch signaling {
            case .whip: "http://10.0.0.1:8000/rtc/v1/\(role == .publish ? "whip" : "whep")/?app=live&stream=\(stream)"
            case .srs: "webrtc://10.0.0.1:8000/live/\(stream)"
            }
        }

        func session(_ role: StreamingSession.Role, _ signaling: Signaling, on host: SimulatedHost, seed: UInt64 = 1,
                     configure: (inout StreamingSession.Options) -> Void = { _ in }) throws -> StreamingSession {
            var options = StreamingSession.Options()
            options.configuration.codecExecution = .inline
            options.videoCodecs = [.vp8]
            options.timeout = .seconds(10)
            configure(&options)
            return try StreamingSession(role: role, url: url(signaling, role), options: options,
                                        environment: sim.environment(host: host, relay: relay, activity: activity, seed: seed))
        }

        /// Runs until `session` is connected.
        func connect(_ session: StreamingSession) async -> Bool {
            await sim.run(activity, within: .seconds(10)) { session.peerConnection.connectionState == .connected }
        }

        /// Publisher sessions the relay has set up for live/s (a reconnection makes one more).
        var publishes: Int { relayLog.withLock { $0 }.filter { $0.contains("serve: publisher") && $0.contains(" for live/s") }.count }

        /// Ends the publisher's session at the relay (`DELETE /api/v1/clients/ID`); whether it did.
        func kickPublisher() async throws -> Bool {
            let listing = await sim.request(relay, "GET", "/api/v1/clients/")
            let clients = (try JSONSerialization.jsonObject(with: Data(listing.body)) as? [String: Any])?["clients"] as? [[String: Any]]
            let id = try #require(clients?.first { $0["publish"] as? Bool == true }?["id"] as? String)
            return await sim.request(relay, "DELETE", "/api/v1/clients/\(id)/").status == 200
        }

        func stop(_ sessions: StreamingSession...) async {
            for session in sessions { await session.close() }
            await relay.stop()
        }
    }

    enum Signaling: CaseIterable { case whip, srs }
    enum Side: CaseIterable { case publisher, player }

    /// A publisher of the test pattern and a player decoding it, frames flowing.
    struct Streams {
        let rig: Rig
        let publisher: StreamingSession, player: StreamingSession
        let feed: PatternFeed
        let log: ArrivalLog
        /// The publisher's recovery events, and the player's.
        let events: EventRecorder, playerEvents: EventRecorder

        func session(_ side: Side) -> StreamingSession { side == .publisher ? publisher : player }
        func events(_ side: Side) -> EventRecorder { side == .publisher ? events : playerEvents }

        /// Cuts `side`'s host off for `duration`, streams on for `after` more, and returns how
        /// long after the path came back the player decoded its first frame (nil: never).
        func outage(of side: Side, for duration: Duration, after: Duration) async -> Duration? {
            let host = side == .publisher ? rig.publisherHost : rig.playerHost
            rig.sim.loop.perform { host.blackHole(for: duration) }
            let back = rig.sim.loop.now + duration
            await feed.run(rig.activity, for: duration + after)
            return log.all.first { $0 >= back }.map { $0 - back }
        }

        func stop() async { await rig.stop(player, publisher) }
    }

    func streaming(_ rig: Rig, _ signaling: Signaling, configure: (inout StreamingSession.Options) -> Void = { _ in }) async throws -> Streams {
        let source = VideoSource()
        let publisher = try rig.session(.publish, signaling, on: rig.publisherHost, configure: configure)
        let events = EventRecorder(publisher)
        try await publisher.publish(video: VideoTrack(id: "v", source: source), audio: nil, waitForConnection: false)
        try encodeEveryFrame(try #require(publisher.peerConnection.transceivers.first?.sender))
        #expect(await rig.connect(publisher))
        let player = try rig.session(.play, signaling, on: rig.playerHost)
        let playerEvents = EventRecorder(player)
        let tracks = try await player.play(audio: false, waitForConnection: false)
        #expect(await rig.connect(player))
        let log = ArrivalLog { [loop = rig.sim.loop] in loop.now }
        try #require(tracks.video).addRenderer(log)
        let feed = PatternFeed(rig.sim, into: source)
        #expect(await feed.run(rig.activity, within: .seconds(5)) { log.count >= 10 }, "frames before the outage: \(log.count)")
        return Streams(rig: rig, publisher: publisher, player: player, feed: feed, log: log, events: events, playerEvents: playerEvents)
    }

    static let cases = Signaling.allCases.flatMap { s in Side.allCases.map { (s, $0) } }

    @Test("a 3 s outage of either path: the same connections carry video again within 1 s of the path's return", arguments: cases)
    func shortOutage(_ signaling: Signaling, _ side: Side) async throws {
        let streams = try await streaming(try Rig(), signaling)
        let connections = (streams.publisher.peerConnection, streams.player.peerConnection)
        let recovery = await streams.outage(of: side, for: .seconds(3), after: .seconds(3))
        print("\(signaling) \(side) 3 s outage: video back \(recovery.map { "\($0)" } ?? "never") after the path returned")
        #expect(recovery.map { $0 <= .seconds(1) } == true, "video back after \(String(describing: recovery))")
        #expect(streams.publisher.peerConnection === connections.0 && streams.player.peerConnection === connections.1)
        #expect(streams.events.all.isEmpty && streams.playerEvents.all.isEmpty, "\(streams.events.all) \(streams.playerEvents.all)")
        await streams.stop()
    }

    @Test("a 40 s outage of either path (past consent expiry): a new session, the same tracks, video again within 3 s of the path's return",
          arguments: cases)
    func longOutage(_ signaling: Signaling, _ side: Side) async throws {
        let rig = try Rig()
        let streams = try await streaming(rig, signaling)
        let cut = streams.session(side)
        let first = cut.peerConnection
        let track = streams.publisher.peerConnection.transceivers.first?.sender.videoTrack
        let estimate = await availableOutgoingBitrate(streams.publisher.peerConnection)
        let recovery = await streams.outage(of: side, for: .seconds(40), after: .seconds(5))
        let events = streams.events(side).all
        print("\(signaling) \(side) 40 s outage: video back \(recovery.map { "\($0)" } ?? "never") after the path returned; events \(events)")
        #expect(recovery.map { $0 <= .seconds(3) } == true, "video back after \(String(describing: recovery)); relay: \(rig.relayLog.withLock { $0 })")
        #expect(cut.peerConnection !== first, "a new connection")
        #expect(cut.peerConnection.connectionState == .connected && !cut.isStopped)
        #expect(streams.publisher.peerConnection.transceivers.first?.sender.videoTrack === track, "the same track")
        #expect(events.last == .reconnected && events.contains(.reconnecting(attempt: 1)))
        if side == .publisher {
            // The new connection's estimate starts from half the last good one, not from the cold start.
            let start = cut.peerConnection.configuration.startBitrate
            print("estimate before the outage \(estimate ?? -1), the new connection starts at \(start)")
            #expect(estimate.map { start >= $0 * 4 / 10 && start <= $0 * 6 / 10 } == true, "start \(start), before \(String(describing: estimate))")
        }
        await streams.stop()
    }

    func availableOutgoingBitrate(_ pc: PeerConnection) async -> Int? {
        await pc.getStats().ofType("candidate-pair").compactMap { $0.int("availableOutgoingBitrate") }.max()
    }
}

extension StreamingReconnectTests {
    @Test("the server drops the publisher's session (its close lost): the restart's PATCH gets 404, a new session carries the stream")
    func sessionGone() async throws {
        let streams = try await streaming(try Rig(), .whip)
        let (rig, publisher, feed, log, events) = (streams.rig, streams.publisher, streams.feed, streams.log, streams.events)
        let first = publisher.peerConnection
        // Kicked while the path is down for a moment, so the relay's close_notify never arrives.
        rig.sim.loop.perform { rig.publisherHost.blackHole(for: .seconds(1)) }
        #expect(try await rig.kickPublisher())
        let kicked = rig.sim.loop.now
        let before = log.count
        #expect(await feed.run(rig.activity, within: .seconds(15)) { log.count >= before + 10 })
        print("session gone: video back \(rig.sim.loop.now - kicked) after the kick; events \(events.all)")
        #expect(events.all.prefix(3) == [.restartingIce, .reconnecting(attempt: 1), .reconnected], "\(events.all)")
        #expect(publisher.peerConnection !== first && publisher.peerConnection.connectionState == .connected)
        #expect(rig.publishes == 2)
        await streams.stop()
    }

    @Test("the server ends the publisher's session (its close_notify arrives: a kick, a restart): a new session after the backoff")
    func serverClosed() async throws {
        let streams = try await streaming(try Rig(), .whip)
        let (rig, publisher, feed, log, events) = (streams.rig, streams.publisher, streams.feed, streams.log, streams.events)
        let first = publisher.peerConnection
        #expect(try await rig.kickPublisher())
        let before = log.count
        #expect(await feed.run(rig.activity, within: .seconds(5)) { log.count >= before + 10 && publisher.peerConnection !== first })
        #expect(events.all == [.reconnecting(attempt: 1), .reconnected], "\(events.all)")
        #expect(first.connectionState == .closed && publisher.peerConnection.connectionState == .connected)
        #expect(rig.publishes == 2)
        await streams.stop()
    }

    @Test("reconnect off: the 40 s outage ends the session at consent expiry, reported as failed, with no new connection")
    func reconnectOff() async throws {
        let rig = try Rig()
        let streams = try await streaming(rig, .whip) { $0.reconnect = .off }
        let (publisher, feed, events) = (streams.publisher, streams.feed, streams.events)
        let first = publisher.peerConnection
        rig.sim.loop.perform { rig.publisherHost.blackHole(for: .seconds(40)) }
        let cut = rig.sim.loop.now
        #expect(await feed.run(rig.activity, within: .seconds(45)) { publisher.isStopped })
        let stoppedAfter = rig.sim.loop.now - cut
        print("reconnect off: stopped \(stoppedAfter) into the outage; events \(events.all)")
        #expect(stoppedAfter >= .seconds(24) && stoppedAfter <= .seconds(31), "consent expires 30 s after the last answer")
        #expect(events.all.count == 1 && events.all.first.map { if case .failed = $0 { return true }; return false } == true)
        #expect(publisher.peerConnection === first && first.connectionState == .closed)
        #expect(rig.publishes == 1)
        await streams.stop()
    }
}

/// A session's recovery events, as its delegate (on the loop, in order).
final class EventRecorder: StreamingSessionDelegate {
    private let events = Locked<[ReconnectEvent]>([])
    init(_ session: StreamingSession) { session.delegate = self }
    func streamingSession(_ session: StreamingSession, didReport event: ReconnectEvent) { events.withLock { $0.append(event) } }
    var all: [ReconnectEvent] { events.withLock { $0 } }
}
