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
}
