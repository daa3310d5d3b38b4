import Media
import Testing
@testable import Codecs

/// The codec pairs under test: every encoder with every decoder that speaks its codec.
enum Pair: String, CaseIterable, CustomTestStringConvertible {
    case h264FFmpeg, h264OpenH264, vp8

    var codec: VideoCodecType { self == .vp8 ? .vp8 : .h264 }
    var testDescription: String { rawValue }

    func encoder(_ settings: VideoEncoderSettings) throws -> any VideoEncoder {
        // No frame skipping: the tests count frames.
        switch codec {
        case .h264: return try OpenH264Encoder(settings: settings, options: .init(frameSkip: false))
        case .vp8: return try VP8Encoder(settings: settings, options: .init(frameDropping: false))
        }
    }

    func decoder() throws -> any VideoDecoder {
        switch self {
        case .h264FFmpeg: return try FFmpegH264Decoder()
        case .h264OpenH264: return try OpenH264Decoder()
        case .vp8: return try VP8Decoder()
        }
    }

    /// Whether an encoded frame is a keyframe judged from its bytes (not the encoder's flag).
    func bytesSayKeyframe(_ data: [UInt8]) -> Bool {
        switch codec {
        case .h264:
            let types = annexBNalTypes(data)
            return types.contains(5) && types.contains(7) && types.contains(8)
        case .vp8:
            return VP8Decoder.isKeyframe(data)
        }
    }
}

let width = 640, height = 360

@Suite struct VideoCodecTests {
    @Test(arguments: Pair.allCases)
    func roundTripKeepsSizeAndQuality(_ pair: Pair) throws {
        let encoder = try pair.encoder(VideoEncoderSettings(width: width, height: height, bitrate: 1_000_000))
        let decoder = try pair.decoder()
        var worst = 99.0
        for i in 0..<60 {
            let source = SyntheticVideo.frame(i, width: width, height: height)
            let encoded = try #require(try encoder.encode(source, rtpTimestamp: SyntheticVideo.rtpTimestamp(i), forceKeyframe: false))
            #expect(encoded.codec == pair.codec)
            #expect(encoded.width == width && encoded.height == height)
            if i == 0 {
                #expect(encoded.isKeyframe)
                #expect(pair.bytesSayKeyframe(encoded.data))
            }
            let decoded = try #require(try decoder.decode(encoded), "frame \(i) did not decode")
            #expect(decoded.width == width && decoded.height == height)
            #expect(decoded.timestampNs == source.timestampNs)
            worst = min(worst, psnr(source.buffer, decoded.buffer))
        }
        #expect(worst >= 30, "worst PSNR \(worst) dB")
    }

    @Test(arguments: Pair.allCases)
    func forcedKeyframe(_ pair: Pair) throws {
        let encoder = try pair.encoder(VideoEncoderSettings(width: width, height: height, bitrate: 800_000))
        for i in 0..<12 {
            let frame = SyntheticVideo.frame(i, width: width, height: height)
            let encoded = try #require(try encoder.encode(frame, rtpTimestamp: SyntheticVideo.rtpTimestamp(i), forceKeyframe: i == 8))
            let expectKey = i == 0 || i == 8
            #expect(encoded.isKeyframe == expectKey, "frame \(i)")
            #expect(pair.bytesSayKeyframe(encoded.data) == expectKey, "frame \(i) bytes")
            if pair.codec == .h264 && expectKey {
                // Parameter sets come first, then the IDR slice.
                #expect(Array(annexBNalTypes(encoded.data).prefix(3)) == [7, 8, 5])
            }
        }
    }

    @Test(arguments: [Pair.h264FFmpeg, .vp8])
    func keyframeIntervalAndRateChangesWithoutKeyframe(_ pair: Pair) throws {
        let encoder = try pair.encoder(VideoEncoderSettings(width: 320, height: 180, bitrate: 500_000, keyframeInterval: 10))
        var keyframes: [Int] = []
        for i in 0..<25 {
            if i == 5 { encoder.setRates(bitrate: 300_000, framerate: 20) }
            if i == 15 { try encoder.configure(VideoEncoderSettings(width: 320, height: 180, bitrate: 700_000, keyframeInterval: 10)) }
            let frame = SyntheticVideo.frame(i, width: 320, height: 180)
            let encoded = try #require(try encoder.encode(frame, rtpTimestamp: SyntheticVideo.rtpTimestamp(i), forceKeyframe: false))
            #expect(encoded.isKeyframe == pair.bytesSayKeyframe(encoded.data))
            if encoded.isKeyframe { keyframes.append(i) }
        }
        #expect(keyframes == [0, 10, 20], "\(pair.codec) keyframes at \(keyframes)")
        #expect(encoder.settings.bitrate == 700_000)
    }

