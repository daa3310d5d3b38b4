import Camera
import Locks
import Media
import PeerConnection
import SessionSupport
import Synchronization
import Testing

/// Decoded frames with the synthetic camera each came from (called as loop work on a
/// `Simulation`: run the loop, then read `all`).
private final class CameraLog: VideoRenderer, Sendable {
    private let frames = Mutex<[(width: Int, height: Int, camera: CameraPosition?)]>([])
    func render(_ frame: VideoFrame) {
        let camera = SyntheticScene.identify(frame)
        frames.withLock { $0.append((frame.width, frame.height, camera)) }
    }
    var all: [(width: Int, height: Int, camera: CameraPosition?)] { frames.withLock { $0 } }

    /// How many frames matching `match` arrived after the first `from`.
    func count(from: Int, _ match: ((width: Int, height: Int, camera: CameraPosition?)) -> Bool) -> Int {
        all.dropFirst(from).filter(match).count
    }
}

/// The synthetic cameras (`SyntheticDevices`, pictures from `SyntheticScene`), each frame
/// rendered when the test calls `capture()` instead of on a paced thread of the stream's own:
/// frames enter the pipeline on the test's thread, one frame period of virtual time apart.
private final class SteppedSyntheticCameras: CameraBackend {
    let name = "synthetic-stepped"
    private let scene = SyntheticScene()
    private let live = Locked<SteppedSyntheticStream?>(nil)
    /// Frames captured so far, by every stream: their timestamps run on at 30 fps.
    private let captured = Locked<Int64>(0)

    func devices() throws(CameraError) -> [CaptureDevice] { SyntheticDevices.all }

    func open(_ device: CaptureDevice, format: CaptureFormat, fps: Double, controls: CameraControlState,
              sink: any CameraStreamSink) throws(CameraError) -> any CameraStream {
        guard let known = SyntheticDevices.all.first(where: { $0.id == device.id }), known.formats.contains(format) else {
            throw CameraError(.unsupported, device: device.id, "no synthetic camera \(device.id) with \(format)")
        }
        let stream = SteppedSyntheticStream(scene: scene, device: known, format: format, controls: controls, sink: sink)
        live.withLock { $0 = stream }
        return stream
    }

    /// One frame of the open stream into the capturer; false when none is open.
    @discardableResult
    func capture() -> Bool {
        let n = captured.withLock { n in
            defer { n += 1 }
            return n
        }
        return live.withLock { $0 }?.capture(timestampNs: n * 33_333_333) ?? false
    }
}

private final class SteppedSyntheticStream: CameraStream {
    private struct State {
        var controls: CameraControlState
        var orientation = DeviceOrientation.unknown
        var frameNumber: UInt64 = 0
        var stopped = false
    }
    private let scene: SyntheticScene
    private let device: CaptureDevice
    private let format: CaptureFormat
    private let pixelFormat: PixelFormat
    private let sink: any CameraStreamSink
    private let state: Locked<State>

    init(scene: SyntheticScene, device: CaptureDevice, format: CaptureFormat, controls: CameraControlState,
         sink: any CameraStreamSink) {
        self.scene = scene
        self.device = device
        self.format = format
        self.sink = sink
        pixelFormat = format.pixelFormat == .bgra ? .bgra : .nv12VideoRange
        state = Locked(State(controls: controls))
    }

    func capture(timestampNs: Int64) -> Bool {
        guard let (controls, orientation, number) = state.withLock({ s -> (CameraControlState, DeviceOrientation, UInt64)? in
            guard !s.stopped else { return nil }
            defer { s.frameNumber += 1 }
            return (s.controls, s.orientation, s.frameNumber)
        }) else { return false }
        sink.cameraStream(didCapture: scene.render(device: device, width: format.width, height: format.height, format: pixelFormat,
                                                   controls: controls, orientation: orientation, timestampNs: timestampNs,
                                                   frameNumber: number))
        return true
    }

