import Foundation
import PeerConnection
import Relay
import RTP
import Locks
import SessionSupport
import Testing

/// The relay as a simulcast SFU, on simulated time: a publisher whose offer has two layers (rids
/// l and h, as a browser's `sendEncodings` make; the test writes each layer's RTP with its own
/// SSRC and rid) and players that ask for a layer get that layer only, from its keyframe on,
/// as one continuous stream, with NACKs answered from it.
@Suite struct RelaySimulcastTests {
    @Test func eachPlayerGetsItsLayerFromThatLayersKeyframeOn() async throws {
        let sim = Simulation()
        let relay = try sim.relay()
        let publisher = try await WrittenSimulcastPublisher(sim, relay: relay, stream: "sc", rids: ["l", "h"])
        let answer = publisher.answer
        #expect(answer.contains("a=simulcast:recv l;h") && answer.contains("a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"))
        func frames(_ count: Int, keyframe: String? = nil) { publisher.frames(sim, count, keyframe: keyframe) }
        frames(3)   // the relay learns both layers

        var players: [PeerConnection] = []
        func player(_ query: String) async throws -> Locked<[RTPPacket]> {
            let pc = try sim.peer { $0.mediaPipeline = false }
            let video = try await pc.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: [.h264])
            let received = Locked<[RTPPacket]>([])
            video.receiver.onRTP = { p in received.withLock { $0.append(p) } }
            _ = try await sim.exchange(relay, pc, endpoint: "whep", stream: "sc", query: query)
            players.append(pc)
            return received
        }
        let low = try await player("&layer=low"), high = try await player("")
        sim.advance(by: .milliseconds(200))
        frames(3)
        #expect(low.value.isEmpty && high.value.isEmpty, "nothing before a keyframe of the player's layer")
        frames(4, keyframe: "l")
        #expect(high.value.isEmpty, "the high player waits for the high layer's keyframe")
        frames(4, keyframe: "h")
        sim.advance(by: .milliseconds(100))

