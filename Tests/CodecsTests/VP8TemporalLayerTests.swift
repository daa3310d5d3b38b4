import Media
import Testing
@testable import Codecs

/// VP8 temporal layers (L1T2, L1T3): each frame is labelled with its layer, and a receiver that
/// gets only the lower layers (a relay dropped the rest) decodes exactly what a receiver of
/// every layer decodes for those frames, byte for byte.
@Suite struct VP8TemporalLayerTests {
    static let w = 320, h = 180

    /// `count` frames of the synthetic clip at 30 fps; `forceAt`: frames asked to be keyframes.
    static func encode(layers: Int, count: Int, forceAt: Set<Int> = [], keyframeInterval: Int = 0) throws -> [EncodedFrame] {
        let encoder = try VP8Encoder(settings: VideoEncoderSettings(width: w, height: h, bitrate: 600_000,
                                                                    keyframeInterval: keyframeInterval, temporalLayers: layers),
                                     options: .init(frameDropping: false))
        return try (0..<count).map { i in
            try #require(try encoder.encode(SyntheticVideo.frame(i, width: w, height: h),
                                            rtpTimestamp: SyntheticVideo.rtpTimestamp(i), forceKeyframe: forceAt.contains(i)))
        }
    }

    /// Decodes `frames` in order; the pictures, by index into `frames`.
    static func decode(_ frames: [EncodedFrame]) throws -> [VideoFrameBuffer] {
        let decoder = try VP8Decoder()
        return try frames.enumerated().map { i, f in try #require(try decoder.decode(f), "frame \(i) did not decode").buffer }
    }

    static func samePixels(_ a: VideoFrameBuffer, _ b: VideoFrameBuffer) -> Bool {
        let a = a.converted(to: .i420), b = b.converted(to: .i420)
        guard a.width == b.width, a.height == b.height else { return false }
        for plane in 0..<3 {
            let rows = plane == 0 ? a.height : (a.height + 1) / 2, cols = plane == 0 ? a.width : (a.width + 1) / 2
            for r in 0..<rows {
                let pa = a.planePointer(plane) + r * a.strides[plane], pb = b.planePointer(plane) + r * b.strides[plane]
                for c in 0..<cols where pa[c] != pb[c] { return false }
            }
        }
        return true
    }

    @Test func l1t3LabelsFramesZeroTwoOneTwo() throws {
        let frames = try Self.encode(layers: 3, count: 12)
        #expect(frames[0].isKeyframe && frames.dropFirst().allSatisfy { !$0.isKeyframe })
        let infos = frames.map { try? #require($0.temporal) }
        #expect(infos.map { $0?.layer } == [0, 2, 1, 2, 0, 2, 1, 2, 0, 2, 1, 2])
        #expect(infos.map { $0?.sync } == [false, true, true, false, false, true, true, false, false, true, true, false])
        #expect(infos.map { $0?.isReference } == [true, false, true, false, true, false, true, false, true, false, true, false])
    }

    @Test func l1t2LabelsFramesZeroOne() throws {
        let frames = try Self.encode(layers: 2, count: 6)
        #expect(frames.map { $0.temporal?.layer } == [0, 1, 0, 1, 0, 1])
        #expect(frames.map { $0.temporal?.isReference } == [true, false, true, false, true, false])
        #expect(frames.allSatisfy { $0.temporal?.layer == 0 || $0.temporal?.sync == true })
    }

    /// What a relay does: keep the frames up to a layer. Each kept frame decodes to the same
    /// picture as in the full stream (so no kept frame references a dropped one, and dropped
    /// frames leave the decoder's state alone), and that picture is the source's.
    @Test(arguments: [(3, 0), (3, 1), (2, 0)])
    func lowerLayersAloneDecodeTheSamePictures(layers: Int, keep: Int) throws {
        let count = 40
        let frames = try Self.encode(layers: layers, count: count, forceAt: [17])
        let all = try Self.decode(frames)
        let kept = frames.indices.filter { Int(frames[$0].temporal?.layer ?? 9) <= keep }
        #expect(kept.count < count && kept.count >= count / (keep == 0 ? (layers == 3 ? 4 : 2) : 2) - 1)
        let partial = try Self.decode(kept.map { frames[$0] })
        for (n, i) in kept.enumerated() {
            #expect(Self.samePixels(partial[n], all[i]), "frame \(i) (layer \(frames[i].temporal?.layer ?? 9)) differs without the upper layers")
            let quality = psnr(SyntheticVideo.frame(i, width: Self.w, height: Self.h).buffer, partial[n])
            #expect(quality >= 30, "frame \(i): \(quality) dB")
        }
    }

    /// A keyframe asked for mid-pattern is a base-layer frame and starts the pattern over; so is
    /// one the interval makes (placed by us, not libvpx, which would put it on any layer).
    @Test func keyframesAreBaseLayerAndRestartThePattern() throws {
        let asked = try Self.encode(layers: 3, count: 10, forceAt: [5])
        #expect(asked[5].isKeyframe)
        #expect(asked.map { $0.temporal?.layer } == [0, 2, 1, 2, 0, 0, 2, 1, 2, 0])
        let interval = try Self.encode(layers: 3, count: 14, keyframeInterval: 6)
        #expect(interval.indices.filter { interval[$0].isKeyframe } == [0, 6, 12])
        #expect(interval.map { $0.temporal?.layer } == [0, 2, 1, 2, 0, 2, 0, 2, 1, 2, 0, 2, 0, 2])
    }

    /// The layers' share of the bits follows libwebrtc's split (40/20/40 of the rate for L1T3):
    /// the base layer, a quarter of the frames, carries far more than a quarter of the bytes.
    @Test func theBaseLayerCarriesItsShareOfTheBitrate() throws {
        let frames = try Self.encode(layers: 3, count: 120)
        let steady = frames.dropFirst(30)   // past the keyframe
        let bytes = (0...2).map { l in steady.filter { $0.temporal?.layer == UInt8(l) }.reduce(0) { $0 + $1.data.count } }
        let total = Double(bytes.reduce(0, +))
        #expect(Double(bytes[0]) / total > 0.3, "base layer \(bytes) bytes")
        #expect(Double(bytes[2]) / total > 0.15, "top layer \(bytes) bytes")
    }

    @Test func otherLayerCountsAreRefused() throws {
        #expect(throws: MediaError("VP8 encoder: 4 temporal layers (it makes 1…3)")) {
            try VP8Encoder(settings: VideoEncoderSettings(width: 320, height: 180, temporalLayers: 4))
        }
        #expect(throws: MediaError("H.264 encoder: 4 temporal layers (it makes 1…3)")) {
            try OpenH264Encoder(settings: VideoEncoderSettings(width: 320, height: 180, temporalLayers: 4))
        }
    }
}