    @Test(arguments: [VideoCodecType.h264, .vp8])
    func bitrateFollowsRunTimeChanges(_ codec: VideoCodecType) throws {
        let pair: Pair = codec == .h264 ? .h264FFmpeg : .vp8
        let encoder = try pair.encoder(VideoEncoderSettings(width: width, height: height, bitrate: 400_000))
        var index = 0
        func measure(_ frames: Int, fps: Double) throws -> Double {
            var bytes = 0
            for _ in 0..<frames {
                let frame = SyntheticVideo.frame(index, width: width, height: height, fps: fps)
                let encoded = try encoder.encode(frame, rtpTimestamp: SyntheticVideo.rtpTimestamp(index, fps: fps), forceKeyframe: false)
                bytes += encoded?.data.count ?? 0
                index += 1
            }
            return Double(bytes * 8) / (Double(frames) / fps)
        }
        let low = try measure(60, fps: 30)
        #expect(abs(low / 400_000 - 1) <= 0.3, "\(codec) at 400 kbps measured \(Int(low)) bps")

        encoder.setRates(bitrate: 1_200_000, framerate: 30)
        #expect(encoder.settings.bitrate == 1_200_000)
        let high = try measure(60, fps: 30)
        #expect(abs(high / 1_200_000 - 1) <= 0.3, "\(codec) at 1.2 Mbps measured \(Int(high)) bps")
    }

    @Test(arguments: [VideoCodecType.h264, .vp8])
    func framerateChangeKeepsBitrate(_ codec: VideoCodecType) throws {
        let pair: Pair = codec == .h264 ? .h264FFmpeg : .vp8
        let encoder = try pair.encoder(VideoEncoderSettings(width: width, height: height, framerate: 30, bitrate: 600_000))
        var index = 0, timeNs: Int64 = 0
        func run(_ frames: Int, fps: Double) throws -> (bps: Double, meanBytes: Double) {
            var bytes = 0
            for _ in 0..<frames {
                var frame = SyntheticVideo.frame(index, width: width, height: height)
                frame.timestampNs = timeNs
                let encoded = try #require(try encoder.encode(frame, rtpTimestamp: UInt32(truncatingIfNeeded: timeNs / 100_000 * 9 / 10), forceKeyframe: false))
                bytes += encoded.data.count
                index += 1
                timeNs += Int64(1_000_000_000 / fps)
            }
            return (Double(bytes * 8) / (Double(frames) / fps), Double(bytes) / Double(frames))
        }
        _ = try run(30, fps: 30)   // settle past the first keyframe
        let at30 = try run(60, fps: 30)
        encoder.setRates(bitrate: 600_000, framerate: 15)
        #expect(encoder.settings.framerate == 15)
        let at15 = try run(30, fps: 15)
        #expect(abs(at15.bps / 600_000 - 1) <= 0.3, "\(codec) at 15 fps measured \(Int(at15.bps)) bps")
        // The same bitrate over half the frames: each frame gets clearly more bits.
        #expect(at15.meanBytes > at30.meanBytes * 1.4, "\(at15.meanBytes) vs \(at30.meanBytes) bytes/frame")
    }

    @Test(arguments: Pair.allCases)
    func sizeChangeMidStream(_ pair: Pair) throws {
        let encoder = try pair.encoder(VideoEncoderSettings(width: width, height: height, bitrate: 1_000_000))
        let decoder = try pair.decoder()
        var index = 0
        func step(_ w: Int, _ h: Int) throws -> (EncodedFrame, VideoFrame) {
            let source = SyntheticVideo.frame(index, width: w, height: h)
            let encoded = try #require(try encoder.encode(source, rtpTimestamp: SyntheticVideo.rtpTimestamp(index), forceKeyframe: false))
            let decoded = try #require(try decoder.decode(encoded), "frame \(index) at \(w)x\(h) did not decode")
            let quality = psnr(source.buffer, decoded.buffer)
            #expect(quality >= 30, "frame \(index) at \(w)x\(h): \(quality) dB")
            index += 1
            return (encoded, decoded)
        }
        for _ in 0..<5 { _ = try step(width, height) }

        // A frame of another size: the encoder re-initializes on its own.
        let (first, decoded) = try step(320, 180)
        #expect(first.isKeyframe && pair.bytesSayKeyframe(first.data))
        #expect(first.width == 320 && first.height == 180)
        #expect(decoded.width == 320 && decoded.height == 180)
        #expect(encoder.settings.width == 320 && encoder.settings.height == 180)
        for _ in 0..<3 {
            let (e, d) = try step(320, 180)
            #expect(!e.isKeyframe && d.width == 320)
        }

        // configure() with a new size: next frame is a keyframe at that size.
        try encoder.configure(VideoEncoderSettings(width: 1280, height: 720, bitrate: 2_500_000))
        let (big, bigDecoded) = try step(1280, 720)
        #expect(big.isKeyframe && pair.bytesSayKeyframe(big.data))
        #expect(bigDecoded.width == 1280 && bigDecoded.height == 720)
    }

