import Foundation
import Media
import Testing
@testable import Camera

@Suite struct V4L2StreamTests {
    private func open(_ cam: RecordedV4L2Camera, _ pf: CameraPixelFormat, _ w: Int, _ h: Int, fps: Double = 30,
                      controls: CameraControlState = CameraControlState(), sink: V4L2FrameCollector) throws -> V4L2CameraStream {
        let backend = V4L2Fixtures.backend([cam])
        let device = try #require(try backend.devices().first)
        let stream = try backend.open(device, format: try V4L2Fixtures.format(device, pf, w, h), fps: fps, controls: controls, sink: sink)
        return try #require(stream as? V4L2CameraStream)
    }

    /// Opens `cam`, lets it deliver `count` frames, stops, and returns them.
    private func capture(_ cam: RecordedV4L2Camera, _ pf: CameraPixelFormat, _ w: Int, _ h: Int, count: Int) throws -> [VideoFrame] {
        cam.allowFrames(count)
        let sink = V4L2FrameCollector()
        let stream = try open(cam, pf, w, h, sink: sink)
        #expect(sink.wait { f, _ in f >= count })
        stream.stop()
        return sink.frames
    }

    @Test func buffersCycleInOrder() throws {
        let cam = try V4L2Fixtures.webcam()
        cam.allowFrames(10)
        let sink = V4L2FrameCollector()
        let stream = try open(cam, .yuyv, 640, 480, sink: sink)
        #expect(sink.wait { frames, _ in frames >= 10 })
        stream.stop()
        #expect(!cam.isStreaming)
        let frames = sink.frames
        #expect(frames.count == 10)
        #expect(frames.map(V4L2Fixtures.sequence) == Array(0..<10))
        #expect(frames.allSatisfy { $0.format == .i420 && $0.width == 640 && $0.height == 480 && $0.rotation == .r0 })
        #expect(zip(frames, frames.dropFirst()).allSatisfy { $0.timestampNs <= $1.timestampNs })
        #expect(cam.dequeueLog.map(\.index) == [0, 1, 2, 3, 0, 1, 2, 3, 0, 1])
        #expect(cam.dequeueLog.map(\.sequence) == Array(0..<10))
        // 4 initial QBUFs, then every dequeued buffer went back.
        #expect(cam.queueLog == [0, 1, 2, 3] + [0, 1, 2, 3, 0, 1, 2, 3, 0, 1])
        stream.stop()   // idempotent
    }

