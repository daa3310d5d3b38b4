import Capture
import Locks
import Media
import PeerConnection
import RTP
import RTPMedia
import SessionSupport
import Testing
import Transport

/// The relay sends each player of a VP8 L1T3 stream the temporal layers it asks for
/// (`?temporal=N`): fewer frames, each decoded and in order, as one stream without holes
/// (sequence numbers and PictureIDs continue over the frames left out), NACKs answered.
@Suite struct RelayTemporalLayerTests {
    @Test(arguments: [false, true])
    func eachPlayerGetsItsTemporalLayers(lossy: Bool) async throws {
        let sim = Simulation(seed: 5)
        let relay = try sim.relay()
        let publisher = try sim.peer(Simulation.fullSizeStart)
        let source = VideoSource()
        let t = try await publisher.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.vp8])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        try t.sender.setParameters(RtpSendParameters(encodings: [RtpEncodingParameters(minBitrate: 400_000, scalabilityMode: "L1T3")],
                                                     degradationPreference: .maintainFramerate))
        try await sim.exchange(relay, publisher, endpoint: "whip", stream: "tl")

        struct Player { let pc: PeerConnection; let log: FrameLog; let packets: Locked<[RTPPacket]> }
        var players: [Player] = []
        for query in ["", "&temporal=1", "&temporal=0"] {
            let link = Holder<VirtualEndpoint>()
            let pc = try sim.peer(endpoint: { link.value = $0 })
            _ = try await pc.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: [.vp8])
            _ = try await sim.exchange(relay, pc, endpoint: "whep", stream: "tl", query: query)
            if lossy, let io = link.value { sim.loop.perform { io.downlink.conditions = LinkConditions(loss: 0.05) } }
            let receiver = try #require(pc.transceivers.first?.receiver)
            let log = FrameLog(), packets = Locked<[RTPPacket]>([])
            try #require(receiver.videoTrack).addRenderer(log)
            receiver.onRTP = { p in packets.withLock { $0.append(p) } }
            players.append(Player(pc: pc, log: log, packets: packets))
        }
        deliverFrames(patternFrames(TestPatternCapturer(), count: 120, from: 0, rotation: .r0), into: source, on: sim)
        sim.advance(by: .seconds(1))

        for (n, player) in players.enumerated() {
            let numbers = player.log.all.compactMap(\.number)
            #expect(numbers == numbers.sorted() && !numbers.isEmpty, "player \(n): \(numbers)")
            // Only the layers it asked for reach it.
            let layers = Set(player.packets.value.compactMap { try? VP8PayloadDescriptor.parse($0.payload).0.temporalLayerIndex })
            #expect(layers == Set(0...UInt8(2 - n)), "player \(n) got layers \(layers.sorted())")
            // From its first frame on: every frame (all layers), every other (TL0+TL1), every fourth (TL0).
            let step = [1, 2, 4][n]
            guard let first = numbers.first else { continue }
            let expected = Array(stride(from: first, through: 119, by: step))
            #expect(expected.count >= 100 / step, "player \(n) started at frame \(first)")
            if lossy {
                // Resends fill most gaps (a keyframe request replaces the rest): each player
                // shows nearly all of its frames.
                #expect(numbers.count * 10 >= expected.count * 9, "player \(n): \(numbers.count) of \(expected.count) frames: \(numbers)")
                continue
            }
            #expect(numbers == expected, "player \(n) (every \(step)th frame): \(numbers)")
            // One stream without holes: numbers consecutive, PictureIDs too.
            let seqs = Set(player.packets.value.map(\.sequenceNumber)).sorted { ($0 &- $1) > 0x8000 }
            let holes = zip(seqs, seqs.dropFirst()).filter { $1 != $0 &+ 1 }
            #expect(holes.isEmpty, "player \(n): sequence holes after \(holes.prefix(5).map(\.0))")
            var pictureIDs: [UInt16] = []
            for p in player.packets.value {
                if let d = try? VP8PayloadDescriptor.parse(p.payload).0, d.startsFrame, let id = d.pictureID, !pictureIDs.contains(id) {
                    pictureIDs.append(id)
                }
            }
            let idSteps = zip(pictureIDs, pictureIDs.dropFirst()).map { ($1 &- $0) & 0x7FFF }
            #expect(idSteps.allSatisfy { $0 == 1 }, "player \(n): PictureIDs step \(Set(idSteps))")
        }
        if lossy {
            let nacked = try await players[2].pc.getStats().ofType("inbound-rtp").first?.int("nackCount") ?? 0
            #expect(nacked > 0, "the base-layer player sent no NACK: nothing tested its resends")
        }
        for player in players { await player.pc.close() }
        await publisher.close()
        await relay.stop()
    }
}
