import Camera
import Capture
import Foundation
import Media
import Render
import TestSupport
import Testing

// OpenCV's cascade detector on real pictures: a photograph Debian ships (matplotlib's sample
// portrait of Grace Hopper, package python-matplotlib-data) fed through a recorded V4L2 webcam,
// and pictures with no face in them.

/// The portrait and where its face is (hand-marked from the hat brim to the chin, cheek to cheek, in its
/// 512x600 pixels).
enum Portrait {
    static let path = "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg"
    static let face = PixelRect(x: 160, y: 135, width: 212, height: 183)

    static func load() throws -> VideoFrame {
        guard let data = FileManager.default.contents(atPath: path) else {
            throw MediaError("\(path) is missing: apt-get install python-matplotlib-data")
        }
        return try JPEGDecoder.decode([UInt8](data))
    }

    /// The face's box in a frame of the recorded camera's format, where `show(_:)` put the photo.
    static func faceBox(in pix: V4L2PixFormat, photo: VideoFrame) -> NormalizedRect {
        let at = RecordedV4L2Picture.placement(width: photo.width, height: photo.height, in: pix)
        let sx = Double(at.width) / Double(photo.width), sy = Double(at.height) / Double(photo.height)
        return NormalizedRect(x: (Double(at.x) + Double(face.x) * sx) / Double(pix.width),
                              y: (Double(at.y) + Double(face.y) * sy) / Double(pix.height),
                              width: Double(face.width) * sx / Double(pix.width), height: Double(face.height) * sy / Double(pix.height))
    }
}

/// Frames a V4L2 stream delivers, straight from its sink.
private final class StreamFrames: CameraStreamSink {
    let frames = Monitor([VideoFrame]())
    func cameraStream(didCapture frame: VideoFrame) { frames.withLock { $0.append(frame) } }
    func cameraStream(didFail error: CameraError) {}
}

@Suite(.serialized) struct CascadeFaceDetectorTests {
    /// Opens the recorded webcam at `w`×`h` YUYV and takes `count` frames of what it shows.
    func frames(showing picture: VideoFrame?, _ w: Int, _ h: Int, count: Int = 1) throws -> (frames: [VideoFrame], pix: V4L2PixFormat) {
        let camera = try RecordedV4L2Camera(json: V4L2Recording.uvcWebcamJSON)
        camera.show(picture)
        camera.allowFrames(count)
        let backend = V4L2CameraBackend(nodes: [.init(path: camera.path) { () throws(V4L2Error) in try camera.open() }])
        let device = try #require(try backend.devices().first)
        let format = try #require(device.formats.first { $0.width == w && $0.height == h && $0.pixelFormat == .yuyv })
        let sink = StreamFrames()
        let stream = try backend.open(device, format: format, fps: format.maxFrameRate, controls: CameraControlState(), sink: sink)
        defer { stream.stop() }
        // The recorded camera makes exactly as many frames as allowed.
        #expect(sink.frames.wait(until: { $0.count >= count }))
        return (Array(sink.frames.value.prefix(count)), camera.currentFormat)
    }

    @Test func findsTheFaceInAPhotographThroughARecordedWebcam() throws {
        let detector = try CascadeFaceDetector()
        let photo = try Portrait.load()
        let (shot, pix) = try frames(showing: photo, 640, 480)
        let faces = try detector.detectFaces(in: shot[0])
        let truth = Portrait.faceBox(in: pix, photo: photo)
        #expect(faces.count == 1, "faces: \(faces.map(\.bounds))")
        let iou = faces.first.map { $0.bounds.iou(truth) } ?? 0
        print("portrait through the webcam: found \(faces.map(\.bounds)), marked \(truth), IoU \(iou)")
        #expect(iou >= 0.5, "found \(faces.map(\.bounds)) vs marked \(truth): IoU \(iou)")
    }