    @Test func yuyvConvertsToTheRightPicture() throws {
        let b = try #require(try capture(V4L2Fixtures.webcam(), .yuyv, 640, 480, count: 1).first).buffer
        for x in [8, 100, 320, 639] { #expect(b.luma(x: x, y: 240) == RecordedV4L2Picture.luma(x: x, width: 640)) }
        // Chroma: U follows the row (YUY2ToI420 averages two rows), V is constant.
        for cy in [10, 120, 230] {
            let u = Int(b.planePointer(1)[cy * b.strides[1] + 50])
            #expect(abs(u - Int(RecordedV4L2Picture.u(y: 2 * cy, height: 480))) <= 1)
            #expect(b.planePointer(2)[cy * b.strides[2] + 50] == RecordedV4L2Picture.v)
        }
    }

    @Test func nv12AndYU12ConvertToTheRightPicture() throws {
        for (pf, w, h) in [(CameraPixelFormat.nv12, 1280, 720), (.i420, 640, 480)] {
            let frames = try capture(V4L2Fixtures.phone(), pf, w, h, count: 2)
            #expect(frames.map(V4L2Fixtures.sequence) == [0, 1])
            let b = try #require(frames.last).buffer
            #expect(b.width == w && b.height == h)
            #expect(b.luma(x: w / 2, y: h / 2) == RecordedV4L2Picture.luma(x: w / 2, width: w))
            #expect(b.planePointer(1)[(h / 4) * b.strides[1] + 7] == RecordedV4L2Picture.u(y: h / 2, height: h))
            #expect(b.planePointer(2)[(h / 4) * b.strides[2] + 7] == RecordedV4L2Picture.v)
        }
    }

    @Test func mjpegDecodesToTheQuadrants() throws {
        let b = try #require(try capture(V4L2Fixtures.webcam(), .mjpeg, 640, 480, count: 1).first).buffer
        #expect(b.width == 640 && b.height == 480)
        // BT.601 limited range: red Y≈81 V≈240, green Y≈145 U≈54, blue Y≈41 U≈240, white Y≈235.
        func y(_ x: Int, _ yy: Int) -> Int { Int(b.luma(x: x, y: yy)) }
        func u(_ x: Int, _ yy: Int) -> Int { Int(b.planePointer(1)[yy / 2 * b.strides[1] + x / 2]) }
        func v(_ x: Int, _ yy: Int) -> Int { Int(b.planePointer(2)[yy / 2 * b.strides[2] + x / 2]) }
        #expect(abs(y(160, 120) - 81) <= 4 && abs(v(160, 120) - 240) <= 5)
        #expect(abs(y(480, 120) - 145) <= 4 && abs(u(480, 120) - 54) <= 5)
        #expect(abs(y(160, 360) - 41) <= 4 && abs(u(160, 360) - 240) <= 5)
        #expect(abs(y(480, 360) - 235) <= 4 && abs(u(480, 360) - 128) <= 3)
    }

    @Test func corruptMJPEGFramesAreDroppedAndCounted() throws {
        let cam = try V4L2Fixtures.webcam()
        cam.corruptFrames([1, 3])   // starts like a JPEG, then garbage
        cam.allowFrames(5)
        let sink = V4L2FrameCollector()
        let stream = try open(cam, .mjpeg, 640, 480, sink: sink)
        #expect(sink.wait { f, _ in f >= 3 })
        stream.stop()
        #expect(sink.frames.count == 3)
        #expect(stream.droppedFrameCount == 2)
        #expect(sink.failures.isEmpty)
        #expect(cam.queueLog.count == 4 + 5)   // corrupt buffers were re-queued too
    }

    @Test func vanishedDeviceFailsOnce() throws {
        let cam = try V4L2Fixtures.webcam()
        cam.allowFrames(3)
        let sink = V4L2FrameCollector()
        let stream = try open(cam, .yuyv, 640, 480, sink: sink)
        #expect(sink.wait { f, _ in f >= 3 })
        cam.vanish()
        #expect(sink.wait { _, failures in failures >= 1 })
        let failure = try #require(sink.failures.first)
        #expect(failure.kind == .deviceLost && failure.device == "/dev/video0")
        #expect(failure.message.contains("No such device"))
        do {
            _ = try stream.apply(.zoom(2))
            Issue.record("apply on a vanished device succeeded")
        } catch {
            #expect(error.kind == .deviceLost || error.kind == .notRunning)
        }
        stream.stop()
        stream.stop()
        #expect(sink.failures.count == 1)
        #expect(sink.frames.count == 3)
        // Reopening the unplugged device names it and says it is gone.
        let backend = V4L2Fixtures.backend([cam])
        #expect(try backend.devices().isEmpty)
    }

    @Test func controlsMapBothWays() throws {
        let cam = try V4L2Fixtures.webcam()
        let sink = V4L2FrameCollector()
        cam.allowFrames(0)
        let stream = try open(cam, .yuyv, 640, 480, sink: sink)
        defer { stream.stop() }
        // 1/100 s → 100 units of 100 µs; exposure goes manual first (uvcvideo refuses otherwise).
        #expect(try stream.apply(.exposureDuration(0.01)) == .exposureDuration(0.01))
        #expect(cam.controlValue(V4L2ControlID.exposureTimeAbsolute) == 100)
        #expect(cam.controlValue(V4L2ControlID.autoExposure) == 1)
        // The driver clamps what the model did not: 1 s → 2047 units.
        #expect(try stream.apply(.exposureDuration(1)) == .exposureDuration(0.2047))
        #expect(try stream.apply(.zoom(2)) == .zoom(2))
        #expect(cam.controlValue(V4L2ControlID.zoomAbsolute) == 200)
        // Focus 0.49 → 250 − 123 = 127 → the driver rounds to its step of 5 → 125 → reads back 0.5.
        #expect(try stream.apply(.focusPosition(0.49)) == .focusPosition(0.5))
        #expect(cam.controlValue(V4L2ControlID.focusAbsolute) == 125)
        #expect(cam.controlValue(V4L2ControlID.focusAutomaticContinuous) == 0)
        #expect(try stream.apply(.focusPosition(1)) == .focusPosition(1))   // far = focus_absolute 0
        #expect(try stream.apply(.whiteBalanceTemperature(4321)) == .whiteBalanceTemperature(4321))
        #expect(cam.controlValue(V4L2ControlID.whiteBalanceAutomatic) == 0)
        #expect(try stream.apply(.whiteBalanceMode(.continuousAuto)) == .whiteBalanceMode(.continuousAuto))
        // ISO through gain: 100…1600 over 0…255.
        // ISO 853 → gain 128.01 → 128 → reads back as ISO 852.94.
        guard case .iso(let iso) = try stream.apply(.iso(853)) else { Issue.record("not an ISO"); return }
        #expect(abs(iso - (100 + 128 * 1500.0 / 255)) < 1e-9)
        #expect(cam.controlValue(V4L2ControlID.gain) == 128)
        #expect(try stream.apply(.exposureMode(.continuousAuto)) == .exposureMode(.continuousAuto))
        #expect(cam.controlValue(V4L2ControlID.autoExposure) == 3)   // aperture priority: the webcam's auto
        #expect(try stream.apply(.exposureMode(.locked)) == .exposureMode(.locked))
        #expect(try stream.apply(.focusMode(.continuousAuto)) == .focusMode(.continuousAuto))
    }

    @Test func phoneControlsTorchBiasAndISO() throws {
        let cam = try V4L2Fixtures.phone()
        cam.allowFrames(0)
        let stream = try open(cam, .nv12, 640, 480, sink: V4L2FrameCollector())
        defer { stream.stop() }
        #expect(try stream.apply(.exposureBias(0.7)) == .exposureBias(0.5))   // nearest menu item
        #expect(cam.controlValue(V4L2ControlID.autoExposureBias) == 5)
        #expect(try stream.apply(.iso(700)) == .iso(800))
        #expect(cam.controlValue(V4L2ControlID.isoSensitivityAuto) == 0)
        #expect(cam.controlValue(V4L2ControlID.isoSensitivity) == 3)
        #expect(try stream.apply(.torch(.level(0.6))) == .torch(.level(0.625)))   // 120 mA → step 25 → 125
        #expect(cam.controlValue(V4L2ControlID.flashLEDMode) == 2)
        #expect(cam.controlValue(V4L2ControlID.flashTorchIntensity) == 125)
        #expect(try stream.apply(.torch(.off)) == .torch(.off))
        #expect(cam.controlValue(V4L2ControlID.flashLEDMode) == 0)
        #expect(try stream.apply(.focusMode(.autoFocus)) == .focusMode(.autoFocus))
        #expect(try stream.apply(.whiteBalanceTemperature(5234)) == .whiteBalanceTemperature(5200))
    }

    @Test func initialControlStateIsApplied() throws {
        let cam = try V4L2Fixtures.webcam()
        cam.allowFrames(0)
        var state = CameraControlState()
        state.record(.zoom(3))
        state.record(.exposureDuration(0.02))
        state.record(.whiteBalanceTemperature(3000))
        state.record(.torch(.on))   // the webcam has none: skipped, not an error
        let stream = try open(cam, .yuyv, 640, 480, controls: state, sink: V4L2FrameCollector())
        stream.stop()
        #expect(cam.controlValue(V4L2ControlID.zoomAbsolute) == 300)
        #expect(cam.controlValue(V4L2ControlID.exposureTimeAbsolute) == 200)
        #expect(cam.controlValue(V4L2ControlID.whiteBalanceTemperature) == 3000)
    }

    @Test func frameRateChangesWhileStreaming() throws {
        // The webcam (uvcvideo) refuses S_PARM while streaming: the stream restarts itself.
        let cam = try V4L2Fixtures.webcam()
        cam.allowFrames(2)
        let sink = V4L2FrameCollector()
        let stream = try open(cam, .mjpeg, 1280, 720, fps: 30, sink: sink)
        #expect(cam.currentInterval == V4L2Fraction(1, 30))
        #expect(sink.wait { f, _ in f >= 2 })
        #expect(try stream.setFrameRate(14) == 15)
        #expect(cam.currentInterval == V4L2Fraction(1, 15))
        #expect(try stream.setFrameRate(7.5) == 7.5)
        #expect(cam.isStreaming)
        cam.allowFrames(3)
        #expect(sink.wait { f, _ in f >= 5 })
        #expect(sink.failures.isEmpty)
        stream.stop()
        // The phone sensor accepts it while streaming, anywhere in its continuous range.
        let phone = try V4L2Fixtures.phone()
        phone.allowFrames(0)
        let s2 = try open(phone, .nv12, 640, 480, fps: 30, sink: V4L2FrameCollector())
        #expect(try s2.setFrameRate(12.5) == 12.5)
        #expect(phone.currentInterval == V4L2Fraction(2, 25))
        s2.stop()
        #expect(throws: CameraError.self) { try s2.setFrameRate(10) }
    }

    @Test func driverAdjustsTheSize() throws {
        let cam = try V4L2Fixtures.webcam()
        let io = try cam.open()
        defer { io.close() }
        let got = try io.setFormat(V4L2PixFormat(width: 1000, height: 700, fourcc: V4L2FourCC.yuyv))
        #expect(got.width == 800 && got.height == 600 && got.bytesPerLine == 1600)
        let unknown = try io.setFormat(V4L2PixFormat(width: 640, height: 480, fourcc: V4L2FourCC.nv12))
        #expect(unknown.fourcc == V4L2FourCC.yuyv)
        #expect(throws: V4L2Error(EINVAL, "VIDIOC_DQBUF")) { try io.dequeueBuffer() }
        cam.allowFrames(0)
        #expect(try io.requestBuffers(count: 4) == 4)
        for i in 0..<4 { try io.queueBuffer(index: i) }
        #expect(throws: V4L2Error(EINVAL, "VIDIOC_QBUF")) { try io.queueBuffer(index: 0) }   // already queued
        try io.streamOn()
        #expect(throws: V4L2Error(EAGAIN, "VIDIOC_DQBUF")) { try io.dequeueBuffer() }
        // A second handle cannot take the queue or change the format under it.
        let other = try cam.open()
        #expect(throws: V4L2Error(EBUSY, "VIDIOC_REQBUFS")) { try other.requestBuffers(count: 2) }
        #expect(throws: V4L2Error(EBUSY, "VIDIOC_S_FMT")) { try other.setFormat(got) }
        other.close()
    }
}

@Suite struct V4L2ErrorTests {
    @Test func controlErrorsFromTheDriver() throws {
        let cam = try V4L2Fixtures.webcam()
        let io = try cam.open()
        defer { io.close() }
        #expect(throws: V4L2Error(EINVAL, "VIDIOC_S_CTRL")) { try io.setControl(id: 0x0099_0999, value: 1) }
        #expect(throws: V4L2Error(EINVAL, "VIDIOC_G_CTRL")) { try io.getControl(id: 0x0099_0999) }
        // Exposure time while auto exposure is on: inactive, refused.
        #expect(throws: V4L2Error(EACCES, "VIDIOC_S_CTRL")) { try io.setControl(id: V4L2ControlID.exposureTimeAbsolute, value: 100) }
        #expect(throws: V4L2Error(ERANGE, "VIDIOC_S_CTRL")) { try io.setControl(id: V4L2ControlID.autoExposure, value: 7) }
        #expect(throws: V4L2Error(EINVAL, "VIDIOC_S_CTRL")) { try io.setControl(id: V4L2ControlID.autoExposure, value: 2) }
        // Clamped and rounded to the step like the kernel's control framework.
        try io.setControl(id: V4L2ControlID.focusAutomaticContinuous, value: 0)
        try io.setControl(id: V4L2ControlID.focusAbsolute, value: 1000)
        #expect(try io.getControl(id: V4L2ControlID.focusAbsolute) == 250)
        try io.setControl(id: V4L2ControlID.focusAbsolute, value: 13)
        #expect(try io.getControl(id: V4L2ControlID.focusAbsolute) == 15)
        let text = V4L2Error(EACCES, "VIDIOC_S_CTRL").description
        #expect(text == "VIDIOC_S_CTRL: Permission denied (errno 13)")
    }

