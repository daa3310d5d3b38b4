import Camera
import Locks
import Media
import TestSupport

/// A backend the test drives by hand: frames are pushed from the test's own thread, the "driver"
/// rounds exposure to 100 µs like V4L2, and devices can vanish and come back.
final class FakeBackend: CameraBackend {
    let name = "fake"
    struct State {
        var present: Set<String>
        var deny: Set<String> = []
        var opened: [String] = []
        var streams: [FakeStream] = []
    }
    let state: Locked<State>
    let all: [CaptureDevice]

    init(devices: [CaptureDevice] = [FakeBackend.front, FakeBackend.back]) {
        all = devices
        state = Locked(State(present: Set(devices.map(\.id))))
    }

    func devices() throws(CameraError) -> [CaptureDevice] {
        let present = state.withLock { $0.present }
        return all.filter { present.contains($0.id) }
    }

    func open(_ device: CaptureDevice, format: CaptureFormat, fps: Double, controls: CameraControlState,
              sink: any CameraStreamSink) throws(CameraError) -> any CameraStream {
        let (present, denied) = state.withLock { ($0.present.contains(device.id), $0.deny.contains(device.id)) }
        guard present else { throw CameraError(.noSuchDevice, device: device.id, "is not connected") }
        guard !denied else { throw CameraError(.permissionDenied, device: device.id, "cannot open \(device.id): Permission denied") }
        let s = FakeStream(device: device, format: format, fps: fps, controls: controls, sink: sink)
        state.withLock {
            $0.opened.append(device.id)
            $0.streams.append(s)
        }
        return s
    }

    var opened: [String] { state.withLock { $0.opened } }
    var lastStream: FakeStream? { state.withLock { $0.streams.last } }
    func setPresent(_ id: String, _ present: Bool) {
        state.withLock { if present { $0.present.insert(id) } else { $0.present.remove(id) } }
    }
    func deny(_ id: String) { state.withLock { _ = $0.deny.insert(id) } }

    static let caps = CameraCapabilities(
        ranges: [.exposureBias: ControlRange(min: -8, max: 8, defaultValue: 0),
                 .iso: ControlRange(min: 34, max: 2176, defaultValue: 100),
                 .exposureDuration: ControlRange(min: 0.0001, max: 0.5, defaultValue: 1.0 / 30),
                 .whiteBalanceTemperature: ControlRange(min: 2500, max: 8000, step: 1, defaultValue: 5500),
                 .zoom: ControlRange(min: 1, max: 4, defaultValue: 1),
                 .focusPosition: ControlRange(min: 0, max: 1, defaultValue: 1)],
        exposureModes: [.continuousAuto, .locked, .custom], focusModes: [.continuousAuto, .autoFocus, .locked],
        whiteBalanceModes: [.continuousAuto, .locked], exposurePointOfInterest: true, focusPointOfInterest: true)

    static let front = CaptureDevice(id: "fake:front", name: "Fake Front", position: .front, formats: [
        CaptureFormat(width: 1280, height: 720, pixelFormat: .nv12, frameRateRanges: [FrameRateRange(min: 1, max: 30)]),
        CaptureFormat(width: 640, height: 480, pixelFormat: .nv12, frameRateRanges: [FrameRateRange(min: 1, max: 30)]),
    ], capabilities: caps)

    static let back: CaptureDevice = {
        var caps = FakeBackend.caps
        caps.ranges[.zoom] = ControlRange(min: 1, max: 16, defaultValue: 1)
        caps.ranges[.torchLevel] = ControlRange(min: 0, max: 1, defaultValue: 1)
        return CaptureDevice(id: "fake:back", name: "Fake Back", position: .back, formats: [
            CaptureFormat(width: 1920, height: 1080, pixelFormat: .nv12, frameRateRanges: [FrameRateRange(min: 1, max: 30)]),
            CaptureFormat(width: 1280, height: 720, pixelFormat: .nv12, frameRateRanges: [FrameRateRange(min: 1, max: 60)]),
        ], capabilities: caps)
    }()
}

