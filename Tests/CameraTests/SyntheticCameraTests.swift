import Camera
import Capture
import Media
import Testing

// Synthetic camera: every control measured on single frames rendered by the pure scene function,
// plus one real stream for disconnect handling.

private let front = SyntheticDevices.front
private let back = SyntheticDevices.back

private func render(_ device: CaptureDevice, _ controls: CameraControlState = CameraControlState(),
                    scene: SyntheticScene = SyntheticScene(), orientation: DeviceOrientation = .unknown,
                    format: PixelFormat = .i420, width: Int = 320, height: Int = 180, frame: UInt64 = 0) -> VideoFrame {
    scene.render(device: device, width: width, height: height, format: format, controls: controls,
                 orientation: orientation, timestampNs: 0, frameNumber: frame)
}

private func meanLuma(_ frame: VideoFrame) -> Double {
    let b = frame.buffer.converted(to: .i420)
    var sum = 0
    for y in 0..<b.height { for x in 0..<b.width { sum += Int(b.luma(x: x, y: y)) } }
    return Double(sum) / Double(b.width * b.height)
}

/// Mean (R, G, B) of a BGRA frame over a normalised rectangle.
private func meanRGB(_ frame: VideoFrame, u0: Double, v0: Double, u1: Double, v1: Double) -> (r: Double, g: Double, b: Double) {
    let b = frame.buffer
    let x0 = Int(u0 * Double(b.width)), x1 = Int(u1 * Double(b.width))
    let y0 = Int(v0 * Double(b.height)), y1 = Int(v1 * Double(b.height))
    var r = 0, g = 0, bl = 0
    for y in y0..<y1 {
        for x in x0..<x1 {
            let p = b.planePointer(0) + y * b.strides[0] + 4 * x
            bl += Int(p[0]); g += Int(p[1]); r += Int(p[2])
        }
    }
    let n = Double((x1 - x0) * (y1 - y0))
    return (Double(r) / n, Double(g) / n, Double(bl) / n)
}

/// Sum of squared horizontal and vertical luma differences over the central third.
private func sharpness(_ frame: VideoFrame) -> Double {
    let b = frame.buffer.converted(to: .i420)
    var e = 0.0
    for y in (b.height / 3)..<(2 * b.height / 3) {
        for x in (b.width / 3)..<(2 * b.width / 3) {
            let c = Double(b.luma(x: x, y: y))
            let dx = c - Double(b.luma(x: x + 1, y: y)), dy = c - Double(b.luma(x: x, y: y + 1))
            e += dx * dx + dy * dy
        }
    }
    return e
}

/// Normalised centroid of strongly magenta (or cyan) chroma in an I420 picture.
private func blockCentroid(_ buffer: VideoFrameBuffer, magenta: Bool) -> (u: Double, v: Double)? {
    let b = buffer.converted(to: .i420)
    let cw = (b.width + 1) / 2, ch = (b.height + 1) / 2
    var sx = 0.0, sy = 0.0, n = 0.0
    for y in 0..<ch {
        for x in 0..<cw {
            let u = Int(b.planePointer(1)[y * b.strides[1] + x]), v = Int(b.planePointer(2)[y * b.strides[2] + x])
            let hit = magenta ? (u > 150 && v > 160) : (u > 140 && v < 90)
            if hit { sx += Double(x) + 0.5; sy += Double(y) + 0.5; n += 1 }
        }
    }
    guard n > 0 else { return nil }
    return (sx / n / Double(cw), sy / n / Double(ch))
}

private func custom(iso: Double, duration: Double) -> CameraControlState {
    var c = CameraControlState()
    c.record(.iso(iso))
    c.record(.exposureDuration(duration))
    return c
}

private func strictlyRising(_ values: [Double]) -> Bool {
    zip(values, values.dropFirst()).allSatisfy { $0 < $1 }
}

@Suite struct SyntheticSceneTests {
    @Test func devicesLookLikePhoneCameras() throws {
        let devices = try SyntheticCameraBackend().devices()
        #expect(devices.map(\.id) == ["synthetic:front", "synthetic:back"])
        #expect(devices.map(\.position) == [.front, .back])
        #expect(!front.capabilities.hasTorch && back.capabilities.hasTorch)
        #expect(back.formats.contains { $0.width == 3840 && $0.height == 2160 })
        #expect(back.formats.contains { $0.width == 1280 && $0.height == 720 && $0.maxFrameRate == 60 })
        #expect(!front.formats.contains { $0.width == 3840 })
        #expect(front.capabilities.ranges[.zoom]?.max == 4 && back.capabilities.ranges[.zoom]?.max == 16)
        #expect(front.capabilities.ranges[.iso]?.min == 34 && back.capabilities.ranges[.iso]?.max == 3072)
    }