    @Test func unknownAndRefusedControlsThroughTheStream() throws {
        let cam = try V4L2Fixtures.webcam()
        cam.allowFrames(0)
        let backend = V4L2Fixtures.backend([cam])
        let device = try #require(try backend.devices().first)
        let stream = try backend.open(device, format: try V4L2Fixtures.format(device, .yuyv, 640, 480), fps: 30,
                                      controls: CameraControlState(), sink: V4L2FrameCollector())
        defer { stream.stop() }
        do {
            _ = try stream.apply(.torch(.on))
            Issue.record("torch on a webcam")
        } catch {
            #expect(error.kind == .unsupported && error.device == "/dev/video0" && error.message == "has no torch control")
            #expect(error.description == "camera /dev/video0: has no torch control")
        }
        do {
            _ = try stream.apply(.exposureBias(1))
            Issue.record("exposure bias on a webcam")
        } catch {
            #expect(error.message == "has no auto_exposure_bias control")
        }
        #expect(throws: CameraError.self) { try stream.apply(.exposurePoint(.center)) }
    }

    @Test func openErrorsNameTheDevice() throws {
        let cases: [(Int32, CameraError.Kind, String)] = [
            (EACCES, .permissionDenied, "cannot open /dev/video0: Permission denied (add the user to the 'video' group)"),
            (EBUSY, .busy, "cannot open /dev/video0: Device or resource busy (another program is using the camera)"),
        ]
        for (errno, kind, message) in cases {
            let cam = try V4L2Fixtures.webcam()
            let backend = V4L2Fixtures.backend([cam])
            let device = try #require(try backend.devices().first)
            cam.failOpen(with: errno)
            do {
                _ = try backend.open(device, format: device.formats[0], fps: 30, controls: CameraControlState(), sink: V4L2FrameCollector())
                Issue.record("open succeeded")
            } catch {
                #expect(error == CameraError(kind, device: "/dev/video0", message))
            }
        }
        let cam = try V4L2Fixtures.webcam()
        let backend = V4L2Fixtures.backend([cam])
        let device = try #require(try backend.devices().first)
        cam.vanish()
        #expect(throws: CameraError.self) {
            _ = try backend.open(device, format: device.formats[0], fps: 30, controls: CameraControlState(), sink: V4L2FrameCollector())
        }
        var other = device
        other.id = "/dev/video9"
        do {
            _ = try backend.open(other, format: device.formats[0], fps: 30, controls: CameraControlState(), sink: V4L2FrameCollector())
        } catch {
            #expect(error.kind == .noSuchDevice && error.device == "/dev/video9")
        }
    }

