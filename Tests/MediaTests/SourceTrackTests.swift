import Testing
@testable import Media

@Suite("VideoSource adaptation")
struct VideoSourceTests {
    static let frameNs: Int64 = 33_333_333

    /// Feeds `count` frames at 30 fps (with optional timestamp jitter) and returns what the sink got.
    static func run(_ source: VideoSource, buffer: VideoFrameBuffer, count: Int, firstIndex: Int = 0,
                    jitter: (Int) -> Int64 = { _ in 0 }) -> [VideoFrame] {
        let sink = CollectingRenderer()
        source.addSink(sink)
        for i in firstIndex..<(firstIndex + count) {
            source.deliverCapturedFrame(VideoFrame(buffer: buffer, timestampNs: Int64(i) * frameNs + jitter(i)))
        }
        source.removeSink(sink)
        return sink.frames
    }

    @Test func halfSizeHalfRate() {
        let source = VideoSource()
        source.adaptOutputFormat(width: 640, height: 360, fps: 15)
        let out = Self.run(source, buffer: Pictures.gradient(width: 1280, height: 720), count: 60)
        #expect(out.count == 30)
        #expect(out.allSatisfy { $0.width == 640 && $0.height == 360 })
        let gaps = zip(out.dropFirst(), out).map { $0.timestampNs - $1.timestampNs }
        #expect(gaps.allSatisfy { $0 == 2 * Self.frameNs }, "\(gaps)")
        #expect(source.stats.captured == 60 && source.stats.dropped == 30 && source.stats.delivered == 30)
    }

    @Test func rateIsEvenWithJitteryTimestamps() {
        let source = VideoSource()
        source.adaptOutputFormat(width: 1280, height: 720, fps: 15)
        // ±4 ms of capture jitter in a fixed pattern.
        let out = Self.run(source, buffer: Pictures.gradient(width: 64, height: 36), count: 90,
                           jitter: { Int64(($0 * 7) % 9 - 4) * 1_000_000 })
        #expect(out.count == 45)
        let gaps = zip(out.dropFirst(), out).map { Double($0.timestampNs - $1.timestampNs) / 1e6 }
        #expect(gaps.allSatisfy { abs($0 - 66.7) < 10 }, "\(gaps)")
    }

    @Test func twoThirdsRate() {
        let source = VideoSource()
        source.adaptOutputFormat(width: 0, height: 0, fps: 20)
        let out = Self.run(source, buffer: Pictures.gradient(width: 64, height: 36), count: 90)
        #expect(out.count == 60)
        #expect(out.allSatisfy { $0.width == 64 && $0.height == 36 })
    }

    @Test func fourThreeTargetCropsTheSides() {
        // Bright bands in the outer 150 columns of a 1280x720 picture: a 4:3 crop removes them.
        let src = Pictures.i420(width: 1280, height: 720, y: { x, _ in x < 150 || x >= 1130 ? 220 : 80 })
        let source = VideoSource()
        source.adaptOutputFormat(width: 640, height: 480, fps: 30)
        let out = Self.run(source, buffer: src, count: 3)
        #expect(out.count == 3)
        let frame = out[0].buffer
        #expect(frame.width == 640 && frame.height == 480)
        #expect(frame.luma(x: 0, y: 100) == 80 && frame.luma(x: 639, y: 400) == 80)
        let plan = VideoSource.adaptation(width: 1280, height: 720, request: VideoSize(width: 640, height: 480))
        #expect(plan.crop == PixelRect(x: 160, y: 0, width: 960, height: 720))
    }

    @Test func neverUpscales() {
        let small = Pictures.gradient(width: 640, height: 360)
        let source = VideoSource()
        source.adaptOutputFormat(width: 1280, height: 720, fps: 30)
        let out = Self.run(source, buffer: small, count: 2)
        #expect(out.count == 2 && out[0].buffer === small)
        source.adaptOutputFormat(width: 1920, height: 1440, fps: 30)   // 4:3, bigger than the frame
        let cropped = Self.run(source, buffer: small, count: 1)
        #expect(cropped[0].width == 480 && cropped[0].height == 360)
    }

