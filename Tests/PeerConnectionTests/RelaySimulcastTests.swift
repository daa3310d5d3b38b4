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
        let publisher = try sim.peer { $0.mediaPipeline = false }
        let sending = try await publisher.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        let lines = ["a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id", "a=rid:l send", "a=rid:h send", "a=simulcast:send l;h"]
        let answer = try await sim.exchange(relay, publisher, endpoint: "whip", stream: "sc",
                                            edit: { $0 + lines.map { $0 + "\r\n" }.joined() })
        #expect(answer.contains("a=simulcast:recv l;h") && answer.contains("a=extmap:10 urn:ietf:params:rtp-hdrext:sdes:rtp-stream-id"))
        let pt = try #require(sending.negotiatedCodecs.first?.payloadType)
        let transport = try #require(sending.sender.transport)

        // Each layer's packets: its SSRC and sequence numbers, its rid, a payload tagged with the
        // layer (first byte of the slice: 1 low, 2 high) and a running number.
        let ssrcs: [String: UInt32] = ["l": 0x1111_0000, "h": 0x2222_0000]
        var sequence: [String: UInt16] = ["l": 100, "h": 40_000]
        var number: UInt8 = 0
        func send(_ rid: String, keyframe: Bool = false, timestamp: UInt32) {
            number &+= 1
            var packet = RTPPacket(marker: true, payloadType: pt, sequenceNumber: sequence[rid]!, timestamp: timestamp,
                                   ssrc: ssrcs[rid]!, payload: [keyframe ? 0x65 : 0x41, rid == "l" ? 1 : 2, number])
            sequence[rid]! &+= 1
            packet.setExtension(id: 10, data: Array(rid.utf8))
            transport.sendRaw(packet.serialize())
        }
        var frame: UInt32 = 0
        func frames(_ count: Int, keyframe: String? = nil) {
            for i in 0..<count {
                frame += 1
                for rid in ["l", "h"] { send(rid, keyframe: i == 0 && rid == keyframe, timestamp: frame * 3000) }
                sim.advance(by: .milliseconds(33))
            }
        }
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
