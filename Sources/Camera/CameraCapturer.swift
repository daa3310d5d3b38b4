import Foundation
import Media
import Locks

/// A camera as a `VideoCapturer`: device model, format choice, controls clamped to the device and
/// reported as set, rotation from the device orientation, mirroring, switching cameras while
/// streaming, stills, and restart after an interruption — the same on every backend (V4L2, the
/// synthetic camera, AVFoundation).
///
/// Control operations (start, stop, switch, settings) run one at a time on the capturer's own
/// serial executor, like the reference app's capture queue; frames go straight from the backend's
/// thread through one conversion (to `preferredOutputPixelFormat`, mirrored when asked) to the
/// delegate.
public final class CameraCapturer: VideoCapturer, Sendable {
    public let backend: any CameraBackend
    let controller: CameraController
    let framePath = Locked(FramePath())
    let faceState = Locked(FaceState())
    private let listeners = Broadcast<CameraEvent>(replaysLast: false, buffering: .bufferingNewest(256))

    struct FramePath {
        var delegate: (any VideoCapturerDelegate)?
        /// Frames from streams of older generations (before a switch or restart) are dropped.
        var generation: UInt64 = 0
        var position: CameraPosition = .external
        var rotation: VideoRotation = .r0
        var mirror: MirrorMode = .auto
        var outputFormat: PixelFormat = .i420
        var photoWaiters: [(id: UInt64, continuation: CheckedContinuation<VideoFrame, any Error>)] = []
        var framesDelivered: UInt64 = 0
        var policy: ExposurePolicy?
        var policyBand: Int?
        var policyPending = false
        var exposure: (@Sendable () -> (iso: Double, duration: Double)?)?
        var lastFrameSize: (width: Int, height: Int)?
    }


    /// How long to wait between attempts to reopen a device that failed.
    public let restartInterval: Duration

    public init(backend: any CameraBackend, delegate: (any VideoCapturerDelegate)? = nil,
                restartInterval: Duration = .milliseconds(500)) {
        self.backend = backend
        self.restartInterval = restartInterval
        self.controller = CameraController(backend: backend, restartInterval: restartInterval)
        framePath.withLock { $0.delegate = delegate }
        controller.setOwner(self)
    }

    deinit {
        controller.stopImmediately()
        // The face worker waits for frames on a thread of its own: end it with the capturer.
        faceState.withLock { $0.worker }?.stop()
        listeners.finish()
    }

    // MARK: - Configuration

    public var delegate: (any VideoCapturerDelegate)? {
        get { framePath.withLock { $0.delegate } }
        set { framePath.withLock { $0.delegate = newValue } }
    }

    /// Pixel format frames are delivered in (I420 by default: what encoders take).
    public var preferredOutputPixelFormat: PixelFormat {
        get { framePath.withLock { $0.outputFormat } }
        set { framePath.withLock { $0.outputFormat = newValue } }
    }

    /// Mirroring (default: the front camera is mirrored, others are not).
    public var mirrorMode: MirrorMode {
        get { framePath.withLock { $0.mirror } }
        set { framePath.withLock { $0.mirror = newValue } }
    }

    /// Whether frames are being mirrored now.
    public var isMirrored: Bool { framePath.withLock { $0.mirror.mirrors($0.position) } }

    /// The rotation frames carry now (from the device orientation and the camera's position).
    public var frameRotation: VideoRotation { framePath.withLock { $0.rotation } }

    /// Size of the last frame delivered (sensor orientation), nil before the first.
    public var lastFrameSize: (width: Int, height: Int)? { framePath.withLock { $0.lastFrameSize } }

    public var framesDelivered: UInt64 { framePath.withLock { $0.framesDelivered } }

    /// Photos waiting for the next frame.
    public var pendingPhotoCount: Int { framePath.withLock { $0.photoWaiters.count } }