    @Test func lumaRisesWithExposureBias() {
        let means = [-2.0, -1, 0, 1, 2].map { bias -> Double in
            var c = CameraControlState()
            c.record(.exposureBias(bias))
            return meanLuma(render(front, c))
        }
        #expect(strictlyRising(means), "\(means)")
        #expect(means[2] > 70 && means[2] < 150, "auto exposure at 0 EV is mid-grey-ish: \(means[2])")
    }

    @Test func lumaRisesWithISOAndDurationInCustomExposure() {
        let byISO = [34.0, 50, 100, 200, 400].map { meanLuma(render(back, custom(iso: $0, duration: 1.0 / 200))) }
        #expect(strictlyRising(byISO), "\(byISO)")
        let durations: [Double] = [1.0 / 2000, 1.0 / 1000, 1.0 / 500, 1.0 / 250, 1.0 / 125]
        let byDuration = durations.map { meanLuma(render(back, custom(iso: 100, duration: $0))) }
        #expect(strictlyRising(byDuration), "\(byDuration)")
        // Far past full scale the picture saturates instead of wrapping around.
        let blown = meanLuma(render(back, custom(iso: 3072, duration: 1.0 / 3)))
        #expect(blown > 225 && blown <= 235)
    }

    @Test func redBlueRatioOfGreyRisesWithWhiteBalanceTemperature() {
        let ratios = [3000.0, 4500, 6000, 8000].map { k -> Double in
            var c = CameraControlState()
            c.record(.whiteBalanceTemperature(k))
            let grey = meanRGB(render(front, c, format: .bgra), u0: 0.78, v0: 0.66, u1: 0.90, v1: 0.84)
            return grey.r / grey.b
        }
        #expect(strictlyRising(ratios), "\(ratios)")
        // Continuous auto matches the light: grey stays grey, whatever the light's colour.
        for light in [3000.0, 4500, 7000] {
            let grey = meanRGB(render(front, scene: SyntheticScene(illuminantTemperature: light), format: .bgra),
                               u0: 0.78, v0: 0.66, u1: 0.90, v1: 0.84)
            #expect(abs(grey.r - grey.b) <= 3 && abs(grey.g - grey.b) <= 3, "\(light) K: \(grey)")
        }
    }

    @Test func zoomTwoShowsTheCentreObjectTwiceAsBig() {
        // The face's widest row is the picture's centre row; measure its skin-coloured run.
        func faceWidth(_ zoom: Double) -> Int {
            var c = custom(iso: 100, duration: 1.0 / 90)
            c.record(.zoom(zoom))
            let f = render(front, c, format: .bgra, width: 640, height: 360)
            let y = f.height / 2, mid = f.width / 2
            func skin(_ x: Int) -> Bool {
                let p = f.buffer.planePointer(0) + y * f.buffer.strides[0] + 4 * x
                return p[2] > 120 && Int(p[2]) - Int(p[0]) > 40 && p[1] > p[0]
            }
            var l = mid, r = mid
            while l > 0 && skin(l - 1) { l -= 1 }
            while r < f.width - 1 && skin(r + 1) { r += 1 }
            return r - l + 1
        }
        let w1 = faceWidth(1), w2 = faceWidth(2)
        #expect(w1 > 100 && w1 < 140, "face width at 1x: \(w1)")
        #expect(abs(Double(w2) / Double(w1) - 2) < 0.06, "1x \(w1) px, 2x \(w2) px")
    }

    @Test func focusAwayFromTheSubjectBlursAndAutoFocusRestores() {
        var c = CameraControlState()
        let sharp = sharpness(render(back, c))
        c.record(.focusPosition(0))
        let near = sharpness(render(back, c))
        c.record(.focusPosition(1))
        let far = sharpness(render(back, c))
        c.record(.focusPosition(SyntheticScene.subjectLensPosition))
        let onSubject = sharpness(render(back, c))
        c.record(.focusMode(.continuousAuto))
        let restored = sharpness(render(back, c))
        #expect(near < sharp * 0.5 && far < sharp * 0.5, "sharp \(sharp), near \(near), far \(far)")
        #expect(onSubject == sharp && restored == sharp)
    }

