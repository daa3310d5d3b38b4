import Capture
import Media
import Locks

/// Virtual front and back cameras (`SyntheticDevices`) whose picture obeys every control
/// (`SyntheticScene`), so controls are testable end to end and demos have a camera anywhere.
/// Tests and demos can also unplug a device, take its permission away, dim the room, change
/// the colour of the light or the faces in the room. Streams report the faces they draw
/// (`CameraStream.faceDetector`).
public final class SyntheticCameraBackend: CameraBackend {
    public let name = "synthetic"

    /// How streams make frames: at their frame rate on a thread of their own, or only when a
    /// test calls `step(_:)`, on the caller's thread (frame-exact tests without waiting).
    public enum Pacing: Sendable { case realTime, manual }

    private struct State {
        var scene: SyntheticScene
        var disconnected: Set<String> = []
        var denied: Set<String> = []
        var streams: [WeakStream] = []
    }

    private struct WeakStream {
        weak var stream: SyntheticCameraStream?
    }

    private let state: Locked<State>
    public let pacing: Pacing

    public init(scene: SyntheticScene = SyntheticScene(), pacing: Pacing = .realTime) {
        state = Locked(State(scene: scene))
        self.pacing = pacing
    }

    /// The faces in front of the front camera (they show from the next frame on).
    public var faces: [SyntheticScene.Face] {
        get { state.withLock { $0.scene.faces } }
        set { state.withLock { $0.scene.faces = newValue } }
    }

    /// With `.manual` pacing: renders and delivers `count` frames on every open stream, now, on
    /// this thread. False when no stream is open.
    @discardableResult
    public func step(_ count: Int = 1) -> Bool {
        let streams = state.withLock { s in
            s.streams.removeAll { $0.stream == nil }
            return s.streams.compactMap(\.stream)
        }
        guard pacing == .manual, !streams.isEmpty else { return false }
        for _ in 0..<max(count, 0) {
            for stream in streams { _ = stream.tick(nowNs: nil) }
        }
        return true
    }

    /// How bright the world is, in lux (a dark room: 1–5).
    public var sceneIlluminance: Double {
        get { state.withLock { $0.scene.illuminance } }
        set { state.withLock { $0.scene.illuminance = newValue } }
    }

    /// Colour temperature of the light, in kelvin.
    public var illuminantTemperature: Double {
        get { state.withLock { $0.scene.illuminantTemperature } }
        set { state.withLock { $0.scene.illuminantTemperature = newValue } }
    }

    /// The scene as streams render it now.
    public var scene: SyntheticScene { state.withLock { $0.scene } }

    public func devices() throws(CameraError) -> [CaptureDevice] {
        let gone = state.withLock { $0.disconnected }
        return SyntheticDevices.all.filter { !gone.contains($0.id) }
    }

    /// Unplugs a device: it leaves `devices()`, and its running streams fail once with
    /// `.deviceLost` at their next frame.
    public func disconnect(_ id: String) {
        _ = state.withLock { $0.disconnected.insert(id) }
    }

    /// Plugs a device back in (streams that failed stay failed; open it again).
    public func reconnect(_ id: String) {
        _ = state.withLock { $0.disconnected.remove(id) }
    }

    /// Takes away (or gives back) permission to open a device.
    public func denyPermission(_ id: String, _ deny: Bool = true) {
        state.withLock { s in
            if deny { s.denied.insert(id) } else { s.denied.remove(id) }
        }
    }

    func isConnected(_ id: String) -> Bool { state.withLock { !$0.disconnected.contains(id) } }

    public func open(_ device: CaptureDevice, format: CaptureFormat, fps: Double, controls: CameraControlState,
                     sink: any CameraStreamSink) throws(CameraError) -> any CameraStream {
        let (gone, denied) = state.withLock { ($0.disconnected.contains(device.id), $0.denied.contains(device.id)) }
        guard let known = SyntheticDevices.all.first(where: { $0.id == device.id }), !gone else {
            throw CameraError(.noSuchDevice, device: device.id, "no synthetic camera \(device.id) is connected")
        }
        if denied {
            throw CameraError(.permissionDenied, device: known.id,
                              "permission denied: this process may not open \(known.name) (\(known.id))")
        }
        guard let offered = known.formats.first(where: {
            $0.width == format.width && $0.height == format.height && $0.pixelFormat == format.pixelFormat
        }) else {
            throw CameraError(.unsupported, device: known.id, "\(known.name) has no format \(format.sizeDescription) \(format.pixelFormat.rawValue)")
        }
        guard fps.isFinite, fps > 0, offered.frameRateRanges.contains(where: { $0.contains(fps) }) else {
            throw CameraError(.invalidArgument, device: known.id, "\(known.name) cannot stream \(offered.sizeDescription) at \(fps) fps")
        }
        let stream = SyntheticCameraStream(backend: self, device: known, format: offered, fps: fps, controls: controls, sink: sink)
        if pacing == .realTime { try stream.start() }
        state.withLock { $0.streams.append(WeakStream(stream: stream)) }
        return stream
    }
}

