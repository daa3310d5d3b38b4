import Foundation
import Media
import Testing
@testable import Camera

/// Collects what a stream delivers; tests wait on it with a generous timeout (never sleep).
final class V4L2FrameCollector: CameraStreamSink, @unchecked Sendable {
    // @unchecked: state guarded by `condition`.
    private let condition = NSCondition()
    private var _frames: [VideoFrame] = []
    private var _failures: [CameraError] = []
    var onFrame: (@Sendable (VideoFrame) -> Void)?

    func cameraStream(didCapture frame: VideoFrame) {
        onFrame?(frame)
        condition.lock(); _frames.append(frame); condition.broadcast(); condition.unlock()
    }
    func cameraStream(didFail error: CameraError) {
        condition.lock(); _failures.append(error); condition.broadcast(); condition.unlock()
    }
    var frames: [VideoFrame] { condition.lock(); defer { condition.unlock() }; return _frames }
    var failures: [CameraError] { condition.lock(); defer { condition.unlock() }; return _failures }

    /// Waits until `done` holds, at most `timeout` seconds; returns whether it held.
    func wait(timeout: TimeInterval = 20, until done: (_ frames: Int, _ failures: Int) -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout)
        condition.lock(); defer { condition.unlock() }
        while !done(_frames.count, _failures.count) {
            if !condition.wait(until: deadline) { return done(_frames.count, _failures.count) }
        }
        return true
    }
}

enum V4L2Fixtures {
    static func webcam(path: String = "/dev/video0") throws -> RecordedV4L2Camera {
        try RecordedV4L2Camera(json: V4L2Recording.uvcWebcamJSON, path: path)
    }
    static func phone(path: String = "/dev/video2") throws -> RecordedV4L2Camera {
        try RecordedV4L2Camera(json: V4L2Recording.phoneSensorJSON, path: path)
    }
    static func backend(_ cameras: [RecordedV4L2Camera]) -> V4L2CameraBackend {
        V4L2CameraBackend(nodes: cameras.map { cam in
            V4L2CameraBackend.Node(path: cam.path) { () throws(V4L2Error) in try cam.open() }
        })
    }
    /// Sequence number a recorded raw frame carries in its first four luma samples.
    static func sequence(_ frame: VideoFrame) -> UInt32 {
        (0..<4).reduce(UInt32(0)) { $0 | UInt32(frame.buffer.luma(x: $1, y: 0)) << (8 * UInt32($1)) }
    }
    static func format(_ d: CaptureDevice, _ pf: CameraPixelFormat, _ w: Int, _ h: Int) throws -> CaptureFormat {
        try #require(d.formats.first { $0.pixelFormat == pf && $0.width == w && $0.height == h })
    }
}

@Suite struct V4L2EnumerationTests {
    @Test func webcamFormatsAreExactlyAsRecorded() throws {
        let backend = V4L2Fixtures.backend([try V4L2Fixtures.webcam()])
        #expect(backend.name == "v4l2")
        let devices = try backend.devices()
        let d = try #require(devices.first)
        #expect(devices.count == 1)
        #expect(d.id == "/dev/video0" && d.name == "HD Pro Webcam C920" && d.position == .external)
        let yuyv = d.formats.filter { $0.pixelFormat == .yuyv }
        #expect(yuyv.map { "\($0.width)x\($0.height)" } == ["640x480", "800x600", "1280x720", "1920x1080"])
        #expect(yuyv[0].frameRateRanges.map(\.max) == [30, 24, 20, 15, 10, 7.5, 5])
        #expect(yuyv[0].frameRateRanges.allSatisfy { $0.min == $0.max })
        #expect(yuyv[3].frameRateRanges == [FrameRateRange(5)])
        let mjpeg = d.formats.filter { $0.pixelFormat == .mjpeg }
        #expect(mjpeg.map(\.width) == [640, 1280, 1920])
        #expect(mjpeg.allSatisfy { $0.maxFrameRate == 30 && $0.minFrameRate == 5 })
        #expect(!d.formats.contains { $0.pixelFormat == .nv12 })
    }