    /// Turns the brightness-driven exposure policy on (`ExposurePolicy.reference` is the reference
    /// app's table) or off (nil; exposure goes back to continuous auto).
    /// With `metering: .faces` the exposure and focus point follow the largest face (face
    /// detection must be on, see `setFaceDetection`); the point goes back to the centre when the
    /// policy no longer meters on faces.
    public func setExposurePolicy(_ policy: ExposurePolicy?) async {
        let hadTable = framePath.withLock { p -> Bool in
            defer {
                p.policy = policy
                p.policyBand = nil
            }
            return !(p.policy?.bands.isEmpty ?? true)
        }
        if policy?.metering != .faces { await endFaceMetering() }
        if hadTable && policy?.bands.isEmpty ?? true { _ = try? await set(.exposureMode(.continuousAuto)) }
    }

    // MARK: - Devices

    /// Every camera the backend sees now.
    public func captureDevices() throws(CameraError) -> [CaptureDevice] { try backend.devices() }

    public func supportedFormats(for device: CaptureDevice) -> [CaptureFormat] { device.formats }

    /// Every size any camera offers, "WxH", sorted.
    public func availableVideoResolutions() throws(CameraError) -> [String] {
        FormatChooser.availableResolutions(try backend.devices())
    }

    /// The camera with this id, or the first at this position.
    public func device(id: String? = nil, position: CameraPosition? = nil) throws(CameraError) -> CaptureDevice {
        let all = try backend.devices()
        if let id {
            guard let d = all.first(where: { $0.id == id }) else {
                throw CameraError(.noSuchDevice, device: id, "no such camera (have: \(all.map(\.id).joined(separator: ", ")))")
            }
            return d
        }
        if let position {
            guard let d = all.first(where: { $0.position == position }) else {
                throw CameraError(.noSuchDevice, "no \(position.rawValue) camera (have: \(all.map(\.description).joined(separator: ", ")))")
            }
            return d
        }
        guard let d = all.first else { throw CameraError(.noSuchDevice, "no camera found by \(backend.name)") }
        return d
    }

    // MARK: - Running

    /// Starts `device` with exactly this format and rate. Starting again with the same arguments
    /// while running does nothing; other arguments restart the stream.
    public func startCapture(device: CaptureDevice, format: CaptureFormat, fps: Double) async throws(CameraError) {
        try await controller.start(device: device, format: format, fps: fps)
    }

    /// Starts `device` with the format nearest to `width`×`height` (see `FormatChooser.choose`),
    /// reporting a warning event for every way the request was not met.
    @discardableResult
    public func startCapture(device: CaptureDevice, width: Int, height: Int, fps: Double,
                             maxFrameRate: Double = FormatChooser.defaultMaxFrameRate) async throws(CameraError) -> FormatChoice {
        let choice: FormatChoice
        do {
            choice = try FormatChooser.choose(from: device.formats, width: width, height: height, fps: fps, maxFrameRate: maxFrameRate)
        } catch {
            throw CameraError(error.kind, device: device.id, error.message)
        }
        for w in choice.warnings { emit(.warning("\(device.id): \(w)")) }
        try await controller.start(device: device, format: choice.format, fps: choice.fps, requestedFPS: fps)
        return choice
    }

    /// Stops capturing. Idempotent; no frames are delivered after it returns.
    public func stopCapture() async { await controller.stop() }

    public var isRunning: Bool { get async { await controller.isRunning } }

    /// The device streaming now (or last started).
    public var currentDevice: CaptureDevice? { get async { await controller.device } }

    /// The format and rate in effect.
    public var currentFormat: (format: CaptureFormat, fps: Double)? { get async { await controller.currentFormat } }

    /// Every control's value as last set.
    public var controls: CameraControlState { get async { await controller.controls } }

    /// Switches to another camera while streaming, without touching the track or the delegate:
    /// the nearest format to the current size, the same rate, the controls the new camera has
    /// (each clamped again; a warning for each it lacks).
    public func switchCamera(to device: CaptureDevice) async throws(CameraError) {
        try await controller.switchCamera(to: device)
    }

