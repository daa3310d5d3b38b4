import Camera
import Testing

@Suite struct FormatChooserTests {
    static func f(_ w: Int, _ h: Int, _ p: CameraPixelFormat = .nv12, _ rates: [FrameRateRange] = [FrameRateRange(min: 1, max: 30)]) -> CaptureFormat {
        CaptureFormat(width: w, height: h, pixelFormat: p, frameRateRanges: rates)
    }
    let phone = [f(1920, 1080), f(1280, 720), f(640, 480), f(352, 288)]

    @Test func nearestSizeBySumOfDifferences() throws {
        #expect(try FormatChooser.choose(from: phone, width: 1280, height: 700, fps: 30).format == Self.f(1280, 720))
        // 800x600: 640x480 is 280 away, 1280x720 is 600 away.
        let c = try FormatChooser.choose(from: phone, width: 800, height: 600, fps: 30)
        #expect(c.format == Self.f(640, 480))
        #expect(c.warnings == ["asked for 800x600, the device's nearest size is 640x480"])
        #expect(try FormatChooser.choose(from: phone, width: 1280, height: 720, fps: 30).warnings.isEmpty)
    }

    @Test func portraitRequestMatchesTheTurnedSensorSize() throws {
        let c = try FormatChooser.choose(from: phone, width: 720, height: 1280, fps: 30)
        #expect(c.format.width == 1280 && c.format.height == 720)
        #expect(c.warnings.isEmpty)
    }

    @Test func tiesGoToHigherFrameRateThenCheaperPixelFormat() throws {
        let webcam = [Self.f(1280, 720, .yuyv, [FrameRateRange(10)]), Self.f(1280, 720, .mjpeg, [FrameRateRange(30)])]
        #expect(try FormatChooser.choose(from: webcam, width: 1280, height: 720, fps: 30).format.pixelFormat == .mjpeg)
        let same = [Self.f(640, 480, .mjpeg), Self.f(640, 480, .bgra), Self.f(640, 480, .yuyv)]
        #expect(try FormatChooser.choose(from: same, width: 640, height: 480, fps: 30).format.pixelFormat == .yuyv)
    }

    @Test func highestRateNotAboveTheRequestCappedAt30() throws {
        let discrete = [Self.f(640, 480, .yuyv, [5, 10, 15, 30].map { FrameRateRange($0) })]
        let c = try FormatChooser.choose(from: discrete, width: 640, height: 480, fps: 20)
        #expect(c.fps == 15)
        #expect(c.warnings == ["asked for 20 fps, capturing at 15 fps"])
        let fast = [Self.f(1280, 720, .nv12, [FrameRateRange(min: 1, max: 60)])]
        let capped = try FormatChooser.choose(from: fast, width: 1280, height: 720, fps: 60)
        #expect(capped.fps == 30)
        #expect(capped.warnings == ["asked for 60 fps, capturing at 30 fps (capped at 30)"])
        #expect(try FormatChooser.choose(from: fast, width: 1280, height: 720, fps: 60, maxFrameRate: 60).fps == 60)
        #expect(try FormatChooser.choose(from: fast, width: 1280, height: 720, fps: 24).fps == 24)
        let slowest = [Self.f(640, 480, .yuyv, [FrameRateRange(15), FrameRateRange(30)])]
        let below = try FormatChooser.choose(from: slowest, width: 640, height: 480, fps: 5)
        #expect(below.fps == 15)
    }

    @Test func badRequestsAreErrors() {
        #expect(throws: CameraError(.invalidArgument, "size 0x720 is not a picture size")) {
            try FormatChooser.choose(from: phone, width: 0, height: 720, fps: 30)
        }
        #expect(throws: CameraError(.invalidArgument, "frame rate nan must be above 0")) {
            try FormatChooser.choose(from: phone, width: 640, height: 480, fps: .nan)
        }
        #expect(throws: CameraError(.unsupported, "the device offers no formats we can use")) {
            try FormatChooser.choose(from: [], width: 640, height: 480, fps: 30)
        }
    }

    @Test func presetFallbackChain() throws {
        // The reference app's case: no 1080p → 720p.
        let no1080 = [Self.f(1280, 720), Self.f(640, 480)]
        let c = try FormatChooser.choosePreset(from: no1080, width: 1920, height: 1080, fps: 30)
        #expect(c.format == Self.f(1280, 720))
        #expect(c.warnings == ["asked for 1920x1080, the device's nearest size is 1280x720"])
        // Exact size wins.
        #expect(try FormatChooser.choosePreset(from: phone, width: 352, height: 288, fps: 30).format == Self.f(352, 288))
        // Never a larger preset than asked: 640x480 missing → 352x288, not 1280x720.
        let gap = [Self.f(1280, 720), Self.f(352, 288)]
        #expect(try FormatChooser.choosePreset(from: gap, width: 640, height: 480, fps: 30).format == Self.f(352, 288))
        // Nothing in the chain fits → the smallest size the device has.
        let big = [Self.f(3840, 2160), Self.f(1280, 720)]
        #expect(try FormatChooser.choosePreset(from: big, width: 640, height: 480, fps: 30).format == Self.f(1280, 720))
    }

    @Test func availableResolutionsSortedOnce() {
        let a = CaptureDevice(id: "a", name: "A", position: .front, formats: [Self.f(1280, 720), Self.f(640, 480), Self.f(640, 480, .bgra)], capabilities: CameraCapabilities())
        let b = CaptureDevice(id: "b", name: "B", position: .back, formats: [Self.f(1920, 1080), Self.f(640, 360)], capabilities: CameraCapabilities())
        #expect(FormatChooser.availableResolutions([a, b]) == ["640x360", "640x480", "1280x720", "1920x1080"])
    }

    @Test func formatBestFrameRate() {
        let f = Self.f(640, 480, .yuyv, [FrameRateRange(min: 5, max: 15), FrameRateRange(30)])
        #expect(f.bestFrameRate(atMost: 12) == 12)
        #expect(f.bestFrameRate(atMost: 29) == 15)
        #expect(f.bestFrameRate(atMost: 30) == 30)
        #expect(f.bestFrameRate(atMost: 4) == nil)
        #expect(f.description == "640x480 yuyv @ 5-15,30 fps")
    }
}
