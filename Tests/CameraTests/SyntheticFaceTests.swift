import Camera
import Media
import Render
import Testing

// Faces on the synthetic camera, driven frame by frame (manual pacing): the boxes it reports
// against the pixels it drew, ids, when faceEntered / faceLeft fire, and exposure on a face.

/// Skin colours no surface of the room has, so a face's pixels can be picked out.
private let greenSkin: [UInt8] = [60, 200, 70]
private let blueSkin: [UInt8] = [60, 80, 230]

/// Bounding box (upright picture, normalized) and count of the pixels whose colour `matches`.
private func box(_ frame: VideoFrame, _ matches: (Int, Int, Int) -> Bool) -> (box: NormalizedRect, pixels: Int)? {
    let (w, h, rgb) = PNGEncoder.uprightRGB(frame)
    var x0 = w, y0 = h, x1 = -1, y1 = -1, n = 0
    for y in 0..<h {
        for x in 0..<w {
            let i = 3 * (y * w + x)
            guard matches(Int(rgb[i]), Int(rgb[i + 1]), Int(rgb[i + 2])) else { continue }
            n += 1
            x0 = min(x0, x); x1 = max(x1, x); y0 = min(y0, y); y1 = max(y1, y)
        }
    }
    guard n > 0 else { return nil }
    return (NormalizedRect(x: Double(x0) / Double(w), y: Double(y0) / Double(h),
                           width: Double(x1 + 1 - x0) / Double(w), height: Double(y1 + 1 - y0) / Double(h)), n)
}

private func isGreen(_ r: Int, _ g: Int, _ b: Int) -> Bool { g - r > 80 && g - b > 80 }
private func isBlue(_ r: Int, _ g: Int, _ b: Int) -> Bool { b - r > 120 && b - g > 100 }

/// Mean luma (BT.601 from R, G, B, as `swiftrtc photo` measures it) of the middle half (each
/// way) of a face's box in the upright picture: its skin, not the hair around it.
private func skinLuma(_ frame: VideoFrame, _ face: Face) -> Double {
    let (w, h, rgb) = PNGEncoder.uprightRGB(frame)
    let r = face.bounds.pixelRect(width: w, height: h)
    var sum = 0.0, n = 0
    for y in (r.y + r.height / 4)..<(r.y + 3 * r.height / 4) {
        for x in (r.x + r.width / 4)..<(r.x + 3 * r.width / 4) {
            let i = 3 * (y * w + x)
            sum += 0.299 * Double(rgb[i]) + 0.587 * Double(rgb[i + 1]) + 0.114 * Double(rgb[i + 2])
            n += 1
        }
    }
    return n > 0 ? sum / Double(n) : 0
}

@Suite(.serialized) struct SyntheticFaceTests {
    /// A capturer on a manually paced synthetic front camera with face detection on.
    func started(_ scene: SyntheticScene, width: Int = 640, height: Int = 480,
                 orientation: DeviceOrientation? = nil) async throws -> (SyntheticCameraBackend, CameraCapturer, FrameSink, AsyncStream<CameraEvent>) {
        let backend = SyntheticCameraBackend(scene: scene, pacing: .manual)
        let sink = FrameSink()
        let capturer = CameraCapturer(backend: backend, delegate: sink)
        let events = capturer.events()
        capturer.setFaceDetection(FaceDetectionOptions())
        if let orientation { await capturer.setDeviceOrientation(orientation) }
        try await capturer.startCapture(device: SyntheticDevices.front, width: width, height: height, fps: 30)
        return (backend, capturer, sink, events)
    }

    /// Steps one frame and returns the events it raised: a control set right after it marks the
    /// end of the frame's events in the stream (both come out in order, nothing is waited for).
    func step(_ backend: SyntheticCameraBackend, _ capturer: CameraCapturer,
              _ events: inout AsyncStream<CameraEvent>.Iterator) async throws -> [CameraEvent] {
        #expect(backend.step())
        try await capturer.set(.exposureBias(0))
        var out: [CameraEvent] = []
        while let e = await events.next(), e != .controlChanged(.exposureBias(0)) { out.append(e) }
        return out
    }