    @Test func absurdRequestsDoNotTrap() {
        let plan = VideoSource.adaptation(width: 1280, height: 720, request: VideoSize(width: .max, height: .max))
        #expect(plan.output == VideoSize(width: 720, height: 720))   // square aspect, no upscale
        let none = VideoSource.adaptation(width: 1280, height: 720, request: VideoSize(width: -1, height: 5))
        #expect(none.output == VideoSize(width: 1280, height: 720))
    }

    @Test func portraitFramesKeepTheirOrientation() {
        let portrait = Pictures.gradient(width: 720, height: 1280)
        let source = VideoSource()
        source.adaptOutputFormat(width: 1280, height: 720, fps: 30)
        let same = Self.run(source, buffer: portrait, count: 1)
        #expect(same[0].width == 720 && same[0].height == 1280 && same[0].buffer === portrait)
        source.adaptOutputFormat(width: 640, height: 360, fps: 30)
        let smaller = Self.run(source, buffer: portrait, count: 1)
        #expect(smaller[0].width == 360 && smaller[0].height == 640)
    }

    @Test func changesMidStream() {
        let source = VideoSource()
        let buffer = Pictures.gradient(width: 1280, height: 720)
        source.adaptOutputFormat(width: 640, height: 360, fps: 30)
        let first = Self.run(source, buffer: buffer, count: 30)
        #expect(first.count == 30 && first.allSatisfy { $0.width == 640 })
        source.adaptOutputFormat(width: 320, height: 180, fps: 10)
        let second = Self.run(source, buffer: buffer, count: 30, firstIndex: 30)
        #expect(second.count == 10 && second.allSatisfy { $0.width == 320 && $0.height == 180 })
        source.adaptOutputFormat(width: 0, height: 0, fps: 0)
        let third = Self.run(source, buffer: buffer, count: 5, firstIndex: 60)
        #expect(third.count == 5 && third.allSatisfy { $0.buffer === buffer })
    }

    @Test func processorsRunBeforeAdaptation() {
        let chain = ProcessorChain([MirrorProcessor()])
        let source = VideoSource(processors: chain)
        source.adaptOutputFormat(width: 32, height: 24, fps: 30)
        let out = Self.run(source, buffer: Pictures.marked(), count: 1)
        #expect(out[0].width == 32 && out[0].buffer.luma(x: 29, y: 2) == 180)
        chain.append(ProcessorTests.DropAll())
        #expect(Self.run(source, buffer: Pictures.marked(), count: 3).isEmpty)
        #expect(source.stats.dropped == 3)
    }

    @Test func capturerDeliversThroughTheDelegate() {
        let source = VideoSource()
        let capturer = ManualVideoCapturer()
        capturer.delegate = source
        let sink = CollectingRenderer()
        source.addSink(sink)
        source.addSink(sink)   // once only
        capturer.emit(VideoFrame(buffer: Pictures.marked(), rotation: .r90, timestampNs: 1))
        #expect(sink.frames.count == 1 && sink.frames[0].rotation == .r90)
        source.removeSink(sink)
        capturer.emit(VideoFrame(buffer: Pictures.marked(), timestampNs: 2))
        #expect(sink.frames.count == 1)
    }

    @Test func frameRateGateRestartsAfterAJump() {
        var gate = FrameRateGate(fps: 10)
        let times: [Int64] = [0, 50_000_000, 100_000_000,
                              5_000_000_000,   // a pause: start over
                              5_033_000_000,
                              1_000,           // the clock went back: start over
                              .max]
        let passed = times.map { gate.shouldPass(timestampNs: $0) }
        #expect(passed == [true, false, true, true, false, true, true])
    }
}

