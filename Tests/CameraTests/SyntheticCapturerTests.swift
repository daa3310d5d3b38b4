import Camera
import Media
import Render
import Testing

// The capturer on the synthetic camera, end to end on real streams: controls measured on photos,
// switching, photos while streaming, an unplugged camera coming back, the exposure policy.

private func photoMeans(_ frame: VideoFrame) -> (luma: Double, r: Double, b: Double) {
    let rgb = PNGEncoder.uprightRGB(frame).rgb
    var r = 0, g = 0, b = 0
    var i = 0
    while i + 2 < rgb.count {
        r += Int(rgb[i]); g += Int(rgb[i + 1]); b += Int(rgb[i + 2])
        i += 48   // every 16th pixel is plenty for a mean
    }
    let n = Double(rgb.count / 48)
    return ((0.299 * Double(r) + 0.587 * Double(g) + 0.114 * Double(b)) / n, Double(r) / n, Double(b) / n)
}

@Suite(.serialized) struct SyntheticCapturerTests {
    func start(_ position: CameraPosition, _ backend: SyntheticCameraBackend = SyntheticCameraBackend(),
               width: Int = 352, height: Int = 288) async throws -> (SyntheticCameraBackend, CameraCapturer, FrameSink) {
        let sink = FrameSink()
        let capturer = CameraCapturer(backend: backend, delegate: sink, restartInterval: .milliseconds(5))
        try await capturer.startCapture(device: capturer.device(position: position), width: width, height: height, fps: 30)
        #expect(await sink.more(1))
        return (backend, capturer, sink)
    }

    @Test func photosGetBrighterWithBiasAndIsoAndWarmerWithWhiteBalance() async throws {
        let (_, capturer, _) = try await start(.front)
        var lumas: [Double] = []
        for bias in [-2.0, -1, 0, 1, 2] {
            try await capturer.set(.exposureBias(bias))
            lumas.append(photoMeans(try await capturer.takePhoto()).luma)
        }
        #expect(zip(lumas, lumas.dropFirst()).allSatisfy { $0 < $1 }, "luma by bias: \(lumas)")
        lumas = []
        for iso in [50.0, 100, 200, 400] {
            try await capturer.set(.iso(iso))
            lumas.append(photoMeans(try await capturer.takePhoto()).luma)
        }
        #expect(zip(lumas, lumas.dropFirst()).allSatisfy { $0 < $1 }, "luma by ISO: \(lumas)")
        var ratios: [Double] = []
        for k in [3000.0, 4500, 6500] {
            try await capturer.set(.whiteBalanceTemperature(k))
            let m = photoMeans(try await capturer.takePhoto())
            ratios.append(m.r / m.b)
        }
        #expect(zip(ratios, ratios.dropFirst()).allSatisfy { $0 < $1 }, "R/B by white balance: \(ratios)")
        await capturer.stopCapture()
    }

    @Test func torchLightsTheScene() async throws {
        let dim = SyntheticCameraBackend()
        dim.sceneIlluminance = 20   // a dim room, where a torch matters
        let (_, capturer, _) = try await start(.back, dim)
        try await capturer.set(.iso(400))
        try await capturer.set(.exposureDuration(1.0 / 30))
        let dark = photoMeans(try await capturer.takePhoto()).luma
        try await capturer.set(.torch(.on))
        let lit = photoMeans(try await capturer.takePhoto()).luma
        #expect(lit > dark + 5, "torch: \(dark) → \(lit)")
        await capturer.stopCapture()
    }

    @Test func photoIsFullResolutionAndTheStreamKeepsItsRate() async throws {
        let (_, capturer, sink) = try await start(.back)
        let before = sink.count
        let photo = try await capturer.takePhoto()
        #expect(photo.width == 3840 && photo.height == 2160)
        #expect(await sink.more(5))
        #expect(sink.count > before)
        #expect(sink.all.suffix(5).allSatisfy { $0.width == 352 && $0.height == 288 })
        await capturer.stopCapture()
    }

    @Test func switchingShowsTheOtherCamerasPicture() async throws {
        let (_, capturer, sink) = try await start(.front)
        #expect(sink.all.last.flatMap { SyntheticScene.identify($0) } == .front)
        try await capturer.switchCamera(position: .back)
        #expect(await sink.more(3))
        #expect(sink.all.last.flatMap { SyntheticScene.identify($0) } == .back)
        // A different size on the same capturer and delegate: frames follow.
        try await capturer.startCapture(device: SyntheticDevices.back, width: 640, height: 480, fps: 30)
        #expect(await sink.more(3))
        #expect(sink.all.last?.width == 640 && sink.all.last?.height == 480)
        await capturer.stopCapture()
    }

    @Test func unpluggedCameraComesBack() async throws {
        let (backend, capturer, sink) = try await start(.front)
        let events = capturer.events()
        backend.disconnect(SyntheticDevices.frontID)
        let e = await waitFor(events) { if case .interrupted = $0 { return true } else { return false } }
        guard case .interrupted(let id, let error)? = e else { Issue.record("no interruption"); return }
        #expect(id == SyntheticDevices.frontID && error.kind == .deviceLost)
        backend.reconnect(SyntheticDevices.frontID)
        #expect(await waitFor(events) { if case .resumed = $0 { return true } else { return false } } == .resumed(device: SyntheticDevices.frontID))
        #expect(await sink.more(3))
        await capturer.stopCapture()
    }

    @Test func deniedPermissionIsAClearError() async throws {
        let backend = SyntheticCameraBackend()
        backend.denyPermission(SyntheticDevices.backID)
        let capturer = CameraCapturer(backend: backend)
        do {
            try await capturer.startCapture(device: SyntheticDevices.back, width: 640, height: 480, fps: 30)
            Issue.record("start should fail")
        } catch {
            #expect(error.kind == .permissionDenied && error.device == SyntheticDevices.backID)
            #expect(error.description.contains("Synthetic Back Camera"))
        }
    }

    @Test func exposurePolicyRaisesGainInADarkRoom() async throws {
        let backend = SyntheticCameraBackend()
        backend.sceneIlluminance = 2   // a dark room
        let (_, capturer, _) = try await start(.back, backend)
        let events = capturer.events()
        await capturer.setExposurePolicy(.reference)
        let e = await waitFor(events) { if case .exposurePolicy = $0 { return true } else { return false } }
        guard case .exposurePolicy(_, let bv, let iso, let duration, let fps)? = e else { Issue.record("no policy event"); return }
        #expect(bv < 0, "a dark room has negative brightness, got \(bv)")
        #expect(iso > 2000 && duration > 1.0 / 41 && fps <= 30)
        let controls = await capturer.controls
        #expect(controls.exposureMode == .custom && controls.iso == iso)
        await capturer.stopCapture()
    }
}
