import Media
import SeededRandom
import Testing
@testable import RTPMedia

@Suite struct VP8PayloadTests {
    @Test func descriptorRoundTripsWithEveryOptionalField() throws {
        let samples: [VP8PayloadDescriptor] = [
            VP8PayloadDescriptor(startOfPartition: true),
            VP8PayloadDescriptor(nonReference: true, startOfPartition: false, partitionIndex: 5),
            VP8PayloadDescriptor(startOfPartition: true, pictureID: 0x7FFF, longPictureID: true),
            VP8PayloadDescriptor(startOfPartition: true, pictureID: 0x55, longPictureID: false),
            VP8PayloadDescriptor(startOfPartition: false, partitionIndex: 1, pictureID: 300, tl0PictureIndex: 17),
            VP8PayloadDescriptor(startOfPartition: true, tl0PictureIndex: 3, temporalLayerIndex: 2, layerSync: true),
            VP8PayloadDescriptor(startOfPartition: true, keyIndex: 21),
            VP8PayloadDescriptor(startOfPartition: true, pictureID: 1234, tl0PictureIndex: 9,
                                 temporalLayerIndex: 3, layerSync: true, keyIndex: 31),
        ]
        for d in samples {
            let bytes = d.serialize()
            #expect(bytes.count == d.size)
            let (parsed, size) = try VP8PayloadDescriptor.parse(bytes + [0xAA])
            #expect(size == bytes.count)
            #expect(parsed == d)
        }
        // The packetizer's form: X=1 S=1 PID=0, I=1, M=1 with the 15-bit ID.
        #expect(VP8PayloadDescriptor(startOfPartition: true, pictureID: 0x1234).serialize() == [0x90, 0x80, 0x92, 0x34])
    }

    @Test func frameRoundTripsAndKeyframeIsDetected() throws {
        var rng = SplitMix64(seed: 11)
        let key = makeVP8Frame(keyframe: true, size: 7000, width: 640, height: 360, rng: &rng)
        var packetizer = VP8Packetizer(initialPictureID: 42)
        let payloads = packetizer.packetize(EncodedFrame(codec: .vp8, data: key, isKeyframe: true, rtpTimestamp: 0))
        #expect(payloads.count == 7)  // ceil(7000 / 1148)
        for (k, p) in payloads.enumerated() {
            #expect(p.bytes.count <= RTPPayloadLimits.defaultMaxPayloadSize)
            let (d, size) = try VP8PayloadDescriptor.parse(p.bytes)
            #expect(size == 4)
            #expect(d.startOfPartition == (k == 0) && d.partitionIndex == 0 && !d.nonReference)
            #expect(d.pictureID == 42 && d.longPictureID)
            #expect(p.marker == (k == payloads.count - 1))
        }
        let out = try VP8Depacketizer.depacketize(payloads.map(\.bytes))
        #expect(out.data == key)
        #expect(out.isKeyframe && out.width == 640 && out.height == 360 && out.pictureID == 42)

        let delta = makeVP8Frame(keyframe: false, size: 500, rng: &rng)
        let deltaOut = try VP8Depacketizer.depacketize(packetizer.packetize(frame: delta).map(\.bytes))
        #expect(deltaOut.data == delta && !deltaOut.isKeyframe && deltaOut.pictureID == 43)
    }

    @Test func pictureIDIncrementsAndWrapsAt15Bits() throws {
        var packetizer = VP8Packetizer(initialPictureID: 0x7FFE)
        var ids: [UInt16?] = []
        for _ in 0..<4 {
            let p = packetizer.packetize(frame: [0x11, 0x02, 0x00, 0x01])
            ids.append(try VP8PayloadDescriptor.parse(p[0].bytes).0.pictureID)
        }
        #expect(ids == [0x7FFE, 0x7FFF, 0, 1])
        #expect(packetizer.packetize(frame: []).isEmpty)
        #expect(packetizer.pictureID == 2)
    }