    @Test func findsNoFaceInTestPatterns() throws {
        let detector = try CascadeFaceDetector()
        let (ramps, _) = try frames(showing: nil, 640, 480)
        #expect(try detector.detectFaces(in: ramps[0]).isEmpty)
        for n in [0, 45, 90] {
            let buffer = VideoFrameBuffer(format: .i420, width: 1280, height: 720)
            TestPattern.render(frameNumber: UInt32(n), wallClockMs: 0, width: 1280, height: 720, into: buffer)
            #expect(try detector.detectFaces(in: VideoFrame(buffer: buffer, timestampNs: 0)).isEmpty, "test pattern frame \(n)")
        }
    }
}

@Suite(.serialized) struct CascadeFaceDetectionInTheCapturerTests {
    @Test func faceEventsFromARecordedWebcamAndNoFrameHeldUpForDetection() async throws {
        let photo = try Portrait.load()
        let camera = try RecordedV4L2Camera(json: V4L2Recording.uvcWebcamJSON)
        camera.show(photo)
        camera.allowFrames(0)
        let backend = V4L2CameraBackend(nodes: [.init(path: camera.path) { () throws(V4L2Error) in try camera.open() }])
        let frames = FrameSink()
        let capturer = CameraCapturer(backend: backend, delegate: frames)
        capturer.setFaceDetection(FaceDetectionOptions(imageDetector: try CascadeFaceDetector()))
        let events = capturer.events()
        try await capturer.startCapture(device: capturer.device(), width: 640, height: 480, fps: 30)
        // The recorded camera makes frames as fast as they are taken: far faster than detection.
        camera.allowFrames(90)
        let entered = await waitFor(events) { if case .faceEntered = $0 { return true }; return false }
        #expect(await frames.frames.wait(until: { $0.count >= 90 }), "90 frames did not all arrive")
        let all = frames.all
        await capturer.stopCapture()

        guard case .faceEntered(let face) = entered else { Issue.record("no faceEntered event"); return }
        let truth = Portrait.faceBox(in: camera.currentFormat, photo: photo)
        #expect(face.bounds.iou(truth) >= 0.5, "entered \(face), marked \(truth)")
        #expect(all.count == 90)
        // Frames after the first detection carry the face, with the same id throughout.
        let carried = all.compactMap(\.faces).filter { !$0.isEmpty }
        #expect(!carried.isEmpty && carried.allSatisfy { $0.map(\.id) == [face.id] })
        print("cascade in the capturer: \(all.count) frames delivered, \(carried.count) carried the face (\(face))")
    }

    @Test func aFrameTheDetectorCannotReadIsAWarningAndCaptureGoesOn() async throws {
        let backend = FakeBackend()
        let sink = FrameSink()
        let capturer = CameraCapturer(backend: backend, delegate: sink)
        capturer.setFaceDetection(FaceDetectionOptions(imageDetector: try CascadeFaceDetector()))
        let events = capturer.events()
        try await capturer.startCapture(device: FakeBackend.front, width: 640, height: 480, fps: 30)
        let stream = try #require(backend.lastStream)
        stream.sink.cameraStream(didCapture: VideoFrame(buffer: makeNV12(width: 16, height: 16, y: 128), timestampNs: 0))
        let warning = await waitFor(events) { if case .warning = $0 { return true }; return false }
        #expect(warning.map { "\($0)".contains("too small to look for faces") } == true, "\(String(describing: warning))")
        stream.push()
        #expect(sink.count == 2)
        await capturer.stopCapture()
    }

    @Test func aMissingOrBrokenCascadeIsAClearError() throws {
        #expect(throws: CameraError.self) { try CascadeFaceDetector(cascadePath: "/nonexistent/cascade.xml") }
        do {
            _ = try CascadeFaceDetector(cascadePath: "/etc/hostname")
            Issue.record("a text file loaded as a cascade")
        } catch {
            #expect(error.kind == .unsupported && error.message.contains("/etc/hostname"), "\(error)")
        }
        #expect(FileManager.default.isReadableFile(atPath: try CascadeFaceDetector.installedCascade()))
    }
}