    @Test func phoneStepwiseSizesAndContinuousRates() throws {
        let d = try #require(try V4L2Fixtures.backend([try V4L2Fixtures.phone()]).devices().first)
        #expect(d.position == .back)   // "Back Camera imx258"
        let nv12 = d.formats.filter { $0.pixelFormat == .nv12 }
        #expect(nv12.map { "\($0.width)x\($0.height)" } == ["320x240", "640x480", "1280x720", "1920x1080", "2560x1440", "3840x2160", "4208x3120"])
        #expect(nv12.allSatisfy { $0.frameRateRanges == [FrameRateRange(min: 1, max: 30)] })
        let i420 = d.formats.filter { $0.pixelFormat == .i420 }
        #expect(i420.count == 2)
        #expect(i420[0].frameRateRanges == [FrameRateRange(min: 1, max: 60)])
        #expect(i420[1].frameRateRanges == [FrameRateRange(30), FrameRateRange(15)])
        // 10-bit Bayer has no mapping: skipped.
        #expect(d.formats.allSatisfy { $0.width <= 4208 })
        #expect(!d.formats.contains { $0.width == 4208 && $0.pixelFormat != .nv12 })
    }

    @Test func capabilitiesInModelUnits() throws {
        let webcam = try #require(try V4L2Fixtures.backend([try V4L2Fixtures.webcam()]).devices().first).capabilities
        let exposure = try #require(webcam.ranges[.exposureDuration])
        #expect(abs(exposure.min - 0.0003) < 1e-12 && abs(exposure.max - 0.2047) < 1e-12 && abs(exposure.step - 0.0001) < 1e-12)
        #expect(webcam.ranges[.zoom] == ControlRange(min: 1, max: 5, step: 0.01, defaultValue: 1))
        #expect(webcam.ranges[.focusPosition] == ControlRange(min: 0, max: 1, step: 0.02, defaultValue: 1))
        #expect(webcam.ranges[.whiteBalanceTemperature] == ControlRange(min: 2000, max: 6500, step: 1, defaultValue: 4000))
        #expect(webcam.ranges[.iso]?.min == 100 && webcam.ranges[.iso]?.max == 1600)   // from gain 0…255
        #expect(webcam.ranges[.exposureBias] == nil && !webcam.hasTorch)
        #expect(webcam.exposureModes == [.continuousAuto, .custom, .locked])
        #expect(webcam.whiteBalanceModes == [.continuousAuto, .locked])
        #expect(webcam.focusModes == [.continuousAuto, .locked])

        let phone = try #require(try V4L2Fixtures.backend([try V4L2Fixtures.phone()]).devices().first).capabilities
        #expect(phone.ranges[.exposureBias] == ControlRange(min: -2, max: 2, step: 0.5, defaultValue: 0))
        #expect(phone.ranges[.iso] == ControlRange(min: 100, max: 3200, step: 0, defaultValue: 100))
        #expect(phone.hasTorch && phone.ranges[.torchLevel]?.defaultValue == 0.5)
        #expect(phone.focusModes == [.continuousAuto, .locked, .autoFocus])
    }

    @Test func metadataNodesAndUnopenableNodes() throws {
        let cam = try V4L2Fixtures.webcam()
        let denied = try V4L2Fixtures.webcam(path: "/dev/video4")
        denied.failOpen(with: EACCES)
        let metadata = RecordedV4L2Camera(recording: try V4L2Recording.decode(json: V4L2Recording.uvcWebcamJSON.replacingOccurrences(
            of: "\"sParmWhileStreaming\"", with: "\"metadataOnly\": true, \"sParmWhileStreaming\"")), path: "/dev/video1")
        let backend = V4L2Fixtures.backend([cam, metadata, denied])
        #expect(try backend.devices().map(\.id) == ["/dev/video0"])
        // With nothing else listable, the permission problem is the answer.
        do {
            _ = try V4L2Fixtures.backend([denied]).devices()
            Issue.record("expected permissionDenied")
        } catch {
            #expect(error.kind == .permissionDenied && error.device == "/dev/video4")
            #expect(error.message == "cannot open /dev/video4: Permission denied (add the user to the 'video' group)")
        }
    }
}