/// A running synthetic camera: renders on its own paced thread, takes control changes at any
/// time (they show from the next frame on).
final class SyntheticCameraStream: CameraStream {
    private struct State {
        var controls: CameraControlState
        var rotation: VideoRotation = .r0
        var fps: Double
        var frameNumber: UInt64 = 0
        var thread: PacedThread?
        var stopped = false
        var failed = false
        /// The faces drawn in the last few frames, by timestamp: the stream's face metadata.
        var recentFaces: [(timestampNs: Int64, faces: [FaceObservation])] = []
    }

    private let backend: SyntheticCameraBackend
    let device: CaptureDevice
    let format: CaptureFormat
    private let pixelFormat: PixelFormat
    private let sink: any CameraStreamSink
    private let renderer = SyntheticRenderer()
    private let state: Locked<State>
    /// Where manually paced frames' timestamps start (they advance by one frame interval each).
    private let createdNs = CaptureClock.monotonicNs()
    let faceDetector: (any FaceDetector)?

    init(backend: SyntheticCameraBackend, device: CaptureDevice, format: CaptureFormat, fps: Double,
         controls: CameraControlState, sink: any CameraStreamSink) {
        self.backend = backend
        self.device = device
        self.format = format
        self.sink = sink
        switch format.pixelFormat {
        case .bgra: pixelFormat = .bgra
        case .i420: pixelFormat = .i420
        default: pixelFormat = .nv12VideoRange
        }
        var initial = controls
        if !device.capabilities.hasTorch { initial.torch = .off }
        state = Locked(State(controls: initial, fps: fps))
        faceDetector = device.position == .back ? nil : SyntheticFaceMetadata()
        (faceDetector as? SyntheticFaceMetadata)?.stream = self
    }

    deinit { stop() }

    func start() throws(CameraError) {
        let thread = makeThread(fps: state.withLock { $0.fps })
        state.withLock { $0.thread = thread }
        guard thread.start() else {
            state.withLock { $0.thread = nil }
            throw CameraError(.io, device: device.id, "could not start the rendering thread")
        }
    }

    private func makeThread(fps: Double) -> PacedThread {
        PacedThread(intervalNs: Int64((1e9 / fps).rounded())) { [weak self] _, now in
            self?.tick(nowNs: now) ?? false
        }
    }

    /// Renders and delivers one frame (timestamped `nowNs`, or one interval after the last when
    /// stepped by hand); false ends the thread.
    func tick(nowNs: Int64?) -> Bool {
        if !backend.isConnected(device.id) {
            let first = state.withLock { s -> Bool in
                defer { s.failed = true }
                return !s.failed && !s.stopped
            }
            if first { sink.cameraStream(didFail: CameraError(.deviceLost, device: device.id, "\(device.name) was disconnected")) }
            return false
        }
        guard let (controls, rotation, number, fps) = state.withLock({ s -> (CameraControlState, VideoRotation, UInt64, Double)? in
            guard !s.stopped, !s.failed else { return nil }
            defer { s.frameNumber += 1 }
            return (s.controls, s.rotation, s.frameNumber, s.fps)
        }) else { return false }
        let timestamp = nowNs ?? createdNs + Int64((Double(number) * 1e9 / fps).rounded())
        let scene = backend.scene
        let frame = renderer.render(scene: scene, device: device, width: format.width, height: format.height,
                                    format: pixelFormat, controls: controls, rotation: rotation,
                                    timestampNs: timestamp, frameNumber: number)
        let (cw, ch) = SyntheticScene.uprightSize(width: frame.width, height: frame.height, rotation: rotation)
        let faces = scene.observations(device: device, width: cw, height: ch, controls: controls, frameNumber: number)
        // `stop()` may have run while rendering: no frames after it returns.
        guard state.withLock({ s in
            s.recentFaces.append((timestamp, faces))
            if s.recentFaces.count > 8 { s.recentFaces.removeFirst() }
            return !s.stopped
        }) else { return false }
        sink.cameraStream(didCapture: frame)
        return true
    }