    @Test func torchRaisesBrightness() {
        // A dim room (100 lux) shot with fixed exposure: the torch adds light, most on the chart.
        let dim = SyntheticScene(illuminance: 100)
        var c = custom(iso: 200, duration: 1.0 / 60)
        let off = meanLuma(render(back, c, scene: dim))
        c.record(.torch(.on))
        let on = meanLuma(render(back, c, scene: dim))
        #expect(on > off + 10, "custom exposure: off \(off), on \(on)")

        // Auto exposure in a dark room runs out of ISO and shutter; the torch then brightens it.
        let dark = SyntheticScene(illuminance: 0.3)
        var a = CameraControlState()
        let autoOff = meanLuma(render(back, a, scene: dark))
        a.record(.torch(.level(1)))
        let autoOn = meanLuma(render(back, a, scene: dark))
        #expect(autoOn > autoOff + 10, "dark room, auto: off \(autoOff), on \(autoOn)")

        // The front camera has no torch: a torch setting changes nothing there.
        var f = CameraControlState()
        let frontOff = meanLuma(render(front, f))
        f.torch = .on
        #expect(meanLuma(render(front, f)) == frontOff)
    }

    @Test func meteringOnABrightRegionDarkensThePicture() {
        var bright = CameraControlState(), dark = CameraControlState()
        bright.record(.exposurePoint(NormalizedPoint(x: 0.84, y: 0.28)))   // window
        dark.record(.exposurePoint(NormalizedPoint(x: 0.17, y: 0.80)))     // sofa
        #expect(meanLuma(render(front, bright)) + 10 < meanLuma(render(front, dark)))

        // The point is in sensor coordinates: held in portrait, the window's upright place
        // (0.84, 0.28) is sensor (0.28, 1 − 0.84).
        bright.record(.exposurePoint(NormalizedPoint(x: 0.28, y: 0.16)))
        dark.record(.exposurePoint(NormalizedPoint(x: 0.80, y: 0.83)))
        #expect(meanLuma(render(front, bright, orientation: .portrait)) + 10
                < meanLuma(render(front, dark, orientation: .portrait)))
    }

    @Test func lockedExposureKeepsTheAutoValues() {
        let scene = SyntheticScene()
        var c = CameraControlState()
        c.record(.exposureBias(1))
        let auto = scene.exposure(device: back, width: 320, height: 180, controls: c)
        #expect(auto.duration <= 1.0 / 30 + 1e-9 && auto.iso >= 32)
        var locked = c
        locked.exposureMode = .locked
        locked.iso = auto.iso
        locked.exposureDuration = auto.duration
        #expect(meanLuma(render(back, locked)) == meanLuma(render(back, c)))
    }

    @Test func sensorBufferTurnedByTheFrameRotationIsUpright() throws {
        for (device, magenta) in [(front, true), (back, false)] {
            let upright = try #require(blockCentroid(render(device).buffer, magenta: magenta))
            #expect(upright.u < 0.3 && upright.v > 0.2 && upright.v < 0.45, "block at the upper left: \(upright)")
            for orientation in [DeviceOrientation.portrait, .portraitUpsideDown, .landscapeLeft, .landscapeRight] {
                let rotation = orientation.frameRotation(for: device.position) ?? .r0
                let sensor = render(device, orientation: orientation)
                #expect(sensor.width == 320 && sensor.height == 180)
                let turned = VideoFrame(buffer: sensor.buffer, rotation: rotation, timestampNs: 0).applyingRotation()
                let c = try #require(blockCentroid(turned.buffer, magenta: magenta))
                #expect(abs(c.u - upright.u) < 0.03 && abs(c.v - upright.v) < 0.03,
                        "\(device.position) \(orientation): \(c) vs \(upright)")
            }
        }
    }

    @Test func frontAndBackAreTellApartByTheirColour() {
        let f = render(front), b = render(back)
        #expect(SyntheticScene.identify(f) == .front)
        #expect(SyntheticScene.identify(b) == .back)
        // Still true after the capturer mirrors and a receiver downscales.
        let small = VideoFrame(buffer: f.buffer.mirrored().scaled(width: 160, height: 90), timestampNs: 0)
        #expect(SyntheticScene.identify(small) == .front)
        #expect(SyntheticScene.identify(VideoFrame(buffer: .filledI420(width: 64, height: 64, y: 128, u: 128, v: 128),
                                                   timestampNs: 0)) == nil)
    }

    @Test func consecutiveFramesDifferAndFormatsAreHonoured() {
        let a = render(back, frame: 0), b = render(back, frame: 5)
        #expect(meanLuma(a) != meanLuma(b) || sharpness(a) != sharpness(b))
        #expect(render(back, format: .nv12VideoRange).format == .nv12VideoRange)
        #expect(render(back, format: .bgra).format == .bgra)
        #expect(abs(meanLuma(render(back, format: .nv12VideoRange)) - meanLuma(render(back))) < 1)
    }

    @Test func markerReadsBackAfterStamping() throws {
        let frame = render(back, width: 640, height: 360)
        SyntheticScene.stampMarker(into: frame.buffer, frameNumber: 1234, wallClockMs: 987_654_321)
        let read = try #require(TestPattern.read(frame))
        #expect(read.frameNumber == 1234 && read.wallClockMs == 987_654_321)
        #expect(SyntheticScene.identify(frame) == .back)
    }
}