    /// Switches to the first camera at `position` (front ↔ back, as the reference app's `rotateCamera`).
    public func switchCamera(position: CameraPosition) async throws(CameraError) {
        try await controller.switchCamera(to: device(position: position))
    }

    /// Applies one control: clamped to the device's range, then the value the device actually set
    /// is returned and reported as a `controlChanged` event. Before a start the setting is kept
    /// and applied when the camera opens.
    @discardableResult
    public func set(_ setting: CameraSetting) async throws(CameraError) -> CameraSetting {
        try await controller.apply(setting)
    }

    /// Meters (and focuses, when the device can) at a point tapped in a portrait preview of
    /// `previewWidth`×`previewHeight`, through the reference app's transform (front camera
    /// mirrored). Returns the sensor point used.
    @discardableResult
    public func setPointOfInterest(previewX: Double, previewY: Double, previewWidth: Double, previewHeight: Double) async throws(CameraError) -> NormalizedPoint {
        try await controller.setPointOfInterest(previewX: previewX, previewY: previewY, previewWidth: previewWidth, previewHeight: previewHeight)
    }

    /// Changes the frame rate while running (highest the format allows ≤ `fps`); returns it.
    @discardableResult
    public func setFrameRate(_ fps: Double) async throws(CameraError) -> Double {
        try await controller.setFrameRate(fps)
    }

    /// How the device is held: sets the rotation frames carry (see `DeviceOrientation.frameRotation`).
    public func setDeviceOrientation(_ orientation: DeviceOrientation) async {
        await controller.setOrientation(orientation)
    }

    /// A still while streaming, with the stream's rotation and mirroring: at the device's full
    /// resolution when `fullResolution` and the backend can take one without stopping the stream,
    /// else the next streamed frame. The stream keeps running either way.
    public func takePhoto(fullResolution: Bool = true, timeout: Duration = .seconds(3)) async throws(CameraError) -> VideoFrame {
        if fullResolution, let still = try await controller.fullResolutionStill() { return still }
        guard await controller.isRunning else {
            throw CameraError(.notRunning, device: await controller.device?.id, "cannot take a photo: capture is not running")
        }
        let id = UInt64.random(in: 0 ... .max)
        let device = await controller.device?.id
        do {
            return try await withCheckedThrowingContinuation { (c: CheckedContinuation<VideoFrame, any Error>) in
                framePath.withLock { $0.photoWaiters.append((id, c)) }
                Task { [weak self] in
                    try? await Task.sleep(for: timeout)
                    self?.failPhoto(id: id, CameraError(.notRunning, device: device, "no frame arrived within \(timeout) for the photo"))
                }
            }
        } catch let e as CameraError {
            throw e
        } catch {
            throw CameraError(.io, device: device, "\(error)")
        }
    }

    private func failPhoto(id: UInt64, _ error: CameraError) {
        let c = framePath.withLock { p -> CheckedContinuation<VideoFrame, any Error>? in
            guard let i = p.photoWaiters.firstIndex(where: { $0.id == id }) else { return nil }
            return p.photoWaiters.remove(at: i).continuation
        }
        c?.resume(throwing: error)
    }

    func failAllPhotos(_ error: CameraError) {
        let waiters = framePath.withLock { p in
            defer { p.photoWaiters = [] }
            return p.photoWaiters
        }
        for w in waiters { w.continuation.resume(throwing: error) }
    }

    // MARK: - Events

    /// A new stream of the events from now on (each call gets its own; the newest 256 wait for
    /// a reader). Frames go to the `VideoCapturerDelegate`; the events are warnings,
    /// interruptions, restarts, switches and controls.
    public func events() -> AsyncStream<CameraEvent> {
        listeners.stream()
    }

    func emit(_ event: CameraEvent) { listeners.yield(event) }
}