    func apply(_ setting: CameraSetting) throws(CameraError) -> CameraSetting {
        let checked = try device.capabilities.clamp(setting, device: device.id)
        let scene = backend.scene
        return try state.withLock { s throws(CameraError) -> CameraSetting in
            guard !s.stopped else { throw CameraError(.notRunning, device: device.id, "the stream is stopped") }
            let before = s.controls
            s.controls.record(checked)
            switch checked {
            case .exposureMode(.locked) where before.exposureMode == .continuousAuto:
                // Locking keeps what auto exposure chose last.
                let e = scene.exposure(device: device, width: format.width, height: format.height, controls: before,
                                       rotation: s.rotation, frameNumber: s.frameNumber)
                s.controls.iso = e.iso
                s.controls.exposureDuration = e.duration
            case .whiteBalanceMode(.locked) where before.whiteBalanceMode == .continuousAuto:
                s.controls.whiteBalanceTemperature = scene.illuminantTemperature
            case .focusMode(.locked) where before.focusMode != .locked:
                // Auto focus had the subject sharp; locking keeps the lens there.
                s.controls.focusPosition = SyntheticScene.subjectLensPosition
            default:
                break
            }
            return checked
        }
    }

    func setFrameRate(_ fps: Double) throws(CameraError) -> Double {
        guard fps.isFinite, fps > 0, let rate = format.bestFrameRate(atMost: fps) ?? (fps < format.minFrameRate ? format.minFrameRate : nil) else {
            throw CameraError(.invalidArgument, device: device.id, "frame rate \(fps) is not usable with \(format)")
        }
        let old = state.withLock { s -> PacedThread? in
            guard !s.stopped, !s.failed else { return nil }
            s.fps = rate
            return s.thread
        }
        guard let old else { throw CameraError(.notRunning, device: device.id, "the stream is stopped") }
        old.stop()   // joined (or detached when called from the sink on the stream's thread)
        let thread = makeThread(fps: rate)
        let started = state.withLock { s -> Bool in
            guard !s.stopped, !s.failed else { return false }
            s.thread = thread
            return true
        }
        if started { thread.start() }
        return rate
    }

    func capturePhoto() throws(CameraError) -> VideoFrame? {
        guard backend.isConnected(device.id) else { throw CameraError(.deviceLost, device: device.id, "\(device.name) was disconnected") }
        let (controls, rotation, stopped) = state.withLock { ($0.controls, $0.rotation, $0.stopped) }
        guard !stopped else { throw CameraError(.notRunning, device: device.id, "the stream is stopped") }
        guard let largest = device.formats.max(by: { $0.width * $0.height < $1.width * $1.height }) else { return nil }
        // A renderer of its own: the stream's thread keeps rendering meanwhile.
        return SyntheticRenderer().render(scene: backend.scene, device: device, width: largest.width, height: largest.height,
                                          format: pixelFormat, controls: controls, rotation: rotation,
                                          timestampNs: CaptureClock.monotonicNs(), frameNumber: state.withLock { $0.frameNumber })
    }

    /// What auto exposure chose (or the custom values), as a real camera's EXIF would say.
    func currentExposure() -> (iso: Double, duration: Double)? {
        let (controls, rotation, frame) = state.withLock { ($0.controls, $0.rotation, $0.frameNumber) }
        if controls.exposureMode == .custom || controls.exposureMode == .locked { return (controls.iso, controls.exposureDuration) }
        return backend.scene.exposure(device: device, width: format.width, height: format.height, controls: controls,
                                      rotation: rotation, frameNumber: frame)
    }

    /// The faces drawn in the frame with this timestamp (nil: not one of the last few frames).
    func faces(drawnAt timestampNs: Int64) -> [FaceObservation]? {
        state.withLock { s in s.recentFaces.last { $0.timestampNs == timestampNs }?.faces }
    }

    func deviceOrientationChanged(_ orientation: DeviceOrientation) {
        guard let rotation = orientation.frameRotation(for: device.position) else { return }   // no "up": keep the last
        state.withLock { $0.rotation = rotation }
    }

    func stop() {
        let thread = state.withLock { s -> PacedThread? in
            s.stopped = true
            defer { s.thread = nil }
            return s.thread
        }
        thread?.stop()
    }
}

/// The synthetic camera's face metadata: the faces its scene drew in a frame, exactly where they
/// were drawn, with the scene's face ids (what AVFoundation's metadata output is to a real camera).
final class SyntheticFaceMetadata: FaceDetector, @unchecked Sendable {
    // @unchecked: `stream` is set once, right after init, before the stream is shared.
    weak var stream: SyntheticCameraStream?
    let name = "synthetic"
    let analyzesPixels = false

    func detectFaces(in frame: VideoFrame) throws(CameraError) -> [FaceObservation] {
        guard let stream else { throw CameraError(.notRunning, "the synthetic stream is gone") }
        guard let faces = stream.faces(drawnAt: frame.timestampNs) else {
            throw CameraError(.invalidArgument, device: stream.device.id, "no such frame among the last drawn (timestamp \(frame.timestampNs) ns)")
        }
        return faces
    }
}
