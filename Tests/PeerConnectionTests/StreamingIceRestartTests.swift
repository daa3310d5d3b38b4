import SessionSupport
import Streaming
import Testing

/// A connection that restarts ICE itself (`restartIce()`, as PeerConnection does on an interface
/// loss or a long disconnection): the session carries the restart over its signaling.
extension StreamingReconnectTests {
    @Test("restartIce() on the publisher's connection: WHIP carries it by PATCH — the same connection, new credentials, video on")
    func restartCarriedByPatch() async throws {
        let streams = try await streaming(try Rig(), .whip)
        let (rig, publisher, feed, log, events) = (streams.rig, streams.publisher, streams.feed, streams.log, streams.events)
        let pc = publisher.peerConnection
        let ufrag = iceUfrag(pc)
        pc.restartIce()
        let before = log.count
        #expect(await feed.run(rig.activity, within: .seconds(5)) { iceUfrag(pc) != ufrag && log.count >= before + 30 })
        #expect(publisher.peerConnection === pc, "no new connection")
        #expect(events.all.isEmpty, "a restart asked for on a healthy connection is not a recovery: \(events.all)")
        #expect(await restartedPairSelected(pc))
        #expect(rig.relayLog.withLock { $0 }.contains { $0.contains("restarted ICE") })
        await streams.stop()
    }

    @Test("restartIce() on the publisher's connection over SRS's API (no restart there): a new session on the same stream, video on")
    func restartCarriedByNewSession() async throws {
        let streams = try await streaming(try Rig(), .srs)
        let (rig, publisher, feed, log, events) = (streams.rig, streams.publisher, streams.feed, streams.log, streams.events)
        let first = publisher.peerConnection
        let track = first.transceivers.first?.sender.videoTrack
        first.restartIce()
        #expect(await feed.run(rig.activity, within: .seconds(5)) { events.all.last == .reconnected })
        let before = log.count
        #expect(await feed.run(rig.activity, within: .seconds(3)) { log.count >= before + 30 }, "frames after the new session")
        // The old connection closes first (a live publisher keeps its name); the relay may
        // see the POST before the close_notify and answer 409, and the next attempt gets it.
        #expect(events.all.first == .reconnecting(attempt: 1) && events.all.filter { $0 == .reconnected }.count == 1, "\(events.all)")
        #expect(!events.all.contains(.restartingIce))
        print("SRS restart: events \(events.all)")
        #expect(publisher.peerConnection !== first && publisher.peerConnection.transceivers.first?.sender.videoTrack === track)
        #expect(rig.publishes == 2)
        await streams.stop()
    }
}