final class FakeStream: CameraStream {
    let device: CaptureDevice
    let format: CaptureFormat
    let sink: any CameraStreamSink
    struct State {
        var fps: Double
        var applied: [CameraSetting] = []
        var controls: CameraControlState
        var stopped = false
        var orientation: DeviceOrientation = .unknown
        var photo: VideoFrame?
        var exposure: (iso: Double, duration: Double)? = (100, 1.0 / 30)
    }
    let state: Locked<State>

    init(device: CaptureDevice, format: CaptureFormat, fps: Double, controls: CameraControlState, sink: any CameraStreamSink) {
        self.device = device
        self.format = format
        self.sink = sink
        state = Locked(State(fps: fps, controls: controls))
    }

    func apply(_ setting: CameraSetting) throws(CameraError) -> CameraSetting {
        var actual = setting
        // Like a V4L2 driver: exposure time in whole 100 µs units.
        if case .exposureDuration(let d) = setting { actual = .exposureDuration((d * 10000).rounded() / 10000) }
        state.withLock {
            $0.applied.append(actual)
            $0.controls.record(actual)
        }
        return actual
    }

    func setFrameRate(_ fps: Double) throws(CameraError) -> Double {
        state.withLock { $0.fps = fps }
        return fps
    }

    func capturePhoto() throws(CameraError) -> VideoFrame? { state.withLock { $0.photo } }
    func deviceOrientationChanged(_ orientation: DeviceOrientation) { state.withLock { $0.orientation = orientation } }
    func currentExposure() -> (iso: Double, duration: Double)? { state.withLock { $0.exposure } }
    func stop() { state.withLock { $0.stopped = true } }

    var stopped: Bool { state.withLock { $0.stopped } }
    var applied: [CameraSetting] { state.withLock { $0.applied } }
    var fps: Double { state.withLock { $0.fps } }

    /// Pushes an NV12 frame of the stream's size with luma `y`, the left quarter at `leftY`.
    func push(y: UInt8 = 128, leftY: UInt8? = nil, topY: UInt8? = nil, timestampNs: Int64 = 0) {
        sink.cameraStream(didCapture: VideoFrame(buffer: makeNV12(width: format.width, height: format.height, y: y, leftY: leftY, topY: topY),
                                                 timestampNs: timestampNs))
    }

    func fail() { sink.cameraStream(didFail: CameraError(.deviceLost, device: device.id, "unplugged")) }
}

func makeNV12(width: Int, height: Int, y: UInt8, leftY: UInt8? = nil, topY: UInt8? = nil) -> VideoFrameBuffer {
    let b = VideoFrameBuffer(format: .nv12VideoRange, width: width, height: height)
    let yp = b.planePointer(0), s = b.strides[0]
    for row in 0 ..< height {
        for x in 0 ..< width {
            var v = y
            if let leftY, x < width / 4 { v = leftY }
            if let topY, row < height / 4 { v = topY }
            yp[row * s + x] = v
        }
    }
    let uv = b.planePointer(1)
    for i in 0 ..< b.strides[1] * ((height + 1) / 2) { uv[i] = 128 }
    return b
}

/// Collects delivered frames; a test waits on `frames` for the ones it expects.
final class FrameSink: VideoCapturerDelegate {
    let frames = Monitor([VideoFrame]())
    func capturer(_ capturer: any VideoCapturer, didCapture frame: VideoFrame) { frames.withLock { $0.append(frame) } }
    var all: [VideoFrame] { frames.value }
    var count: Int { frames.withLock { $0.count } }

    /// Waits until `n` more frames than now have been delivered.
    func more(_ n: Int) async -> Bool {
        let target = count + n
        return await frames.wait(until: { $0.count >= target })
    }
}

/// The first event matching `predicate`; nil after 10 s (a generous bound so a broken capturer
/// fails the test instead of hanging it; passing runs never wait for it).
func waitFor(_ events: AsyncStream<CameraEvent>, _ predicate: @escaping @Sendable (CameraEvent) -> Bool) async -> CameraEvent? {
    await withDeadline(.seconds(10)) {
        for await e in events where predicate(e) { return e }
        return nil
    }
}
