import Camera
import Media
import Testing

@Suite struct CameraCapturerTests {
    func started(_ position: CameraPosition = .front, width: Int = 1280, height: Int = 720) async throws -> (FakeBackend, CameraCapturer, FrameSink) {
        let backend = FakeBackend()
        let sink = FrameSink()
        let capturer = CameraCapturer(backend: backend, delegate: sink, restartInterval: .milliseconds(1))
        try await capturer.startCapture(device: capturer.device(position: position), width: width, height: height, fps: 30)
        return (backend, capturer, sink)
    }

    @Test func startIsIdempotentAndStopEndsFrames() async throws {
        let (backend, capturer, sink) = try await started()
        let format = try #require(await capturer.currentFormat)
        try await capturer.startCapture(device: FakeBackend.front, format: format.format, fps: format.fps)
        #expect(backend.opened == ["fake:front"])
        let stream = try #require(backend.lastStream)
        stream.push()
        #expect(sink.count == 1)
        await capturer.stopCapture()
        await capturer.stopCapture()
        #expect(stream.stopped)
        stream.push()
        #expect(sink.count == 1)
        #expect(await capturer.isRunning == false)
    }

    @Test func concurrentStartsAndStopsAreSerialized() async throws {
        let backend = FakeBackend()
        let capturer = CameraCapturer(backend: backend)
        let formats = [FakeBackend.front.formats[0], FakeBackend.front.formats[1]]
        await withTaskGroup(of: Void.self) { group in
            for i in 0 ..< 40 {
                group.addTask {
                    if i % 3 == 2 {
                        await capturer.stopCapture()
                    } else {
                        try? await capturer.startCapture(device: FakeBackend.front, format: formats[i % 2], fps: 30)
                    }
                }
            }
        }
        // Whatever the interleaving: at most one stream open at any time, and none after the last stop.
        let streams = backend.state.withLock { $0.streams }
        #expect(streams.dropLast().allSatisfy { $0.stopped })
        await capturer.stopCapture()
        #expect(streams.allSatisfy { $0.stopped })
        #expect(await capturer.isRunning == false)
    }

    @Test func unmetRequestRaisesWarnings() async throws {
        let backend = FakeBackend()
        let capturer = CameraCapturer(backend: backend)
        let events = capturer.events()
        let choice = try await capturer.startCapture(device: FakeBackend.back, width: 1280, height: 720, fps: 60)
        #expect(choice.fps == 30)
        let warning = await waitFor(events) { if case .warning = $0 { return true } else { return false } }
        #expect(warning == .warning("fake:back: asked for 60 fps, capturing at 30 fps (capped at 30)"))
    }

    @Test func framesConvertedMirroredAndRotated() async throws {
        let (backend, capturer, sink) = try await started(.front)
        let stream = try #require(backend.lastStream)
        // Front camera, landscape: mirrored left to right, no rotation.
        stream.push(y: 50, leftY: 200)
        var f = try #require(sink.all.last)
        #expect(f.format == .i420 && f.width == 1280 && f.height == 720 && f.rotation == .r0)
        #expect(f.buffer.luma(x: 1270, y: 360) == 200 && f.buffer.luma(x: 10, y: 360) == 50)
        // Portrait: rotation 90, and the viewer's left-right is the buffer's top-bottom.
        await capturer.setDeviceOrientation(.portrait)
        #expect(stream.state.withLock { $0.orientation } == .portrait)
        stream.push(y: 50, topY: 200)
        f = try #require(sink.all.last)
        #expect(f.rotation == .r90)
        #expect(f.buffer.luma(x: 640, y: 715) == 200 && f.buffer.luma(x: 640, y: 5) == 50)
        // Face up says nothing about "up": the rotation stays.
        await capturer.setDeviceOrientation(.faceUp)
        stream.push()
        #expect(sink.all.last?.rotation == .r90)
        await capturer.setDeviceOrientation(.landscapeLeft)
        #expect(capturer.frameRotation == .r180)
        // Mirroring off: pixels as captured.
        capturer.mirrorMode = .off
        stream.push(y: 50, leftY: 200)
        #expect(sink.all.last?.buffer.luma(x: 10, y: 360) == 200)
    }