    @Test(arguments: Pair.allCases)
    func corruptInputThrowsAndRecoversAtKeyframe(_ pair: Pair) throws {
        let encoder = try pair.encoder(VideoEncoderSettings(width: width, height: height, bitrate: 1_000_000))
        let decoder = try pair.decoder()
        var frames: [(VideoFrame, EncodedFrame)] = []
        for i in 0..<20 {
            let source = SyntheticVideo.frame(i, width: width, height: height)
            let encoded = try #require(try encoder.encode(source, rtpTimestamp: SyntheticVideo.rtpTimestamp(i), forceKeyframe: i == 12))
            frames.append((source, encoded))
        }
        for i in 0..<4 { #expect(try decoder.decode(frames[i].1) != nil) }

        // Truncated delta frame.
        var truncated = frames[4].1
        truncated.data = Array(truncated.data.prefix(truncated.data.count / 3))
        #expect(throws: MediaError.self) { try decoder.decode(truncated) }
        // Delta frames after the damage are held back until a keyframe.
        for i in 5..<12 { #expect(try decoder.decode(frames[i].1) == nil, "frame \(i)") }
        let recovered = try #require(try decoder.decode(frames[12].1))
        #expect(psnr(frames[12].0.buffer, recovered.buffer) >= 30)
        #expect(try decoder.decode(frames[13].1) != nil)

        // Garbage shaped like the codec's frames, then nothing that even looks like a frame.
        var garbage = frames[14].1
        var seed: UInt32 = 12345
        let noise = (0..<600).map { _ -> UInt8 in seed = seed &* 1_103_515_245 &+ 12345; return UInt8(truncatingIfNeeded: seed >> 16) }
        garbage.data = pair.codec == .h264 ? [0, 0, 0, 1, 0x41] + noise : [0x31, 0x20, 0x01] + noise
        #expect(throws: MediaError.self) { try decoder.decode(garbage) }
        var empty = frames[14].1
        empty.data = []
        #expect(throws: MediaError.self) { try decoder.decode(empty) }
        if pair.codec == .h264 {
            var noStartCode = frames[14].1
            noStartCode.data = Array(noise.prefix(100)).map { $0 | 0x80 }
            #expect(throws: MediaError.self) { try decoder.decode(noStartCode) }
        }

        // A truncated keyframe throws too; the next keyframe decodes.
        let key1 = try #require(try encoder.encode(SyntheticVideo.frame(20, width: width, height: height), rtpTimestamp: 99, forceKeyframe: true))
        var cut = key1
        cut.data = Array(key1.data.prefix(key1.data.count / 2))
        #expect(throws: MediaError.self) { try decoder.decode(cut) }
        let source = SyntheticVideo.frame(21, width: width, height: height)
        let key2 = try #require(try encoder.encode(source, rtpTimestamp: 100, forceKeyframe: true))
        let out = try #require(try decoder.decode(key2))
        #expect(psnr(source.buffer, out.buffer) >= 30)
    }

    @Test func h264StreamIsConstrainedBaselineWithFittingLevel() throws {
        for (w, h, level) in [(640, 360, 30), (1280, 720, 31), (320, 180, 20)] as [(Int, Int, UInt8)] {
            let encoder = try OpenH264Encoder(settings: VideoEncoderSettings(width: w, height: h, bitrate: 1_000_000),
                                              options: .init(frameSkip: false))
            let encoded = try #require(try encoder.encode(SyntheticVideo.frame(0, width: w, height: h), rtpTimestamp: 0, forceKeyframe: false))
            let spsBytes = try #require(annexBSPS(encoded.data))
            #expect(spsBytes[1] == 66, "profile_idc")
            #expect(spsBytes[2] & 0x40 != 0, "constraint_set1_flag (constrained baseline)")
            #expect(spsBytes[3] == level, "level_idc for \(w)x\(h)")
            let sps = try #require(try H264Bitstream.firstSPS(encoded.data))
            #expect(sps.isConstrainedBaseline)
            #expect(sps.width == w && sps.height == h)
            #expect(sps.profileLevelID.hasPrefix("42"))
            // No B-frames in baseline: every later frame is a P slice (type 1) on its own.
            let next = try #require(try encoder.encode(SyntheticVideo.frame(1, width: w, height: h), rtpTimestamp: 3000, forceKeyframe: false))
            #expect(annexBNalTypes(next.data) == [1])
        }
    }

    @Test func h264SizeLimitedSlicesFitPackets() throws {
        let encoder = try OpenH264Encoder(settings: VideoEncoderSettings(width: width, height: height, bitrate: 1_000_000),
                                          options: .init(frameSkip: false, maxNalSize: 1100))
        let decoder = try FFmpegH264Decoder()
        for i in 0..<10 {
            let source = SyntheticVideo.frame(i, width: width, height: height)
            let encoded = try #require(try encoder.encode(source, rtpTimestamp: SyntheticVideo.rtpTimestamp(i), forceKeyframe: false))
            for r in H264Bitstream.nalUnitRanges(encoded.data) { #expect(r.count <= 1100) }
            let decoded = try #require(try decoder.decode(encoded))
            #expect(psnr(source.buffer, decoded.buffer) >= 30)
        }
    }

    @Test(arguments: [VideoCodecType.h264, .vp8], [PixelFormat.nv12VideoRange, .nv12FullRange, .bgra])
    func encodersConvertOtherPixelFormats(_ codec: VideoCodecType, _ format: PixelFormat) throws {
        let encoder = try VideoEncoderFactory().makeEncoder(codec)
        let decoder = try VideoDecoderFactory().makeDecoder(codec)
        for i in 0..<3 {
            let source = SyntheticVideo.frame(i, width: width, height: height)
            let converted = VideoFrame(buffer: source.buffer.converted(to: format), timestampNs: source.timestampNs)
            let encoded = try #require(try encoder.encode(converted, rtpTimestamp: UInt32(i * 3000), forceKeyframe: false))
            let decoded = try #require(try decoder.decode(encoded))
            // BGRA round trips through RGB and loses a little colour; the picture must still match.
            #expect(psnr(source.buffer, decoded.buffer) >= (format == .bgra ? 28 : 30), "\(codec) from \(format)")
        }
    }

    @Test func rejectsBadSettingsAndSizes() throws {
        #expect(throws: MediaError.self) { try OpenH264Encoder(settings: VideoEncoderSettings(width: 640, height: 360, bitrate: 0)) }
        #expect(throws: MediaError.self) { try VP8Encoder(settings: VideoEncoderSettings(width: 640, height: 360, framerate: 0)) }
        let h264 = try OpenH264Encoder(settings: VideoEncoderSettings(width: 0, height: 0))
        let odd = VideoFrame(buffer: VideoFrameBuffer(format: .i420, width: 641, height: 361), timestampNs: 0)
        #expect(throws: MediaError.self) { try h264.encode(odd, rtpTimestamp: 0, forceKeyframe: false) }
        // VP8 takes odd sizes.
        let vp8 = try VP8Encoder(settings: VideoEncoderSettings(width: 0, height: 0))
        let encoded = try #require(try vp8.encode(odd, rtpTimestamp: 0, forceKeyframe: false))
        let decoded = try #require(try VP8Decoder().decode(encoded))
        #expect(decoded.width == 641 && decoded.height == 361)
    }

    @Test func factoriesListCodecsInPreferenceOrder() throws {
        let encoders = VideoEncoderFactory()
        let decoders = VideoDecoderFactory()
        #expect(encoders.supportedCodecs == [.h264, .vp8])
        #expect(decoders.supportedCodecs == [.h264, .vp8])
        #expect(try encoders.makeEncoder(.h264) is OpenH264Encoder)
        #expect(try encoders.makeEncoder(.vp8) is VP8Encoder)
        #expect(try decoders.makeDecoder(.h264) is FFmpegH264Decoder)
        #expect(try VideoDecoderFactory(h264Implementation: .openH264).makeDecoder(.h264) is OpenH264Decoder)
        #expect(try decoders.makeDecoder(.vp8) is VP8Decoder)
        let vp8Only = VideoEncoderFactory(supportedCodecs: [.vp8])
        #expect(throws: MediaError.self) { try vp8Only.makeEncoder(.h264) }
        #expect(throws: MediaError.self) { try VideoDecoderFactory(supportedCodecs: [.h264]).makeDecoder(.vp8) }
        let configured = try encoders.makeEncoder(.h264, settings: VideoEncoderSettings(width: 320, height: 180, bitrate: 300_000))
        #expect(configured.settings.bitrate == 300_000)
    }

    @Test func levelTable() {
        #expect(OpenH264Encoder.level(width: 1280, height: 720, framerate: 30, bitrate: 1_500_000).rawValue == 31)
        #expect(OpenH264Encoder.level(width: 1920, height: 1080, framerate: 30, bitrate: 4_000_000).rawValue == 40)
        #expect(OpenH264Encoder.level(width: 640, height: 480, framerate: 30, bitrate: 1_000_000).rawValue == 30)
    }
}
