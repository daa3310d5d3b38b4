import Capture
import Locks
import Media
import PeerConnection
import RTP
import RTPMedia
import SessionSupport
import Testing

/// `scalabilityMode` L1T3 on a VP8 sender: its packets carry the temporal layer pattern in the
/// payload descriptor; on an H.264 sender in each slice's nal_ref_idc (the top layer's is 0);
/// the receiver decodes every frame in order; an unknown mode is refused with the field named.
@Suite struct TemporalLayerSendTests {
    @Test(arguments: ["vp8", "h264"])
    func l1t3ReachesTheWireAndDecodes(codec: String) async throws {
        let sim = Simulation(seed: 3)
        let a = try sim.peer(), b = try sim.peer()
        let source = VideoSource()
        let t = try await a.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [codec == "vp8" ? .vp8 : .h264])
        t.sender.replaceTrack(VideoTrack(id: "v", source: source))
        try t.sender.setParameters(RtpSendParameters(encodings: [RtpEncodingParameters(minBitrate: 400_000, scalabilityMode: "L1T3")],
                                                     degradationPreference: .maintainFramerate))
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let receiver = try #require(b.transceivers.first?.receiver)
        let packets = Locked<[RTPPacket]>([])
        receiver.onRTP = { p in packets.withLock { $0.append(p) } }
        let log = FrameLog()
        try #require(receiver.videoTrack).addRenderer(log)
        deliverFrames(patternFrames(TestPatternCapturer(), count: 24, from: 0, rotation: .r0), into: source, on: sim)
        sim.run(within: .seconds(2)) { log.all.count >= 24 }
        let numbers = log.all.compactMap(\.number)
        #expect(numbers.count == 24 && numbers == numbers.sorted(), "decoded \(numbers)")

        // One descriptor per frame (its first packet), in timestamp order.
        var firsts: [UInt32: VP8PayloadDescriptor] = [:]
        for p in packets.value where firsts[p.timestamp] == nil {
            if let d = try? VP8PayloadDescriptor.parse(p.payload).0, d.startsFrame { firsts[p.timestamp] = d }
        }
        let descriptors = firsts.keys.sorted().compactMap { firsts[$0] }
        if codec == "vp8" {
            try #require(descriptors.count >= 20)
            let layers = descriptors.map { $0.temporalLayerIndex.map(Int.init) ?? -1 }
            #expect(Array(layers.prefix(8)) == [0, 2, 1, 2, 0, 2, 1, 2], "\(layers)")
            let base = descriptors.filter { $0.temporalLayerIndex == 0 }.compactMap(\.tl0PictureIndex)
            #expect(zip(base, base.dropFirst()).allSatisfy { $1 == $0 &+ 1 }, "TL0PICIDX counts base frames: \(base)")
            let topLayerDiscardable = descriptors.filter { $0.temporalLayerIndex == 2 }.allSatisfy { $0.nonReference }
            #expect(topLayerDiscardable, "TL2 frames carry N")
        }
        if codec == "h264" {
            // Each frame's layer as a relay reads it (`H264TemporalReader`: the top one), in timestamp order.
            var layers: [UInt32: UInt8] = [:]
            for p in packets.value {
                if let mark = p.payload.withUnsafeBytes({ H264TemporalReader.mark($0) }), mark.startsFrame { layers[p.timestamp] = mark.layer }
            }
            let pattern = layers.keys.sorted().compactMap { layers[$0] }
            try #require(pattern.count >= 20)
            #expect(Array(pattern.prefix(8)) == [0, 1, 0, 1, 0, 1, 0, 1], "\(pattern)")
        }
        let outbound = try #require(await a.getStats().ofType("outbound-rtp").first)
        #expect(outbound.string("scalabilityMode") == "L1T3", "\(outbound.values)")
        await a.close()
        await b.close()
    }

    @Test func anUnknownScalabilityModeIsRefused() async throws {
        let sim = Simulation()
        let a = try sim.peer()
        let t = try await a.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.vp8])
        #expect(throws: PeerConnectionError.self) {
            try t.sender.setParameters(RtpSendParameters(encodings: [RtpEncodingParameters(scalabilityMode: "L3T3")]))
        }
        do {
            try t.sender.setParameters(RtpSendParameters(encodings: [RtpEncodingParameters(scalabilityMode: "L1T4")]))
        } catch {
            #expect("\(error)".contains("scalabilityMode L1T4 is not supported (L1T1, L1T2, L1T3)"), "\(error)")
        }
        await a.close()
    }
}