    @Test func busyQueueIsABusyError() throws {
        let cam = try V4L2Fixtures.webcam()
        cam.allowFrames(0)
        let backend = V4L2Fixtures.backend([cam])
        let device = try #require(try backend.devices().first)
        let first = try backend.open(device, format: device.formats[0], fps: 30, controls: CameraControlState(), sink: V4L2FrameCollector())
        defer { first.stop() }
        do {
            _ = try backend.open(device, format: device.formats[0], fps: 30, controls: CameraControlState(), sink: V4L2FrameCollector())
            Issue.record("second open streamed")
        } catch {
            #expect(error.kind == .busy && error.device == "/dev/video0")
        }
    }
}

@Suite struct V4L2SystemDeviceTests {
    /// The real ioctl path, on nodes that exist everywhere but are not cameras.
    @Test func realIoctlsOnNonCameraNodes() throws {
        #expect(throws: V4L2Error(ENOENT, "open /dev/video-none")) { try V4L2SystemDevice(path: "/dev/video-none") }
        let null = try V4L2SystemDevice(path: "/dev/null")
        defer { null.close() }
        #expect(throws: V4L2Error(ENOTTY, "VIDIOC_QUERYCAP")) { try null.queryCapability() }
        #expect(throws: V4L2Error(ENOTTY, "VIDIOC_S_CTRL")) { try null.setControl(id: V4L2ControlID.gain, value: 1) }
        null.interruptWait()
        #expect(try null.waitForFrame(timeoutMs: 5000) == false)   // the wake-up wins
        #expect(try null.waitForFrame(timeoutMs: 5000) == true)    // /dev/null polls readable at once
        let backend = V4L2CameraBackend(nodes: [V4L2CameraBackend.Node(path: "/dev/null") { () throws(V4L2Error) in
            try V4L2SystemDevice(path: "/dev/null")
        }])
        #expect(try backend.devices().isEmpty)   // not a camera: skipped
    }
}

@Suite struct V4L2HardwareTests {
    /// Runs only where a real camera node exists; CI machines and this development machine
    /// have no /dev/video*, so there it is skipped rather than failed.
    @Test(.enabled(if: V4L2CameraBackend.hasVideoNodes, "needs a V4L2 camera (/dev/video*); none on this machine"))
    func realCameraCapturesTenFrames() throws {
        let backend = V4L2CameraBackend()
        let devices = try backend.devices()
        let device = try #require(devices.first, "video nodes exist but none streams video")
        #expect(!device.formats.isEmpty)
        let format = try #require(device.formats.min { $0.width * $0.height < $1.width * $1.height })
        let sink = V4L2FrameCollector()
        let stream = try backend.open(device, format: format, fps: format.maxFrameRate, controls: CameraControlState(), sink: sink)
        #expect(sink.wait(timeout: 30) { frames, failures in frames >= 10 || failures > 0 })
        stream.stop()
        #expect(sink.failures.isEmpty)
        #expect(sink.frames.count >= 10)
        #expect(sink.frames.allSatisfy { $0.width == format.width && $0.height == format.height })
    }
}
