import Camera
import Media
import Testing

@Suite struct CameraMathTests {
    @Test func clampBothEnds() {
        let iso = ControlRange(min: 34, max: 2176, defaultValue: 100)
        // The reference app's clamp let a value below the minimum through (its second line
        // overwrote the first); ours keeps both bounds.
        #expect(iso.clamp(10) == 34)
        #expect(iso.clamp(5000) == 2176)
        #expect(iso.clamp(400) == 400)
        #expect(iso.clamp(.nan) == 100)
        let stepped = ControlRange(min: 0, max: 250, step: 5, defaultValue: 0)
        #expect(stepped.clamp(12) == 10)
        #expect(stepped.clamp(13) == 15)
        #expect(stepped.clamp(251) == 250)
    }

    @Test func settingsClampedToTheDeviceOrRefused() throws {
        let caps = FakeBackend.front.capabilities
        #expect(try caps.clamp(.iso(5000), device: "x") == .iso(2176))
        #expect(try caps.clamp(.zoom(0.5), device: "x") == .zoom(1))
        #expect(try caps.clamp(.exposurePoint(NormalizedPoint(x: 1.5, y: -1)), device: "x") == .exposurePoint(NormalizedPoint(x: 1, y: 0)))
        #expect(try caps.clamp(.torch(.off), device: "x") == .torch(.off))
        #expect(throws: CameraError(.unsupported, device: "fake:front", "has no torchLevel control")) {
            try caps.clamp(.torch(.on), device: "fake:front")
        }
        #expect("\(CameraError(.unsupported, device: "fake:front", "has no torchLevel control"))" == "camera fake:front: has no torchLevel control")
        let back = FakeBackend.back.capabilities
        #expect(try back.clamp(.torch(.level(3)), device: "b") == .torch(.level(1)))
        #expect(try back.clamp(.torch(.level(-1)), device: "b") == .torch(.off))
    }

    @Test func controlStateSideEffects() {
        var s = CameraControlState()
        s.record(.iso(400))
        #expect(s.exposureMode == .custom && s.iso == 400)
        s.record(.whiteBalanceTemperature(3200))
        #expect(s.whiteBalanceMode == .locked)
        s.record(.focusPosition(0.3))
        #expect(s.focusMode == .locked)
        #expect(s.settings.contains(.iso(400)) && s.settings.contains(.exposureDuration(1.0 / 30)))
        #expect(s.settings.contains(.whiteBalanceTemperature(3200)) && s.settings.contains(.focusPosition(0.3)))
    }

    @Test func rotationTableFromTheReferenceApp() {
        let expected: [(DeviceOrientation, VideoRotation?, VideoRotation?)] = [
            (.portrait, .r90, .r90), (.portraitUpsideDown, .r270, .r270),
            (.landscapeLeft, .r180, .r0), (.landscapeRight, .r0, .r180),
            (.faceUp, nil, nil), (.faceDown, nil, nil), (.unknown, nil, nil),
        ]
        for (o, front, back) in expected {
            #expect(o.frameRotation(for: .front) == front, "\(o) front")
            #expect(o.frameRotation(for: .back) == back, "\(o) back")
        }
    }

    @Test func pointOfInterestFromAPortraitPreview() {
        // A tap at (100, 200) in a 375x667 preview: x from the preview's y, y from its x, flipped
        // for the back camera only (the front preview is mirrored).
        let front = CameraGeometry.pointOfInterest(previewX: 100, previewY: 200, previewWidth: 375, previewHeight: 667, position: .front)
        #expect(abs(front.x - 200.0 / 667) < 1e-9 && abs(front.y - 100.0 / 375) < 1e-9)
        let back = CameraGeometry.pointOfInterest(previewX: 100, previewY: 200, previewWidth: 375, previewHeight: 667, position: .back)
        #expect(abs(back.x - 200.0 / 667) < 1e-9 && abs(back.y - (1 - 100.0 / 375)) < 1e-9)
        // Outside the preview clamps; an empty preview gives the centre.
        #expect(CameraGeometry.pointOfInterest(previewX: -10, previewY: 900, previewWidth: 375, previewHeight: 667, position: .back) == NormalizedPoint(x: 1, y: 1))
        #expect(CameraGeometry.pointOfInterest(previewX: 1, previewY: 1, previewWidth: 0, previewHeight: 667, position: .back) == .center)
    }

    @Test func zoomedRectFillAndFit() {
        let rect = CameraGeometry.Rect(x: 0, y: 0, width: 375, height: 667)
        let fill = CameraGeometry.zoomedRect(videoWidth: 1280, videoHeight: 720, in: rect, scaleToFit: false)
        #expect(abs(fill.height - 667) < 1e-9)
        #expect(abs(fill.width - 1280 * 667 / 720) < 1e-9)
        #expect(abs(fill.x - -(1280.0 * 667 / 720 - 375) / 2) < 1e-9 && fill.y == 0)
        let fit = CameraGeometry.zoomedRect(videoWidth: 1280, videoHeight: 720, in: rect, scaleToFit: true)
        #expect(abs(fit.width - 375) < 1e-9)
        #expect(abs(fit.height - 720 * 375 / 1280) < 1e-9)
        #expect(abs(fit.y - (667 - 720.0 * 375 / 1280) / 2) < 1e-9 && fit.x == 0)
    }

    @Test func zoomCropKeepsTheCentre() {
        #expect(CameraGeometry.zoomCrop(width: 1280, height: 720, zoom: 2) == PixelRect(x: 320, y: 180, width: 640, height: 360))
        #expect(CameraGeometry.zoomCrop(width: 1280, height: 720, zoom: 1) == PixelRect(x: 0, y: 0, width: 1280, height: 720))
        #expect(CameraGeometry.zoomCrop(width: 1280, height: 720, zoom: 0.5) == PixelRect(x: 0, y: 0, width: 1280, height: 720))
    }

    @Test func exposurePolicyBands() {
        let p = ExposurePolicy.reference
        let bright = p.settings(band: p.band(for: 2.5), maxISO: 2176, requestedFPS: 30)
        #expect(bright.iso == 500 && abs(bright.duration - 1.0 / 30) < 1e-12 && bright.fps == 30)
        // Exactly 1.0 fell through every band of the original's open intervals; here it is the top band.
        #expect(p.band(for: 1.0) == p.bands.count - 1)
        let dim = p.settings(band: p.band(for: -0.5), maxISO: 2176, requestedFPS: 30)
        #expect(dim.iso == 1976 && abs(dim.duration - 1.0 / 40) < 1e-12 && dim.fps == 30)
        let dark = p.settings(band: p.band(for: -6), maxISO: 2176, requestedFPS: 30)
        #expect(dark.iso == 2026 && abs(dark.duration - 0.2) < 1e-12 && dark.fps == 5)
        #expect(p.settings(band: p.band(for: -3.7), maxISO: 2176, requestedFPS: 30).iso == 1926)
        // Hysteresis: 0.1 EV under the edge stays, 0.3 EV under moves.
        let top = p.bands.count - 1
        #expect(p.band(for: -0.1, current: top) == top)
        #expect(p.band(for: -0.3, current: top) == top - 1)
    }

    @Test func brightnessValue() {
        #expect(abs(BrightnessMeter.brightnessValue(meanLuma: 118, iso: 100, duration: 1.0 / 30)) < 1e-9)
        #expect(abs(BrightnessMeter.brightnessValue(meanLuma: 118, iso: 200, duration: 1.0 / 30) - -1) < 1e-9)
        #expect(abs(BrightnessMeter.brightnessValue(meanLuma: 59, iso: 100, duration: 1.0 / 15) - -2) < 1e-9)
    }
}
