import Media
import SeededRandom
import Testing
@testable import RTPMedia

@Suite struct H264PayloadTests {
    @Test func defaultPayloadSizeIsStated() {
        #expect(RTPPayloadLimits.defaultMaxPayloadSize == 1152)
    }

    @Test func smallKeyframeGoesInOneSTAPA() throws {
        var rng = SplitMix64(seed: 1)
        let sps = makeNAL(type: 7, size: 10, rng: &rng), pps = makeNAL(type: 8, size: 4, rng: &rng)
        let idr = makeNAL(type: 5, size: 200, rng: &rng)
        let frame = annexB([sps, pps, idr])
        var packetizer = H264Packetizer()
        let payloads = packetizer.packetize(EncodedFrame(codec: .h264, data: frame, isKeyframe: true, rtpTimestamp: 0))
        #expect(payloads.count == 1)
        #expect(payloads[0].marker)
        // STAP-A: F=0 NRI=3 type 24, then size-prefixed units in order.
        let expected: [UInt8] = [0x78, 0, 10] + sps + [0, 4] + pps + [0, 200] + idr
        #expect(payloads[0].bytes == expected)
        var depacketizer = H264Depacketizer()
        let out = try depacketizer.depacketize(payloads.map(\.bytes))
        #expect(out.data == frame)
        #expect(out.isKeyframe)
    }

    @Test func largeFrameFragmentsEvenlyWithFUA() throws {
        var rng = SplitMix64(seed: 2)
        let sps = makeNAL(type: 7, size: 12, rng: &rng), pps = makeNAL(type: 8, size: 4, rng: &rng)
        let idr = makeNAL(type: 5, size: 5000, rng: &rng)
        let frame = annexB([sps, pps, idr])
        var packetizer = H264Packetizer()
        let payloads = packetizer.packetize(annexB: frame, maxPayloadSize: 1152)
        // STAP-A with SPS+PPS (the IDR does not fit), then ceil(4999 / 1150) = 5 FU-As.
        #expect(payloads.count == 6)
        #expect(payloads[0].bytes == [0x78, 0, 12] + sps + [0, 4] + pps)
        let fus = payloads.dropFirst()
        for (k, fu) in fus.enumerated() {
            #expect(fu.bytes.count <= 1152)
            #expect(fu.bytes[0] == 0x60 | 28)
            #expect(fu.bytes[1] & 0x1F == 5)
            #expect((fu.bytes[1] & 0x80 != 0) == (k == 0))
            #expect((fu.bytes[1] & 0x40 != 0) == (k == fus.count - 1))
            #expect(fu.marker == (k == fus.count - 1))
        }
        let sizes = fus.map { $0.bytes.count - 2 }
        #expect(sizes.reduce(0, +) == 4999)
        #expect(sizes.max()! - sizes.min()! <= 1)
        var depacketizer = H264Depacketizer()
        let out = try depacketizer.depacketize(payloads.map(\.bytes))
        #expect(out.data == frame)
        #expect(out.isKeyframe)
    }

    @Test(arguments: [3, 4, 17, 100, 1152])
    func roundTripsAtEverySizeBoundary(maxPayload: Int) throws {
        var rng = SplitMix64(seed: UInt64(maxPayload))
        let sizes = [1, 2, 3, maxPayload - 3, maxPayload - 2, maxPayload - 1, maxPayload, maxPayload + 1,
                     2 * maxPayload - 3, 2 * maxPayload, 3 * maxPayload + 7].filter { $0 >= 1 }
        var packetizer = H264Packetizer()
        var depacketizer = H264Depacketizer()
        for size in sizes {
            let nals = [makeNAL(type: 6, size: 5, rng: &rng), makeNAL(type: 1, size: size, rng: &rng),
                        makeNAL(type: 1, size: max(size / 3, 1), rng: &rng)]
            let frame = annexB(nals)
            let payloads = packetizer.packetize(annexB: frame, maxPayloadSize: maxPayload)
            #expect(payloads.allSatisfy { $0.bytes.count <= max(maxPayload, 3) }, "size \(size)")
            #expect(payloads.filter(\.marker).count == 1 && payloads.last?.marker == true)
            let out = try depacketizer.depacketize(payloads.map(\.bytes))
            #expect(out.data == frame, "size \(size) max \(maxPayload)")
            #expect(!out.isKeyframe)
        }
    }

    @Test func threeByteStartCodesComeBackAsFourByte() throws {
        var rng = SplitMix64(seed: 3)
        let a = makeNAL(type: 1, size: 50, rng: &rng), b = makeNAL(type: 1, size: 60, rng: &rng)
        var packetizer = H264Packetizer()
        let payloads = packetizer.packetize(annexB: [0, 0, 1] + a + [0, 0, 1] + b + [0, 0])
        var depacketizer = H264Depacketizer()
        #expect(try depacketizer.depacketize(payloads.map(\.bytes)).data == annexB([a, b]))
    }