    /// A temporally layered frame carries its layer, layer sync and TL0PICIDX (counting base
    /// frames, the same on every packet of a frame), and N when nothing references it.
    @Test func temporalLayersGoInTheDescriptor() throws {
        var packetizer = VP8Packetizer(initialPictureID: 7)
        let pattern: [(UInt8, Bool, Bool)] = [(0, false, true), (2, true, false), (1, true, true), (2, false, false), (0, false, true)]
        var seen: [(tid: UInt8?, sync: Bool, n: Bool, tl0: UInt8?)] = []
        for (layer, sync, reference) in pattern {
            let frame = EncodedFrame(codec: .vp8, data: [UInt8](repeating: 0x31, count: 2500), isKeyframe: false, rtpTimestamp: 0,
                                     temporal: TemporalLayerInfo(layer: layer, sync: sync, isReference: reference))
            let payloads = packetizer.packetize(frame)
            let descriptors = try payloads.map { try VP8PayloadDescriptor.parse($0.bytes) }
            #expect(payloads.count == 3 && descriptors.allSatisfy { $0.size == 6 })
            #expect(Set(descriptors.map { "\($0.0.temporalLayerIndex ?? 9)/\($0.0.tl0PictureIndex ?? 0)/\($0.0.layerSync)/\($0.0.nonReference)" }).count == 1,
                    "one frame, one set of fields")
            let d = descriptors[0].0
            seen.append((d.temporalLayerIndex, d.layerSync, d.nonReference, d.tl0PictureIndex))
            #expect(try VP8Depacketizer.depacketize(payloads.map(\.bytes)).data == frame.data)
        }
        #expect(seen.map(\.tid) == [0, 2, 1, 2, 0])
        #expect(seen.map(\.sync) == [false, true, true, false, false])
        #expect(seen.map(\.n) == [false, true, false, true, false])
        #expect(seen.map(\.tl0) == [1, 1, 1, 1, 2])
        // Without temporal layers: no T or L fields, as before.
        let plain = try VP8PayloadDescriptor.parse(packetizer.packetize(frame: [0x31, 0x02]).first?.bytes ?? []).0
        #expect(plain.temporalLayerIndex == nil && plain.tl0PictureIndex == nil)
    }

    @Test func malformedPayloadsThrow() {
        let cases: [(String, [[UInt8]])] = [
            ("no payloads", []),
            ("empty", [[]]),
            ("X without extension byte", [[0x90]]),
            ("I without PictureID", [[0x90, 0x80]]),
            ("M without low byte", [[0x90, 0x80, 0x81]]),
            ("L without TL0PICIDX", [[0x90, 0x40]]),
            ("T without TID byte", [[0x90, 0x20]]),
            ("descriptor only", [[0x10]]),
            ("not a frame start", [[0x00, 0x11]]),
            ("partition 1 first", [[0x11, 0x11]]),
            ("short keyframe", [[0x10, 0x10, 0x02, 0x00, 0x9D]]),
            ("keyframe without start code", [[0x10, 0x10, 0x02, 0x00, 1, 2, 3, 4, 5, 6, 7]]),
            ("PictureID changes", [[0x90, 0x80, 0x80, 0x01, 0x11], [0x80, 0x80, 0x80, 0x02, 0x11]]),
        ]
        for (name, payloads) in cases {
            #expect(throws: PayloadError.self, "\(name)") { try VP8Depacketizer.depacketize(payloads) }
        }
    }
}

@Suite struct OpusPayloadTests {
    @Test func markerOnTalkspurtStarts() {
        var packetizer = OpusPacketizer()
        let speech: [UInt8] = [0x78] + [UInt8](repeating: 7, count: 60)
        let dtx: [UInt8] = [0x78]
        let markers = [speech, speech, dtx, dtx, speech, speech].map { packetizer.packetize($0).marker }
        #expect(markers == [true, false, false, false, true, false])
        #expect(packetizer.packetize(speech, isSpeech: false).marker == false)
        #expect(packetizer.packetize(speech, isSpeech: true).marker == true)
    }

    @Test func packetsValidateAndReportDuration() throws {
        #expect(try OpusDepacketizer.duration(of: [0x78, 1, 2, 3]) == 20_000)        // CELT FB 20 ms, code 0
        #expect(try OpusDepacketizer.duration(of: [0x79, 1, 2]) == 40_000)           // code 1, two frames
        #expect(try OpusDepacketizer.duration(of: [0x1B, 0x02, 0x01]) == 120_000)    // SILK 60 ms ×2 (code 3)
        #expect(try OpusDepacketizer.depacketize([0x78, 9]) == [0x78, 9])
        for bad: [UInt8] in [[], [0x79, 1], [0x7A], [0x7A, 9, 1], [0x7B], [0x7B, 0x00], [0x1B, 0x03]] {
            #expect(throws: PayloadError.self) { try OpusDepacketizer.depacketize(bad) }
        }
    }
}