    @Test func facesReportedWhereTheyAreDrawnWithStableIdsAndTimelyEvents() async throws {
        // Portrait, front camera (mirrored): boxes go through the rotation and the mirror.
        var subject = SyntheticScene.Face.subject
        subject.skin = blueSkin
        let visitor = SyntheticScene.Face(id: 7, enter: 5, leave: 45, from: (0.75, 0.45), to: (1.3, 0.40), size: 0.3,
                                          roll: (-20, 25), yaw: (40, -40), skin: greenSkin)
        let (backend, capturer, sink, stream) = try await started(SyntheticScene(faces: [subject, visitor]), orientation: .portrait)
        // Custom exposure: the skin colours stay where the pickers look for them.
        try await capturer.set(.iso(100))
        try await capturer.set(.exposureDuration(1.0 / 60))
        var events = stream.makeAsyncIterator()
        while let e = await events.next(), e != .controlChanged(.exposureDuration(1.0 / 60)) {}

        var entered: [Int: Int] = [:], left: [Int: Int] = [:]   // face id → frame
        var drawn: [Int] = []
        var worstIoU = (visitor: 1.0, subject: 1.0)
        var ids = (visitor: Set<Int>(), subject: Set<Int>())
        for n in 0..<50 {
            for e in try await step(backend, capturer, &events) {
                if case .faceEntered(let f) = e { entered[f.id] = n }
                if case .faceLeft(let f) = e { left[f.id] = n }
            }
            let frame = try #require(sink.all.last)
            #expect(frame.rotation == .r90)
            let faces = try #require(frame.faces)
            if let blue = box(frame, isBlue) {
                let f = try #require(faces.max { $0.bounds.iou(blue.box) < $1.bounds.iou(blue.box) })
                worstIoU.subject = min(worstIoU.subject, f.bounds.iou(blue.box))
                ids.subject.insert(f.id)
            }
            if let green = box(frame, isGreen) {
                drawn.append(n)
                let f = try #require(faces.max { $0.bounds.iou(green.box) < $1.bounds.iou(green.box) }, "frame \(n): no face for the visitor")
                ids.visitor.insert(f.id)
                // A sliver at the edge is a few pixels: judge boxes with a real face in view.
                if green.pixels >= 400 {
                    worstIoU.visitor = min(worstIoU.visitor, f.bounds.iou(green.box))
                    let truth = try #require(backend.scene.faces(device: SyntheticDevices.front, width: 640, height: 480,
                                                                 controls: await capturer.controls, orientation: .portrait,
                                                                 frameNumber: UInt64(n)).first { $0.trackingID == 7 })
                    // Mirrored with the picture: angles change sign.
                    #expect(f.rollAngle == truth.rollAngle.map { -$0 } && f.yawAngle == truth.yawAngle.map { -$0 })
                }
            }
        }
        print("synthetic faces: worst IoU visitor \(worstIoU.visitor), subject \(worstIoU.subject); visitor drawn in frames \(drawn.first ?? -1)…\(drawn.last ?? -1), entered \(entered), left \(left)")
        #expect(worstIoU.subject >= 0.7 && worstIoU.visitor >= 0.7)
        #expect(ids.subject.count == 1 && ids.visitor.count == 1, "ids \(ids)")
        let visitorID = try #require(ids.visitor.first)
        let firstDrawn = try #require(drawn.first), lastDrawn = try #require(drawn.last)
        #expect(try abs(#require(entered[visitorID]) - firstDrawn) <= 2)
        #expect(try abs(#require(left[visitorID]) - (lastDrawn + 1)) <= 2)
        #expect(left[ids.subject.first ?? -1] == nil)
        await capturer.stopCapture()
    }

    @Test func detectionAtABoundedRate() async throws {
        // A face moving every frame; detection at most 10 times a second of a 30 fps camera.
        let walker = SyntheticScene.Face(id: 5, enter: 0, leave: 1000, from: (0.3, 0.5), to: (0.7, 0.5), size: 0.3)
        let (backend, capturer, sink, stream) = try await started(SyntheticScene(faces: [walker]))
        capturer.setFaceDetection(FaceDetectionOptions(maxRate: 10))
        var events = stream.makeAsyncIterator()
        var changedIn: [Int] = []
        for n in 0..<30 {
            let e = try await step(backend, capturer, &events)
            if e.contains(where: { if case .facesChanged = $0 { return true }; return false }) { changedIn.append(n) }
        }
        // Frames are 1/30 s apart (manual pacing): every third frame is looked at.
        #expect(changedIn == Array(stride(from: 0, to: 30, by: 3)), "facesChanged in frames \(changedIn)")
        // Frames in between carry the faces last found.
        #expect(sink.all.suffix(30).allSatisfy { $0.faces?.count == 1 })
        await capturer.stopCapture()
    }

    @Test func exposureOnTheFaceBrightensADarkFaceInABrightScene() async throws {
        // Someone with dark skin against the window; the middle of the picture is the lit wall.
        let face = SyntheticScene.Face(id: 3, from: (0.78, 0.42), size: 0.5, skin: [60, 42, 34])
        let (backend, capturer, sink, stream) = try await started(SyntheticScene(illuminance: 400, faces: [face]))
        var events = stream.makeAsyncIterator()
        for _ in 0..<3 { _ = try await step(backend, capturer, &events) }
        let centred = try #require(sink.all.last)
        let box = try #require(centred.faces?.first)
        let before = skinLuma(centred, box)

        let pointSet = capturer.events()
        await capturer.setExposurePolicy(.faces)
        _ = try await step(backend, capturer, &events)
        // The capturer points exposure at the face on a task of its own: wait for that event.
        var point: NormalizedPoint?
        if case .controlChanged(.exposurePoint(let p)) = await waitFor(pointSet, {
            if case .controlChanged(.exposurePoint) = $0 { return true }
            return false
        }) { point = p }
        for _ in 0..<2 { _ = try await step(backend, capturer, &events) }
        let onFace = try #require(sink.all.last)
        let after = skinLuma(onFace, try #require(onFace.faces?.first))
        print("face metering: skin luma \(before) centre-weighted → \(after) on the face (point \(point.map(\.description) ?? "-"), box \(box.bounds))")
        #expect(after >= 1.3 * before)
        // The point is the face's centre, in sensor coordinates (landscape, not mirrored).
        let p = try #require(point)
        #expect(abs(p.x - 0.8) < 0.03 && abs(p.y - box.bounds.midY) < 0.03)
        await capturer.setExposurePolicy(nil)
        await capturer.stopCapture()
    }
}