@Suite("Tracks")
struct TrackTests {
    @Test func disabledVideoSendsBlackAtOneFPSAndResumesAtOnce() throws {
        let source = VideoSource()
        let track = VideoTrack(id: "cam", source: source)
        let renderer = CollectingRenderer()
        track.addRenderer(renderer)
        let picture = Pictures.gradient(width: 160, height: 90)
        var t: Int64 = 0
        func feed(_ n: Int) {
            for _ in 0..<n {
                source.deliverCapturedFrame(VideoFrame(buffer: picture, timestampNs: t))
                t += VideoSourceTests.frameNs
            }
        }
        feed(10)
        #expect(renderer.frames.count == 10)
        #expect(track.lastFrameSize == VideoSize(width: 160, height: 90))

        renderer.clear()
        track.isEnabled = false
        feed(90)   // three seconds
        let black = renderer.frames
        #expect(black.count == 3)
        for f in black {
            #expect(f.format == .i420 && f.width == 160 && f.height == 90)
            #expect(abs(f.buffer.meanLuma() - 16) < 0.5)
            #expect(f.buffer.chroma(x: 80, y: 40).u == 128)
        }
        let gaps = zip(black.dropFirst(), black).map { $0.timestampNs - $1.timestampNs }
        #expect(gaps.allSatisfy { $0 >= 1_000_000_000 })

        renderer.clear()
        track.isEnabled = true
        feed(1)
        #expect(renderer.frames.count == 1 && renderer.frames[0].buffer === picture)
        #expect(track.framesRendered == 10 + 3 + 1)
    }

    @Test func disablingAgainSendsBlackImmediately() {
        let source = VideoSource()
        let track = VideoTrack(id: "v", source: source)
        let renderer = CollectingRenderer()
        track.addRenderer(renderer)
        track.isEnabled = false
        source.deliverCapturedFrame(VideoFrame(buffer: Pictures.marked(), timestampNs: 0))
        track.isEnabled = true
        source.deliverCapturedFrame(VideoFrame(buffer: Pictures.marked(), timestampNs: 10))
        track.isEnabled = false
        source.deliverCapturedFrame(VideoFrame(buffer: Pictures.marked(), timestampNs: 20))
        #expect(renderer.frames.map { $0.buffer.meanLuma() < 17 } == [true, false, true])
        track.removeRenderer(renderer)
        source.deliverCapturedFrame(VideoFrame(buffer: Pictures.marked(), timestampNs: 2_000_000_000))
        #expect(renderer.frames.count == 3)
    }

    @Test func trackLetsGoOfItsSource() {
        let source = VideoSource()
        let sink = CollectingRenderer()
        do {
            let track = VideoTrack(id: "t", source: source)
            track.addRenderer(sink)
            source.deliverCapturedFrame(VideoFrame(buffer: Pictures.marked(), timestampNs: 0))
            #expect(track.kind == "video" && track.id == "t")
        }
        // The track is gone: its tap left the source and nothing reaches the old renderer.
        source.deliverCapturedFrame(VideoFrame(buffer: Pictures.marked(), timestampNs: 1))
        #expect(sink.frames.count == 1)
    }

    @Test func audioTrackSendsSilenceWhileDisabled() {
        let capturer = ManualAudioCapturer()
        let source = AudioSource(capturer: capturer)
        let track = AudioTrack(id: "mic", source: source)
        let sink = CollectingAudioRenderer()
        track.addSink(sink)
        let tone = AudioFrame(samples: .int16((0..<960).map { Int16($0 % 100) }), channels: 2, timestampNs: 10)
        capturer.emit(tone)
        track.isEnabled = false
        capturer.emit(tone)
        capturer.emit(AudioFrame(samples: .float([Float](repeating: 0.5, count: 480)), timestampNs: 20))
        track.isEnabled = true
        capturer.emit(tone)
        let got = sink.frames
        #expect(got.count == 4)
        #expect(got[0].int16Samples == tone.int16Samples)
        #expect(got[1].int16Samples.count == 960 && got[1].int16Samples.allSatisfy { $0 == 0 })
        #expect(got[1].channels == 2 && got[1].timestampNs == 10 && got[1].sampleRate == 48000)
        if case .float(let f) = got[2].samples { #expect(f.count == 480 && f.allSatisfy { $0 == 0 }) } else { Issue.record("not float") }
        #expect(got[3].int16Samples == tone.int16Samples)
        #expect(source.framesDelivered == 4)
        track.removeSink(sink)
        capturer.emit(tone)
        #expect(sink.frames.count == 4)
        #expect(track.kind == "audio")
    }

    @Test func audioSourceFansOut() {
        let source = AudioSource()
        let a = CollectingAudioRenderer(), b = CollectingAudioRenderer()
        source.addSink(a)
        source.addSink(b)
        source.deliver(.silence(timestampNs: 0))
        source.removeSink(a)
        source.deliver(.silence(timestampNs: 1))
        #expect(a.frames.count == 1 && b.frames.count == 2)
    }
}