    @Test func spsAndPPSAreInsertedBeforeIDRs() throws {
        var rng = SplitMix64(seed: 4)
        let sps = makeNAL(type: 7, size: 12, rng: &rng), pps = makeNAL(type: 8, size: 4, rng: &rng)
        var packetizer = H264Packetizer()
        _ = packetizer.packetize(annexB: annexB([sps, pps, makeNAL(type: 5, size: 300, rng: &rng)]))
        _ = packetizer.packetize(annexB: annexB([makeNAL(type: 1, size: 300, rng: &rng)]))
        // An IDR without parameter sets (after an AUD) gets the remembered ones in front of it.
        let aud: [UInt8] = [0x09, 0xF0]
        let idr = makeNAL(type: 5, size: 3000, rng: &rng)
        let payloads = packetizer.packetize(annexB: annexB([aud, idr]))
        #expect(payloads[0].bytes == [0x78, 0, 2] + aud + [0, 12] + sps + [0, 4] + pps)
        var depacketizer = H264Depacketizer()
        let out = try depacketizer.depacketize(payloads.map(\.bytes))
        #expect(out.data == annexB([aud, sps, pps, idr]))
        #expect(out.isKeyframe)
        // A delta frame gets nothing inserted.
        let delta = packetizer.packetize(annexB: annexB([makeNAL(type: 1, size: 30, rng: &rng)]))
        #expect(delta.count == 1 && delta[0].bytes[0] & 0x1F == 1)
    }

    @Test func depacketizerRestoresMissingParameterSets() throws {
        var rng = SplitMix64(seed: 5)
        let sps = makeNAL(type: 7, size: 12, rng: &rng), pps = makeNAL(type: 8, size: 4, rng: &rng)
        let idr = makeNAL(type: 5, size: 100, rng: &rng)
        var depacketizer = H264Depacketizer()
        // An IDR alone, before any SPS/PPS: not decodable, so not a keyframe.
        #expect(try depacketizer.depacketize([idr]).isKeyframe == false)
        _ = try depacketizer.depacketize([sps, pps])
        let out = try depacketizer.depacketize([idr])
        #expect(out.data == annexB([sps, pps, idr]))
        #expect(out.isKeyframe)
    }

    @Test func malformedPayloadsThrow() {
        let cases: [(String, [[UInt8]])] = [
            ("no payloads", []),
            ("empty", [[]]),
            ("STAP-A header only", [[0x78]]),
            ("STAP-A truncated size", [[0x78, 0x00]]),
            ("STAP-A overrun", [[0x78, 0x00, 0x05, 0x65, 0x01]]),
            ("STAP-A zero size", [[0x78, 0x00, 0x00, 0x00, 0x01, 0x65]]),
            ("STAP-A nested", [[0x78, 0x00, 0x02, 0x78, 0x01]]),
            ("FU-A too short", [[0x7C, 0x85]]),
            ("FU-A start and end", [[0x7C, 0xC5, 0x01]]),
            ("FU-A continuation without start", [[0x7C, 0x05, 0x01]]),
            ("FU-A never ends", [[0x7C, 0x85, 0x01], [0x7C, 0x05, 0x02]]),
            ("FU-A type changes", [[0x7C, 0x85, 0x01], [0x7C, 0x41, 0x02]]),
            ("FU-A interrupted", [[0x7C, 0x85, 0x01], [0x65, 0x01]]),
            ("FU-A double start", [[0x7C, 0x85, 0x01], [0x7C, 0x85, 0x01]]),
            ("type 0", [[0x00, 0x01]]),
            ("STAP-B", [[0x79, 0x00]]),
            ("FU-B", [[0x7D, 0x85, 0x00, 0x00, 0x01]]),
            ("type 31", [[0x1F]]),
        ]
        for (name, payloads) in cases {
            var depacketizer = H264Depacketizer()
            #expect(throws: PayloadError.self, "\(name)") { try depacketizer.depacketize(payloads) }
        }
        var depacketizer = H264Depacketizer()
        do {
            _ = try depacketizer.depacketize([[0x78, 0x00, 0x05, 0x65, 0x01]])
        } catch {
            #expect(error.description.contains("payload 0 at offset 1"))
        }
    }

    @Test func randomPayloadsNeverTrap() {
        var rng = SplitMix64(seed: 99)
        var depacketizer = H264Depacketizer()
        var thrown = 0
        for _ in 0..<10_000 {
            let count = Int.random(in: 0...4, using: &rng)
            let payloads = (0..<count).map { _ in
                (0..<Int.random(in: 0...40, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            }
            do { _ = try depacketizer.depacketize(payloads) } catch { thrown += 1 }
        }
        #expect(thrown > 5000)
    }
}