/// Collects what a stream delivers, for `await`ing without sleeps.
private final class CollectingSink: CameraStreamSink {
    enum Event: Sendable {
        case frame(VideoFrame)
        case failure(CameraError)
    }
    let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    init() { (events, continuation) = AsyncStream.makeStream(of: Event.self, bufferingPolicy: .bufferingNewest(16)) }
    func cameraStream(didCapture frame: VideoFrame) { continuation.yield(.frame(frame)) }
    func cameraStream(didFail error: CameraError) { continuation.yield(.failure(error)) }
    func finish() { continuation.finish() }
}

@Suite struct SyntheticBackendTests {
    private func format(_ device: CaptureDevice, _ w: Int, _ h: Int) throws -> CaptureFormat {
        try #require(device.formats.first { $0.width == w && $0.height == h && $0.pixelFormat == .nv12 })
    }

    @Test func streamDeliversFramesThenFailsOnceWhenDisconnected() async throws {
        let backend = SyntheticCameraBackend()
        let sink = CollectingSink()
        let stream = try backend.open(back, format: try format(back, 352, 288), fps: 30,
                                      controls: CameraControlState(), sink: sink)
        #expect(try stream.apply(.zoom(2)) == .zoom(2))
        #expect(try stream.apply(.torch(.on)) == .torch(.on))
        #expect(try stream.setFrameRate(30) == 30)
        var iterator = sink.events.makeAsyncIterator()
        var timestamps: [Int64] = []
        while timestamps.count < 3 {
            guard case .frame(let f)? = await iterator.next() else { Issue.record("stream ended early"); return }
            #expect(f.width == 352 && f.height == 288 && f.format == .nv12VideoRange)
            timestamps.append(f.timestampNs)
        }
        #expect(strictlyRising(timestamps.map(Double.init)))

        backend.disconnect(back.id)
        var failure: CameraError?
        while failure == nil, let event = await iterator.next() {
            if case .failure(let e) = event { failure = e }
        }
        #expect(failure?.kind == .deviceLost && failure?.device == back.id)
        #expect(try backend.devices().map(\.id) == [front.id])
        stream.stop()
        stream.stop()
        sink.finish()
        var later = 0
        while let event = await iterator.next() { if case .failure = event { later += 1 } }
        #expect(later == 0, "the failure is reported once")

        #expect(throws: CameraError.self) {
            _ = try backend.open(back, format: try format(back, 352, 288), fps: 30, controls: CameraControlState(), sink: sink)
        }
        backend.reconnect(back.id)
        #expect(try backend.devices().count == 2)
    }

    @Test func deniedPermissionIsAClearError() throws {
        let backend = SyntheticCameraBackend()
        backend.denyPermission(front.id, true)
        do {
            _ = try backend.open(front, format: try format(front, 352, 288), fps: 30, controls: CameraControlState(),
                                 sink: CollectingSink())
            Issue.record("open succeeded without permission")
        } catch let error as CameraError {
            #expect(error.kind == .permissionDenied && error.device == front.id)
            #expect(error.message.contains("Synthetic Front Camera"))
        }
        backend.denyPermission(front.id, false)
        let stream = try backend.open(front, format: try format(front, 352, 288), fps: 30, controls: CameraControlState(),
                                      sink: CollectingSink())
        #expect(throws: CameraError.self) { _ = try stream.apply(.torch(.on)) }   // the front camera has none
        let photo = try #require(try stream.capturePhoto())
        #expect(photo.width == 1920 && photo.height == 1080)
        stream.stop()
        #expect(throws: CameraError.self) { _ = try stream.apply(.zoom(2)) }
    }
}