    func apply(_ setting: CameraSetting) throws(CameraError) -> CameraSetting {
        let checked = try device.capabilities.clamp(setting, device: device.id)
        state.withLock { $0.controls.record(checked) }
        return checked
    }

    /// Frames come when the test captures them, at whatever rate it does.
    func setFrameRate(_ fps: Double) throws(CameraError) -> Double { fps }

    /// A still at the device's largest size, as the synthetic camera takes it.
    func capturePhoto() throws(CameraError) -> VideoFrame? {
        let (controls, orientation) = state.withLock { ($0.controls, $0.orientation) }
        guard let largest = device.formats.max(by: { $0.width * $0.height < $1.width * $1.height }) else { return nil }
        return scene.render(device: device, width: largest.width, height: largest.height, format: pixelFormat,
                            controls: controls, orientation: orientation)
    }

    func deviceOrientationChanged(_ orientation: DeviceOrientation) {
        guard orientation.frameRotation(for: device.position) != nil else { return }   // no "up": keep the last
        state.withLock { $0.orientation = orientation }
    }

    func stop() { state.withLock { $0.stopped = true } }
}

@Suite("A camera over a PeerConnection")
struct CameraStreamingTests {
    @Test("switching cameras and sizes while streaming: same track, no renegotiation, the encoder follows")
    func switchWhileStreaming() async throws {
        let sim = Simulation()
        let a = try sim.peer(Simulation.fullSizeStart), b = try sim.peer()
        let source = VideoSource()
        let track = VideoTrack(id: "camera", source: source)
        let t = try await a.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
        t.sender.replaceTrack(track)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let remote = try #require(b.transceivers.first?.receiver.videoTrack)
        let log = CameraLog()
        remote.addRenderer(log)
        let offerBefore = a.localDescription?.sdp

        let cameras = SteppedSyntheticCameras()
        /// Captures at 30 fps of virtual time until `count` decoded frames after the first
        /// `from` match (10 s at most).
        func stream(from: Int, count: Int, _ match: ((width: Int, height: Int, camera: CameraPosition?)) -> Bool) -> Bool {
            for _ in 0..<300 where log.count(from: from, match) < count {
                cameras.capture()
                sim.advance(by: .nanoseconds(33_333_333))
            }
            return sim.run(within: .seconds(1)) { log.count(from: from, match) >= count }
        }

        let capturer = CameraCapturer(backend: cameras, delegate: source)
        try await capturer.startCapture(device: SyntheticDevices.front, width: 640, height: 480, fps: 30)
        #expect(stream(from: 0, count: 10) { $0.width == 640 && $0.height == 480 && $0.camera == .front })

        var mark = log.all.count
        try await capturer.switchCamera(position: .back)
        #expect(stream(from: mark, count: 10) { $0.width == 640 && $0.camera == .back })

        // A photo mid-stream: the stream goes on.
        mark = log.all.count
        let photo = try await capturer.takePhoto()
        #expect(photo.width == 3840 && photo.height == 2160)
        #expect(stream(from: mark, count: 10) { $0.camera == .back })

        // Another size on the same track: the encoder is rebuilt for it and the receiver follows.
        mark = log.all.count
        try await capturer.startCapture(device: SyntheticDevices.back, width: 1280, height: 720, fps: 30)
        #expect(stream(from: mark, count: 10) { $0.width == 1280 && $0.height == 720 && $0.camera == .back })

        #expect(log.all.count == 40, "every frame captured was decoded, across the switches: \(log.all.count) of 40")
        #expect(a.localDescription?.sdp == offerBefore, "no renegotiation")
        #expect(a.transceivers.count == 1 && b.transceivers.first?.receiver.videoTrack === remote)
        await capturer.stopCapture()
        #expect(!cameras.capture(), "no stream once capture stopped")
        await a.close()
        await b.close()
    }
}
