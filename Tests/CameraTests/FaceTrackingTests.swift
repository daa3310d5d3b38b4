import Camera
import Media
import Locks
import Testing

/// A detector that reports what the test scripted for the next frame, without ids.
private final class ScriptedDetector: FaceDetector {
    let name = "scripted"
    let analyzesPixels = false
    let next = Locked<[NormalizedRect]>([])
    func detectFaces(in frame: VideoFrame) throws(CameraError) -> [FaceObservation] {
        next.withLock { $0 }.map { FaceObservation(bounds: $0) }
    }
}

@Suite struct FaceTrackingTests {
    @Test func idsFollowOverlapAndEventsComeInOrder() async throws {
        let backend = FakeBackend()
        let detector = ScriptedDetector()
        let sink = FrameSink()
        let capturer = CameraCapturer(backend: backend, delegate: sink)
        capturer.mirrorMode = .off
        capturer.setFaceDetection(FaceDetectionOptions(imageDetector: detector))
        var events = capturer.events().makeAsyncIterator()
        try await capturer.startCapture(device: FakeBackend.back, width: 1280, height: 720, fps: 30)
        let stream = try #require(backend.lastStream)

        /// Pushes a frame in which the detector sees `boxes`; returns its faces and events (a
        /// control set right after the frame marks the end of its events; nothing is waited for).
        func frame(_ boxes: [NormalizedRect]) async throws -> (faces: [Face], events: [CameraEvent]) {
            detector.next.withLock { $0 = boxes }
            stream.push()
            try await capturer.set(.zoom(1))
            var out: [CameraEvent] = []
            while let e = await events.next(), e != .controlChanged(.zoom(1)) {
                if case .started = e { continue }
                out.append(e)
            }
            return (sink.all.last?.faces ?? [], out)
        }

        let a = NormalizedRect(x: 0.1, y: 0.2, width: 0.2, height: 0.3)
        var r = try await frame([a])
        #expect(r.faces.count == 1 && r.events.count == 2)
        let id = try #require(r.faces.first?.id)
        // Moving a little each frame: the same face.
        for k in 1...5 {
            r = try await frame([NormalizedRect(x: a.x + 0.02 * Double(k), y: a.y, width: a.width, height: a.height)])
            #expect(r.faces.map(\.id) == [id] && r.events == [.facesChanged(r.faces)])
        }
        // A second face elsewhere enters; the first stays.
        let b = NormalizedRect(x: 0.6, y: 0.5, width: 0.2, height: 0.3)
        r = try await frame([NormalizedRect(x: a.x + 0.1, y: a.y, width: a.width, height: a.height), b])
        let second = try #require(r.faces.first { $0.id != id })
        #expect(r.faces.count == 2 && r.events.first == .faceEntered(second))
        // The first leaves; then the second jumps too far to be the same face: it leaves, a new one enters.
        r = try await frame([b])
        #expect(r.events.first.map { if case .faceLeft(let f) = $0 { return f.id == id }; return false } == true)
        r = try await frame([NormalizedRect(x: 0.05, y: 0.05, width: 0.1, height: 0.1)])
        #expect(r.faces.count == 1 && r.faces[0].id != second.id && r.faces[0].id != id)
        #expect(r.events.count == 3)
        await capturer.stopCapture()
    }
}
