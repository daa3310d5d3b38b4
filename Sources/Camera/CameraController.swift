import Media
import Locks

/// The capturer's control side: one operation at a time (start, stop, switch, settings,
/// restarts), like the reference app's capture queue and its condition. Never on the frame path.
actor CameraController {
    let backend: any CameraBackend
    let restartInterval: Duration
    /// Reachable without hopping onto the actor: the capturer's deinit stops the stream with it.
    nonisolated let live = Locked<(any CameraStream)?>(nil)
    nonisolated private let ownerRef = Locked<WeakCapturer>(WeakCapturer())

    private(set) var device: CaptureDevice?
    private var format: CaptureFormat?
    private var fps: Double = 0
    /// The rate the user asked for (the exposure policy may run slower for long exposures).
    private var requestedFPS: Double = 30
    private(set) var controls = CameraControlState()
    private var orientation: DeviceOrientation = .unknown
    /// The user wants frames (stays true while an interrupted device is waited for).
    private var running = false
    private var generation: UInt64 = 0
    private var restartTask: Task<Void, Never>?

    init(backend: any CameraBackend, restartInterval: Duration) {
        self.backend = backend
        self.restartInterval = restartInterval
    }

    nonisolated func setOwner(_ owner: CameraCapturer) { ownerRef.withLock { $0.value = owner } }
    nonisolated var capturer: CameraCapturer? { ownerRef.withLock { $0.value } }
    private var owner: CameraCapturer? { capturer }

    var isRunning: Bool { running }
    var currentFormat: (format: CaptureFormat, fps: Double)? { format.map { ($0, fps) } }

    // MARK: start / stop

    func start(device: CaptureDevice, format: CaptureFormat, fps: Double, requestedFPS: Double? = nil) throws(CameraError) {
        guard device.formats.contains(format) else {
            throw CameraError(.unsupported, device: device.id, "has no format \(format)")
        }
        guard fps.isFinite, fps > 0, format.frameRateRanges.contains(where: { $0.contains(fps) }) else {
            throw CameraError(.unsupported, device: device.id, "cannot capture \(format.sizeDescription) at \(fps) fps (it can: \(format.frameRateRanges.map(\.description).joined(separator: ", ")))")
        }
        if running, self.device?.id == device.id, self.format == format, self.fps == fps, live.withLock({ $0 != nil }) { return }
        closeStream()
        let previous = (self.device, self.format, self.fps, self.requestedFPS)
        self.device = device
        self.format = format
        self.fps = fps
        self.requestedFPS = requestedFPS ?? fps
        do {
            try openStream()
        } catch {
            (self.device, self.format, self.fps, self.requestedFPS) = previous
            running = false
            throw error
        }
        running = true
        owner?.emit(.started(device: device.id, format: format, fps: fps))
    }

    func stop() {
        let wasRunning = running
        running = false
        restartTask?.cancel()
        restartTask = nil
        closeStream()
        owner?.failAllPhotos(CameraError(.notRunning, device: device?.id, "capture stopped before the photo was taken"))
        if wasRunning, let id = device?.id { owner?.emit(.stopped(device: id)) }
    }

    /// For the capturer's deinit: no actor hop, just stop the stream.
    nonisolated func stopImmediately() {
        let s = live.withLock { l in
            defer { l = nil }
            return l
        }
        s?.stop()
    }

    private func closeStream() {
        generation &+= 1
        let g = generation
        owner?.framePath.withLock { $0.generation = g }
        stopImmediately()
        owner?.streamChanged(faceDetector: nil, generation: g)
    }

    /// Opens the current device with the current format, rate and controls (clamped again).
    private func openStream() throws(CameraError) {
        guard let device, let format else { throw CameraError(.notRunning, "no camera chosen") }
        let clamped = clampedControls(for: device)
        generation &+= 1
        let g = generation
        let rotation = orientation.frameRotation(for: device.position)
        owner?.framePath.withLock { p in
            p.generation = g
            p.position = device.position
            if let rotation { p.rotation = rotation }
            p.policyBand = nil
            p.policyPending = false
        }
        let sink = StreamSink(controller: self, generation: g)
        let stream: any CameraStream
        do {
            stream = try backend.open(device, format: format, fps: fps, controls: clamped, sink: sink)
        } catch {
            throw error.device == nil ? CameraError(error.kind, device: device.id, error.message) : error
        }
        controls = clamped
        stream.deviceOrientationChanged(orientation)
        owner?.streamChanged(faceDetector: stream.faceDetector, generation: g)
        live.withLock { $0 = stream }
        owner?.framePath.withLock { $0.exposure = { [weak stream] in stream?.currentExposure() } }
    }

    /// The control state with every value clamped to `device`; what the device lacks is dropped,
    /// with a warning when it was set to something other than the default.
    private func clampedControls(for device: CaptureDevice) -> CameraControlState {
        var out = CameraControlState()
        let defaults = Set(CameraControlState().settings)
        for s in controls.settings {
            do {
                out.record(try device.capabilities.clamp(s, device: device.id))
            } catch {
                if !defaults.contains(s) { owner?.emit(.warning("\(device.id) \(error.message); \(s) not applied")) }
            }
        }
        return out
    }

    // MARK: failures and restarts

    nonisolated func streamFailed(generation g: UInt64, _ error: CameraError) {
        Task { await self.handleFailure(generation: g, error) }
    }

    private func handleFailure(generation g: UInt64, _ error: CameraError) {
        guard g == generation, running, let id = device?.id else { return }
        closeStream()
        owner?.failAllPhotos(CameraError(.deviceLost, device: id, "the camera was interrupted before the photo was taken"))
        owner?.emit(.interrupted(device: id, error: error))
        let waitingFor = generation
        restartTask?.cancel()
        restartTask = Task { await self.restartLoop(id: id, generation: waitingFor) }
    }

    /// Polls for the device to come back (unplugged and replugged, media services reset) and
    /// reopens it with the same format, rate and controls.
    private func restartLoop(id: String, generation g: UInt64) async {
        while !Task.isCancelled {
            try? await Task.sleep(for: restartInterval)
            // The capturer gone (deinit stopped its stream) means nobody wants the frames any more.
            guard running, generation == g, !Task.isCancelled, owner != nil else { return }
            guard let back = (try? backend.devices())?.first(where: { $0.id == id }) else { continue }
            device = back
            do {
                try openStream()
                restartTask = nil
                owner?.emit(.resumed(device: id))
                return
            } catch {
                continue
            }
        }
    }

    // MARK: switching

    func switchCamera(to newDevice: CaptureDevice) throws(CameraError) {
        guard running, let old = device, let oldFormat = format else {
            throw CameraError(.notRunning, device: newDevice.id, "cannot switch: capture is not running")
        }
        if newDevice.id == old.id { return }
        let choice: FormatChoice
        do {
            choice = try FormatChooser.choose(from: newDevice.formats, width: oldFormat.width, height: oldFormat.height,
                                              fps: requestedFPS, maxFrameRate: max(requestedFPS, FormatChooser.defaultMaxFrameRate))
        } catch {
            throw CameraError(error.kind, device: newDevice.id, error.message)
        }
        restartTask?.cancel()
        restartTask = nil
        closeStream()
        let oldFPS = fps
        device = newDevice
        format = choice.format
        fps = choice.fps
        do {
            try openStream()
        } catch {
            // Back to the camera that worked, so the track keeps its frames.
            device = old
            format = oldFormat
            fps = oldFPS
            try? openStream()
            throw error
        }
        for w in choice.warnings { owner?.emit(.warning("\(newDevice.id): \(w)")) }
        owner?.emit(.switched(from: old.id, to: newDevice.id))
    }

    // MARK: controls

    func apply(_ setting: CameraSetting) throws(CameraError) -> CameraSetting {
        guard let device else {
            controls.record(setting)
            return setting
        }
        let clamped = try device.capabilities.clamp(setting, device: device.id)
        var actual = clamped
        if let stream = live.withLock({ $0 }) {
            actual = try stream.apply(clamped)
        }
        controls.record(actual)
        owner?.emit(.controlChanged(actual))
        return actual
    }

    func setPointOfInterest(previewX: Double, previewY: Double, previewWidth: Double, previewHeight: Double) throws(CameraError) -> NormalizedPoint {
        guard let device else { throw CameraError(.notRunning, "no camera chosen for a point of interest") }
        guard previewWidth > 0, previewHeight > 0, previewX.isFinite, previewY.isFinite else {
            throw CameraError(.invalidArgument, device: device.id, "preview point (\(previewX), \(previewY)) in \(previewWidth)x\(previewHeight) is not a point in a picture")
        }
        let p = CameraGeometry.pointOfInterest(previewX: previewX, previewY: previewY, previewWidth: previewWidth,
                                               previewHeight: previewHeight, position: device.position)
        let caps = device.capabilities
        guard caps.exposurePointOfInterest || caps.focusPointOfInterest else {
            throw CameraError(.unsupported, device: device.id, "has no exposure or focus point of interest")
        }
        if caps.exposurePointOfInterest { _ = try apply(.exposurePoint(p)) }
        if caps.focusPointOfInterest { _ = try apply(.focusPoint(p)) }
        return p
    }

    func setFrameRate(_ requested: Double) throws(CameraError) -> Double {
        guard requested.isFinite, requested > 0 else {
            throw CameraError(.invalidArgument, device: device?.id, "frame rate \(requested) must be above 0")
        }
        requestedFPS = requested
        return try changeRate(to: requested)
    }

    private func changeRate(to requested: Double) throws(CameraError) -> Double {
        guard let format else { throw CameraError(.notRunning, "no camera chosen") }
        let rate = format.bestFrameRate(atMost: requested) ?? format.minFrameRate
        var actual = rate
        if let stream = live.withLock({ $0 }) { actual = try stream.setFrameRate(rate) }
        fps = actual
        owner?.emit(.frameRateChanged(actual))
        return actual
    }

    func setOrientation(_ o: DeviceOrientation) {
        orientation = o
        if let r = o.frameRotation(for: device?.position ?? .back) {
            owner?.framePath.withLock { $0.rotation = r }
        }
        live.withLock { $0 }?.deviceOrientationChanged(o)
    }

    /// The exposure policy moved to `band`: custom exposure from the band, rate limited by it.
    func applyPolicy(band: Int, brightness: Double, policy: ExposurePolicy) {
        defer { owner?.framePath.withLock { $0.policyPending = false } }
        guard running, let device else { return }
        let maxISO = device.capabilities.ranges[.iso]?.max ?? 800
        let s = policy.settings(band: band, maxISO: maxISO, requestedFPS: requestedFPS)
        do {
            let iso = try apply(.iso(s.iso))
            let duration = try apply(.exposureDuration(s.duration))
            let fps = try changeRate(to: s.fps)
            owner?.framePath.withLock { $0.policyBand = band }
            if case .iso(let i) = iso, case .exposureDuration(let d) = duration {
                owner?.emit(.exposurePolicy(band: band, brightness: brightness, iso: i, duration: d, fps: fps))
            }
        } catch {
            owner?.emit(.warning("exposure policy: \(error)"))
            owner?.framePath.withLock { $0.policy = nil }
        }
    }

    /// Points auto exposure and focus at `point` (sensor coordinates) where the camera can;
    /// false when it has neither point of interest or the camera refused.
    func meter(at point: NormalizedPoint) -> Bool {
        guard running, let caps = device?.capabilities else { return false }
        do {
            if caps.exposurePointOfInterest { _ = try apply(.exposurePoint(point)) }
            if caps.focusPointOfInterest { _ = try apply(.focusPoint(point)) }
        } catch {
            owner?.emit(.warning("face metering: \(error)"))
            return false
        }
        return caps.exposurePointOfInterest || caps.focusPointOfInterest
    }

    // MARK: stills

    func fullResolutionStill() throws(CameraError) -> VideoFrame? {
        guard running, let stream = live.withLock({ $0 }) else {
            throw CameraError(.notRunning, device: device?.id, "cannot take a photo: capture is not running")
        }
        guard let raw = try stream.capturePhoto(), let owner else { return nil }
        return owner.transform(raw)
    }
}

struct WeakCapturer: @unchecked Sendable {
    weak var value: CameraCapturer?
}

/// Hands one stream's frames and failure to the capturer, tagged with the stream's generation so
/// a stream replaced by a switch or restart can't deliver into the new one.
final class StreamSink: CameraStreamSink {
    private let controller: CameraController
    let generation: UInt64

    init(controller: CameraController, generation: UInt64) {
        self.controller = controller
        self.generation = generation
    }

    func cameraStream(didCapture frame: VideoFrame) {
        controller.capturer?.deliver(frame, generation: generation)
    }

    func cameraStream(didFail error: CameraError) {
        controller.streamFailed(generation: generation, error)
    }
}