        let lows = low.value, highs = high.value
        #expect(lows.count == 8 && lows.allSatisfy { $0.payload[1] == 1 }, "low got \(lows.map(\.payload))")
        #expect(lows.first?.payload[0] == 0x65, "from the low layer's keyframe on")
        #expect(highs.count == 4 && highs.allSatisfy { $0.payload[1] == 2 } && highs.first?.payload[0] == 0x65,
                "high got \(highs.map(\.payload))")
        for got in [lows, highs] {
            #expect(Set(got.map(\.ssrc)).count == 1, "one SSRC per player")
            #expect(zip(got, got.dropFirst()).allSatisfy { $1.sequenceNumber == $0.sequenceNumber &+ 1 }, "continuous numbers")
        }
        let streams = String(decoding: await sim.request(relay, "GET", "/api/v1/streams/").body, as: UTF8.self)
        #expect(streams.contains("\"layer\":\"l\"") && streams.contains("\"layer\":\"h\""), "\(streams)")
        let metrics = String(decoding: await sim.request(relay, "GET", "/metrics").body, as: UTF8.self)
        for rid in ["l", "h"] {
            #expect(metrics.contains("swiftrtc_layer_players{app=\"live\",stream=\"sc\",rid=\"\(rid)\"} 1"), "\(metrics)")
            #expect(metrics.contains("swiftrtc_layer_receive_kbps{app=\"live\",stream=\"sc\",rid=\"\(rid)\"}"))
        }

        // A NACK from the high player is answered from the high layer.
        let asked = highs.prefix(2).map(\.sequenceNumber)
        try #require(players.count == 2)
        let video = try #require(players[1].transceivers.first)
        players[1].sendRTCP([.nack(GenericNACK(senderSSRC: video.sender.ssrc, mediaSSRC: try #require(highs.first?.ssrc),
                                               lostSequenceNumbers: asked))])
        #expect(sim.run { high.value.count >= 6 })
        #expect(high.value.dropFirst(4).map(\.payload) == highs.prefix(2).map(\.payload))

        for pc in players { await pc.close() }
        await publisher.close()
        await relay.stop()
    }

    /// H.264 players over WHEP, one per query, each with the RTP it receives.
    static func players(_ sim: Simulation, _ relay: RelayServer, stream: String,
                        queries: [String]) async throws -> [(PeerConnection, Locked<[RTPPacket]>)] {
        var players: [(PeerConnection, Locked<[RTPPacket]>)] = []
        for query in queries {
            let pc = try sim.peer { $0.mediaPipeline = false }
            let video = try await pc.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: [.h264])
            let received = Locked<[RTPPacket]>([])
            video.receiver.onRTP = { p in received.withLock { $0.append(p) } }
            _ = try await sim.exchange(relay, pc, endpoint: "whep", stream: stream, query: query)
            players.append((pc, received))
        }
        return players
    }

    /// A publisher's probe re-sends recent packets on RTX (libwebrtc's payload padding); they
    /// reach the relay as packets it has. None goes to a player a second time, and a player
    /// waiting for a keyframe does not start on an old one sent again (Chromium re-sent its low
    /// layer's keyframe 1.24 s on: a joining player's first frame, then a 26-packet gap).
    @Test func packetsAPublisherSendsAgainAreNotForwardedAgain() async throws {
        let sim = Simulation()
        let relay = try sim.relay()
        let publisher = try await WrittenSimulcastPublisher(sim, relay: relay, stream: "again", rids: ["l", "h"])
        func frames(_ count: Int, keyframe: String? = nil) { publisher.frames(sim, count, keyframe: keyframe) }
        frames(4, keyframe: "l")
        frames(4, keyframe: "h")
        frames(11)   // past the publisher's keyframe window: no player is sent these keyframes from the history
        let oldKeyframe = try #require(publisher.keyframeSequence["l"])
        let players = try await Self.players(sim, relay, stream: "again", queries: ["&layer=low", ""])
        sim.advance(by: .milliseconds(200))
        try publisher.sendAgain("l", sequenceNumber: oldKeyframe)   // this publisher answers no PLI: the players wait
        frames(3)
        #expect(players.allSatisfy { $0.1.value.isEmpty }, "a player started on the old keyframe sent again")
        frames(4, keyframe: "l")
        frames(4, keyframe: "h")
        // Its three newest packets on each layer, again.
        for rid in ["l", "h"] {
            let next = publisher.nextSequence(rid)
            for back in 1...3 { try publisher.sendAgain(rid, sequenceNumber: next &- UInt16(back)) }
        }
        frames(2)
        sim.advance(by: .milliseconds(100))

        let (low, high) = (players[0].1.value, players[1].1.value)
        #expect(low.first?.payload[0] == 0x65 && low.first?.payload[1] == 1, "low starts on its layer's new keyframe")
        #expect(low.count == 10, "low: 4 + 4 + 2 frames of l, each once: \(low.map { Array($0.payload.prefix(3)) })")
        #expect(high.count == 6, "high: 4 + 2 frames of h, each once: \(high.map { Array($0.payload.prefix(3)) })")
        for got in [low, high] {
            #expect(zip(got, got.dropFirst()).allSatisfy { $1.sequenceNumber == $0.sequenceNumber &+ 1 }, "continuous, no repeats")
        }
        let metrics = String(decoding: await sim.request(relay, "GET", "/metrics").body, as: UTF8.self)
        #expect(metrics.contains("swiftrtc_duplicate_packets_dropped_total 7"), "\(metrics)")

        for (pc, _) in players { await pc.close() }
        await publisher.close()
        await relay.stop()
    }

    /// A player's keyframe request asks for its own layer only: a keyframe of another layer would
    /// cost every viewer of that one (a viewer on a lossy path, asking every few seconds, made the
    /// publisher send keyframes on all of its layers). Each layer has its own throttle.
    @Test func aPlayersKeyframeRequestAsksForItsOwnLayerOnly() async throws {
        let sim = Simulation()
        let relay = try sim.relay()
        let publisher = try await WrittenSimulcastPublisher(sim, relay: relay, stream: "pli", rids: ["l", "h"])
        let plis = publisher.recordPLIs(sim)
        func frames(_ count: Int, keyframe: String? = nil) { publisher.frames(sim, count, keyframe: keyframe) }
        frames(3)
        let players = try await Self.players(sim, relay, stream: "pli", queries: ["&layer=low", ""])
        frames(4, keyframe: "l")
        frames(4, keyframe: "h")
        frames(15)   // the joins' requests are behind their throttle
        #expect(players.allSatisfy { !$0.1.value.isEmpty }, "both players are on their layers")

        func pli(from player: Int) throws {
            let (pc, received) = players[player]
            let video = try #require(pc.transceivers.first)
            pc.sendRTCP([.pli(senderSSRC: video.sender.ssrc, mediaSSRC: try #require(received.value.first?.ssrc))])
            sim.advance(by: .milliseconds(20))
        }
        let before = plis.value.count
        try pli(from: 0)
        #expect(plis.value.dropFirst(before) == [publisher.ssrc("l")], "the low player's request: \(plis.value.dropFirst(before))")
        // The high player's, 20 ms later: its layer's throttle is its own.
        try pli(from: 1)
        #expect(plis.value.dropFirst(before) == [publisher.ssrc("l"), publisher.ssrc("h")])
        // The low player again inside its layer's 300 ms: the keyframe on its way answers it.
        try pli(from: 0)
        #expect(plis.value.count == before + 2)
        sim.advance(by: .milliseconds(300))
        try pli(from: 0)
        #expect(plis.value.dropFirst(before + 2) == [publisher.ssrc("l")])
        // Counted per layer for the operator (API and metrics).
        let counts = plis.value.reduce(into: [UInt32: Int]()) { $0[$1, default: 0] += 1 }
        let metrics = String(decoding: await sim.request(relay, "GET", "/metrics").body, as: UTF8.self)
        for rid in ["l", "h"] {
            let line = "swiftrtc_layer_keyframe_requests_total{app=\"live\",stream=\"pli\",rid=\"\(rid)\"} \(counts[publisher.ssrc(rid)] ?? -1)"
            #expect(metrics.contains(line), "\(line) in \(metrics)")
        }
        let streams = String(decoding: await sim.request(relay, "GET", "/api/v1/streams/").body, as: UTF8.self)
        #expect(streams.contains("\"keyframe_requests\":\(counts[publisher.ssrc("l")] ?? -1)"), "\(streams)")

        for (pc, _) in players { await pc.close() }
        await publisher.close()
        await relay.stop()
    }
}
