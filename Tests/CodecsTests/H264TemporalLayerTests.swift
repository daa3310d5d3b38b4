import Media
import Testing
@testable import Codecs

/// H.264 temporal layers (L1T2, L1T3) from OpenH264: each frame is labelled with its layer, the
/// layer is in every slice's nal_ref_idc (3 base, 1 middle, 0 top: a relay reads the 0), and a
/// receiver given only the lower layers decodes exactly what a receiver of every layer decodes
/// for those frames (FFmpeg, as Chromium decodes H.264, and OpenH264).
@Suite struct H264TemporalLayerTests {
    static let w = 320, h = 180

    static func encode(layers: Int, count: Int, forceAt: Set<Int> = []) throws -> [EncodedFrame] {
        let encoder = try OpenH264Encoder(settings: VideoEncoderSettings(width: w, height: h, bitrate: 600_000, temporalLayers: layers),
                                          options: .init(frameSkip: false))
        return try (0..<count).map { i in
            try #require(try encoder.encode(SyntheticVideo.frame(i, width: w, height: h),
                                            rtpTimestamp: SyntheticVideo.rtpTimestamp(i), forceKeyframe: forceAt.contains(i)))
        }
    }

    /// The nal_ref_idc of each slice (NAL types 1 and 5) of an Annex-B frame.
    static func sliceNRIs(_ frame: EncodedFrame) -> [UInt8] {
        let d = frame.data
        var nris: [UInt8] = []
        var i = 0
        while i + 3 < d.count {
            guard d[i] == 0, d[i + 1] == 0, d[i + 2] == 1 else { i += 1; continue }
            let header = d[i + 3]
            if [1, 5].contains(header & 0x1F) { nris.append((header >> 5) & 3) }
            i += 3
        }
        return nris
    }

    @Test func l1t3LabelsFramesZeroTwoOneTwoAndWritesTheLayerInNalRefIdc() throws {
        let frames = try Self.encode(layers: 3, count: 12)
        #expect(frames[0].isKeyframe && frames.dropFirst().allSatisfy { !$0.isKeyframe })
        #expect(frames.map { $0.temporal?.layer } == [0, 2, 1, 2, 0, 2, 1, 2, 0, 2, 1, 2])
        #expect(frames.map { $0.temporal?.sync } == [false, true, true, false, false, true, true, false, false, true, true, false])
        #expect(frames.map { $0.temporal?.isReference } == [true, false, true, false, true, false, true, false, true, false, true, false])
        let layerOfNRI: [UInt8: UInt8] = [3: 0, 2: 1, 1: 1, 0: 2]
        for (i, f) in frames.enumerated() {
            let nris = Self.sliceNRIs(f)
            #expect(!nris.isEmpty && nris.allSatisfy { layerOfNRI[$0] == f.temporal?.layer }, "frame \(i): NRIs \(nris)")
        }
    }

    @Test func l1t2LabelsFramesZeroOne() throws {
        let frames = try Self.encode(layers: 2, count: 6)
        #expect(frames.map { $0.temporal?.layer } == [0, 1, 0, 1, 0, 1])
        #expect(frames.map { Self.sliceNRIs($0) } == [[3], [0], [3], [0], [3], [0]])
        #expect(frames.allSatisfy { $0.temporal?.layer == 0 || $0.temporal?.sync == true })
    }

    /// What a relay does: keep the frames up to a layer. Each kept frame decodes to the same
    /// picture as in the full stream, with FFmpeg and with OpenH264.
    @Test(arguments: [(3, 0), (3, 1), (2, 0)])
    func lowerLayersAloneDecodeTheSamePictures(layers: Int, keep: Int) throws {
        let count = 40
        let frames = try Self.encode(layers: layers, count: count, forceAt: [17])
        let kept = frames.indices.filter { Int(frames[$0].temporal?.layer ?? 9) <= keep }
        #expect(kept.count < count && kept.count >= count / (keep == 0 ? (layers == 3 ? 4 : 2) : 2) - 1)
        for decoder in ["ffmpeg", "openh264"] {
            func make() throws -> VideoDecoder { decoder == "ffmpeg" ? try FFmpegH264Decoder() : try OpenH264Decoder() }
            let full = try make(), partial = try make()
            let all = try frames.enumerated().map { i, f in try #require(try full.decode(f), "\(decoder): frame \(i) did not decode").buffer }
            for i in kept {
                let picture = try #require(try partial.decode(frames[i]), "\(decoder): frame \(i) did not decode alone").buffer
                #expect(VP8TemporalLayerTests.samePixels(picture, all[i]),
                        "\(decoder): frame \(i) (layer \(frames[i].temporal?.layer ?? 9)) differs without the upper layers")
                let quality = psnr(SyntheticVideo.frame(i, width: Self.w, height: Self.h).buffer, picture)
                #expect(quality >= 30, "\(decoder): frame \(i): \(quality) dB")
            }
        }
    }
}