    @Test func backCameraIsNotMirroredAndHasItsOwnRotation() async throws {
        let (backend, capturer, sink) = try await started(.back)
        await capturer.setDeviceOrientation(.landscapeLeft)
        backend.lastStream?.push(y: 50, leftY: 200)
        let f = try #require(sink.all.last)
        #expect(f.rotation == .r0 && f.buffer.luma(x: 10, y: 360) == 200)
        #expect(capturer.isMirrored == false)
    }

    @Test func controlsClampedAndReportedAsSet() async throws {
        let (backend, capturer, _) = try await started(.front)
        let events = capturer.events()
        #expect(try await capturer.set(.iso(10)) == .iso(34))
        #expect(try await capturer.set(.iso(9000)) == .iso(2176))
        // The driver rounds exposure time to 100 µs; the answer is what it set.
        #expect(try await capturer.set(.exposureDuration(0.01234)) == .exposureDuration(0.0123))
        #expect(try await capturer.set(.zoom(8)) == .zoom(4))
        #expect(await capturer.controls.exposureMode == .custom)
        let e = await waitFor(events) { if case .controlChanged(.iso) = $0 { return true } else { return false } }
        #expect(e == .controlChanged(.iso(34)))
        #expect(backend.lastStream?.applied.prefix(2) == [.iso(34), .iso(2176)])
        await #expect(throws: CameraError(.unsupported, device: "fake:front", "has no torchLevel control")) {
            try await capturer.set(.torch(.on))
        }
    }

    @Test func settingsBeforeStartAreAppliedAtOpen() async throws {
        let backend = FakeBackend()
        let capturer = CameraCapturer(backend: backend)
        try await capturer.set(.exposureBias(20))
        try await capturer.set(.whiteBalanceTemperature(3000))
        try await capturer.startCapture(device: FakeBackend.front, width: 640, height: 480, fps: 30)
        let controls = try #require(backend.lastStream?.state.withLock { $0.controls })
        #expect(controls.exposureBias == 8)
        #expect(controls.whiteBalanceTemperature == 3000 && controls.whiteBalanceMode == .locked)
    }

    @Test func pointOfInterestThroughTheReferenceTransform() async throws {
        let (backend, capturer, _) = try await started(.front)
        let p = try await capturer.setPointOfInterest(previewX: 100, previewY: 200, previewWidth: 375, previewHeight: 667)
        #expect(abs(p.x - 200.0 / 667) < 1e-9 && abs(p.y - 100.0 / 375) < 1e-9)
        #expect(backend.lastStream?.applied == [.exposurePoint(p), .focusPoint(p)])
    }

    @Test func frameRateChangeWhileRunning() async throws {
        let (backend, capturer, _) = try await started(.front)
        #expect(try await capturer.setFrameRate(15) == 15)
        #expect(backend.lastStream?.fps == 15)
        #expect(try await capturer.setFrameRate(100) == 30)
        await #expect(throws: CameraError(.invalidArgument, device: "fake:front", "frame rate 0.0 must be above 0")) {
            try await capturer.setFrameRate(0)
        }
    }

    @Test func switchingKeepsTheDelegateAndDropsTheOldStream() async throws {
        let (backend, capturer, sink) = try await started(.front)
        try await capturer.set(.zoom(3))
        let front = try #require(backend.lastStream)
        let events = capturer.events()
        try await capturer.switchCamera(position: .back)
        let back = try #require(backend.lastStream)
        #expect(front.stopped && !back.stopped)
        #expect(back.device.id == "fake:back" && back.format.width == 1280 && back.format.height == 720)
        #expect(back.state.withLock { $0.controls.zoom } == 3)
        front.push(y: 10)
        back.push(y: 90)
        #expect(sink.all.map { $0.buffer.luma(x: 0, y: 0) } == [90])
        #expect(capturer.isMirrored == false)
        #expect(await waitFor(events) { if case .switched = $0 { return true } else { return false } } == .switched(from: "fake:front", to: "fake:back"))
        // Back to the front camera: zoom 16 on the back clamps to the front's 4.
        try await capturer.set(.zoom(16))
        try await capturer.switchCamera(position: .front)
        #expect(backend.lastStream?.state.withLock { $0.controls.zoom } == 4)
        #expect(capturer.isMirrored)
    }

    @Test func photoFromTheStillPathOrTheNextFrame() async throws {
        let (backend, capturer, sink) = try await started(.back)
        let stream = try #require(backend.lastStream)
        stream.state.withLock { $0.photo = VideoFrame(buffer: makeNV12(width: 1920, height: 1080, y: 77), timestampNs: 5) }
        let still = try await capturer.takePhoto()
        #expect(still.width == 1920 && still.height == 1080 && still.format == .i420)
        #expect(still.buffer.luma(x: 100, y: 100) == 77)
        stream.state.withLock { $0.photo = nil }
        async let photo = capturer.takePhoto()
        while capturer.pendingPhotoCount == 0 { await Task.yield() }
        stream.push(y: 66)
        let next = try await photo
        #expect(next.width == 1280 && next.buffer.luma(x: 0, y: 0) == 66)
        #expect(sink.count == 1)
    }

    @Test func interruptedDeviceRestartsWhenItReturns() async throws {
        let (backend, capturer, sink) = try await started(.front)
        try await capturer.set(.exposureBias(1.5))
        let events = capturer.events()
        backend.setPresent("fake:front", false)
        backend.lastStream?.fail()
        let interrupted = await waitFor(events) { if case .interrupted = $0 { return true } else { return false } }
        #expect(interrupted == .interrupted(device: "fake:front", error: CameraError(.deviceLost, device: "fake:front", "unplugged")))
        #expect(await capturer.isRunning)
        backend.setPresent("fake:front", true)
        #expect(await waitFor(events) { if case .resumed = $0 { return true } else { return false } } == .resumed(device: "fake:front"))
        #expect(backend.opened == ["fake:front", "fake:front"])
        let reopened = try #require(backend.lastStream)
        #expect(reopened.state.withLock { $0.controls.exposureBias } == 1.5)
        reopened.push()
        #expect(sink.count == 1)
    }

    @Test func stopDuringAnInterruptionEndsTheWait() async throws {
        let (backend, capturer, _) = try await started(.front)
        let events = capturer.events()
        backend.setPresent("fake:front", false)
        backend.lastStream?.fail()
        _ = await waitFor(events) { if case .interrupted = $0 { return true } else { return false } }
        await capturer.stopCapture()
        backend.setPresent("fake:front", true)
        // Another operation on the serial controller: any restart already queued has run by now.
        _ = try? await capturer.setFrameRate(10)
        #expect(backend.opened == ["fake:front"])
    }

    @Test func permissionAndMissingDeviceErrors() async throws {
        let backend = FakeBackend()
        backend.deny("fake:back")
        let capturer = CameraCapturer(backend: backend)
        await #expect(throws: CameraError(.permissionDenied, device: "fake:back", "cannot open fake:back: Permission denied")) {
            try await capturer.startCapture(device: FakeBackend.back, width: 1280, height: 720, fps: 30)
        }
        #expect(await capturer.isRunning == false)
        #expect(throws: CameraError(.noSuchDevice, device: "nope", "no such camera (have: fake:front, fake:back)")) {
            try capturer.device(id: "nope")
        }
        await #expect(throws: CameraError(.notRunning, device: "fake:back", "cannot switch: capture is not running")) {
            try await capturer.switchCamera(to: FakeBackend.back)
        }
        await #expect(throws: CameraError(.notRunning, device: nil, "cannot take a photo: capture is not running")) {
            try await capturer.takePhoto()
        }
    }

    @Test func exposurePolicyFollowsSceneBrightness() async throws {
        let (backend, capturer, _) = try await started(.front)
        let events = capturer.events()
        await capturer.setExposurePolicy(.reference)
        let stream = try #require(backend.lastStream)
        // Luma 20 at ISO 100, 1/30 s: Bv = log2(20/118) ≈ −2.56 → the −3…−2.5 band: max ISO − 200, 1/25 s.
        for _ in 0 ..< 10 { stream.push(y: 20) }
        let e = await waitFor(events) { if case .exposurePolicy = $0 { return true } else { return false } }
        guard case .exposurePolicy(let band, let bv, let iso, let duration, let fps)? = e else {
            Issue.record("no policy event")
            return
        }
        #expect(band == 4 && abs(bv - -2.56) < 0.01)
        #expect(iso == 1976 && duration == 0.04 && fps == 25)
        #expect(stream.fps == 25)
        #expect(stream.applied.contains(.iso(1976)) && stream.applied.contains(.exposureDuration(0.04)))
    }

    @Test func availableResolutionsAcrossDevices() throws {
        let capturer = CameraCapturer(backend: FakeBackend())
        #expect(try capturer.availableVideoResolutions() == ["640x480", "1280x720", "1920x1080"])
    }
}
