// The same camera model on iOS (the reference app's platform): AVCaptureSession + AVCaptureDevice.
// Exposure, ISO, white-balance gains, zoom and torch are iOS-only AVFoundation API. Our build and CI
// machines are Linux, where this file compiles to nothing; it has never been compiled here, so it
// is kept small and close to the AVFoundation documentation (see README, "Cameras").
#if canImport(AVFoundation) && os(iOS)
import AVFoundation
import CoreMedia
import CoreVideo
import Foundation
import Media
import Synchronization

public final class AVFoundationCameraBackend: CameraBackend {
    public let name = "avfoundation"
    public init() {}

    public func devices() throws(CameraError) -> [CaptureDevice] {
        var types: [AVCaptureDevice.DeviceType] = [.builtInWideAngleCamera]
        if #available(iOS 17.0, *) { types.append(.external) }
        let session = AVCaptureDevice.DiscoverySession(deviceTypes: types, mediaType: .video, position: .unspecified)
        return session.devices.map(Self.model)
    }

    static func model(_ d: AVCaptureDevice) -> CaptureDevice {
        let position: CameraPosition = d.position == .front ? .front : d.position == .back ? .back : .external
        var formats: [CaptureFormat] = []
        for f in d.formats {
            let dims = CMVideoFormatDescriptionGetDimensions(f.formatDescription)
            let sub = CMFormatDescriptionGetMediaSubType(f.formatDescription)
            let pixel: CameraPixelFormat
            switch sub {
            case kCVPixelFormatType_420YpCbCr8BiPlanarFullRange, kCVPixelFormatType_420YpCbCr8BiPlanarVideoRange: pixel = .nv12
            case kCVPixelFormatType_32BGRA: pixel = .bgra
            default: continue
            }
            let rates = f.videoSupportedFrameRateRanges.map { FrameRateRange(min: $0.minFrameRate, max: $0.maxFrameRate) }
            formats.append(CaptureFormat(width: Int(dims.width), height: Int(dims.height), pixelFormat: pixel, frameRateRanges: rates))
        }
        let af = d.activeFormat
        var ranges: [CameraControl: ControlRange] = [
            .exposureBias: ControlRange(min: Double(d.minExposureTargetBias), max: Double(d.maxExposureTargetBias), defaultValue: 0),
            .iso: ControlRange(min: Double(af.minISO), max: Double(af.maxISO), defaultValue: Double(d.iso)),
            .exposureDuration: ControlRange(min: af.minExposureDuration.seconds, max: af.maxExposureDuration.seconds,
                                            defaultValue: d.exposureDuration.seconds),
            .whiteBalanceTemperature: ControlRange(min: 2500, max: 10000, defaultValue: 5500),
            .zoom: ControlRange(min: 1, max: Double(af.videoMaxZoomFactor), defaultValue: 1),
            .focusPosition: ControlRange(min: 0, max: 1, defaultValue: Double(d.lensPosition)),
        ]
        if d.hasTorch { ranges[.torchLevel] = ControlRange(min: 0, max: 1, defaultValue: 1) }
        var caps = CameraCapabilities(ranges: ranges)
        if d.isExposureModeSupported(.continuousAutoExposure) { caps.exposureModes.insert(.continuousAuto) }
        if d.isExposureModeSupported(.locked) { caps.exposureModes.insert(.locked) }
        if d.isExposureModeSupported(.custom) { caps.exposureModes.insert(.custom) }
        if d.isFocusModeSupported(.continuousAutoFocus) { caps.focusModes.insert(.continuousAuto) }
        if d.isFocusModeSupported(.autoFocus) { caps.focusModes.insert(.autoFocus) }
        if d.isFocusModeSupported(.locked) { caps.focusModes.insert(.locked) }
        if d.isWhiteBalanceModeSupported(.continuousAutoWhiteBalance) { caps.whiteBalanceModes.insert(.continuousAuto) }
        if d.isWhiteBalanceModeSupported(.locked) { caps.whiteBalanceModes.insert(.locked) }
        caps.exposurePointOfInterest = d.isExposurePointOfInterestSupported
        caps.focusPointOfInterest = d.isFocusPointOfInterestSupported
        return CaptureDevice(id: d.uniqueID, name: d.localizedName, position: position, formats: formats, capabilities: caps)
    }

    public func open(_ device: CaptureDevice, format: CaptureFormat, fps: Double, controls: CameraControlState,
                     sink: any CameraStreamSink) throws(CameraError) -> any CameraStream {
        switch AVCaptureDevice.authorizationStatus(for: .video) {
        case .denied, .restricted:
            throw CameraError(.permissionDenied, device: device.id, "camera access is denied (Settings → Privacy → Camera)")
        default: break
        }
        guard let d = AVCaptureDevice(uniqueID: device.id) else {
            throw CameraError(.noSuchDevice, device: device.id, "is not connected")
        }
        let stream = AVFoundationCameraStream(device: d, id: device.id, sink: sink)
        try stream.start(format: format, fps: fps, controls: controls)
        return stream
    }
}

final class AVFoundationCameraStream: NSObject, CameraStream, AVCaptureVideoDataOutputSampleBufferDelegate,
                                      AVCaptureMetadataOutputObjectsDelegate, @unchecked Sendable {
    private let device: AVCaptureDevice
    private let id: String
    private let sink: any CameraStreamSink
    private let session = AVCaptureSession()
    private let output = AVCaptureVideoDataOutput()
    private let metadataOutput = AVCaptureMetadataOutput()
    private let faces = AVFoundationFaceMetadata()
    private let queue = DispatchQueue(label: "swiftrtc.camera.avfoundation")
    private var observers: [NSObjectProtocol] = []

    /// The faces the session's metadata output reports (the reference app's AVMetadataObjectTypeFace).
    var faceDetector: (any FaceDetector)? { faces }

    init(device: AVCaptureDevice, id: String, sink: any CameraStreamSink) {
        self.device = device
        self.id = id
        self.sink = sink
    }

    func start(format: CaptureFormat, fps: Double, controls: CameraControlState) throws(CameraError) {
        let input: AVCaptureDeviceInput
        do { input = try AVCaptureDeviceInput(device: device) } catch {
            throw CameraError(.io, device: id, "cannot open: \(error.localizedDescription)")
        }
        session.beginConfiguration()
        session.sessionPreset = .inputPriority
        guard session.canAddInput(input), session.canAddOutput(output) else {
            session.commitConfiguration()
            throw CameraError(.busy, device: id, "the capture session refused the camera")
        }
        session.addInput(input)
        output.alwaysDiscardsLateVideoFrames = true
        output.videoSettings = [kCVPixelBufferPixelFormatTypeKey as String:
            format.pixelFormat == .bgra ? kCVPixelFormatType_32BGRA : kCVPixelFormatType_420YpCbCr8BiPlanarFullRange]
        output.setSampleBufferDelegate(self, queue: queue)
        session.addOutput(output)
        // Face metadata, on the frames' queue. Its connection keeps the sensor's orientation, like
        // the video output's, so face bounds are in the raw frame's coordinates.
        if session.canAddOutput(metadataOutput) {
            session.addOutput(metadataOutput)
            if metadataOutput.availableMetadataObjectTypes.contains(.face) {
                metadataOutput.metadataObjectTypes = [.face]
                metadataOutput.setMetadataObjectsDelegate(self, queue: queue)
            }
        }
        session.commitConfiguration()
        try configure {
            if let f = device.formats.first(where: { Self.matches($0, format) }) { device.activeFormat = f }
            device.activeVideoMinFrameDuration = CMTime(value: 1000, timescale: CMTimeScale(fps * 1000))
            device.activeVideoMaxFrameDuration = device.activeVideoMinFrameDuration
        }
        for s in controls.settings { _ = try? apply(s) }
        let center = NotificationCenter.default
        observers.append(center.addObserver(forName: .AVCaptureSessionRuntimeError, object: session, queue: nil) { [weak self] n in
            guard let self else { return }
            let error = n.userInfo?[AVCaptureSessionErrorKey] as? AVError
            self.sink.cameraStream(didFail: CameraError(.deviceLost, device: self.id,
                                                        "capture session error: \(error?.localizedDescription ?? "unknown")"))
        })
        observers.append(center.addObserver(forName: .AVCaptureDeviceWasDisconnected, object: device, queue: nil) { [weak self] _ in
            guard let self else { return }
            self.sink.cameraStream(didFail: CameraError(.deviceLost, device: self.id, "the camera was disconnected"))
        })
        session.startRunning()
    }

    private static func matches(_ f: AVCaptureDevice.Format, _ format: CaptureFormat) -> Bool {
        let d = CMVideoFormatDescriptionGetDimensions(f.formatDescription)
        return Int(d.width) == format.width && Int(d.height) == format.height
            && f.videoSupportedFrameRateRanges.contains { $0.maxFrameRate >= format.maxFrameRate - 0.01 }
    }

    private func configure(_ body: () throws -> Void) throws(CameraError) {
        do {
            try device.lockForConfiguration()
            defer { device.unlockForConfiguration() }
            try body()
        } catch {
            throw CameraError(.io, device: id, "cannot configure: \(error.localizedDescription)")
        }
    }

    func apply(_ setting: CameraSetting) throws(CameraError) -> CameraSetting {
        try configure {
            switch setting {
            case .exposureMode(let m):
                device.exposureMode = m == .custom ? .custom : m == .locked ? .locked : .continuousAutoExposure
            case .exposureBias(let v): device.setExposureTargetBias(Float(v))
            case .iso(let v): device.setExposureModeCustom(duration: AVCaptureDevice.currentExposureDuration, iso: Float(v))
            case .exposureDuration(let v):
                device.setExposureModeCustom(duration: CMTime(seconds: v, preferredTimescale: 1_000_000), iso: AVCaptureDevice.currentISO)
            case .exposurePoint(let p):
                device.exposurePointOfInterest = CGPoint(x: p.x, y: p.y)
                if device.exposureMode != .custom { device.exposureMode = .continuousAutoExposure }
            case .focusMode(let m):
                device.focusMode = m == .locked ? .locked : m == .autoFocus ? .autoFocus : .continuousAutoFocus
            case .focusPosition(let v): device.setFocusModeLocked(lensPosition: Float(v))
            case .focusPoint(let p):
                device.focusPointOfInterest = CGPoint(x: p.x, y: p.y)
                if device.focusMode != .locked { device.focusMode = .autoFocus }
            case .whiteBalanceMode(let m):
                device.whiteBalanceMode = m == .locked ? .locked : .continuousAutoWhiteBalance
            case .whiteBalanceTemperature(let k):
                let gains = device.deviceWhiteBalanceGains(for: .init(temperature: Float(k), tint: 0))
                let maxGain = device.maxWhiteBalanceGain
                let clamped = AVCaptureDevice.WhiteBalanceGains(redGain: min(max(gains.redGain, 1), maxGain),
                                                                greenGain: min(max(gains.greenGain, 1), maxGain),
                                                                blueGain: min(max(gains.blueGain, 1), maxGain))
                device.setWhiteBalanceModeLocked(with: clamped)
            case .zoom(let z): device.videoZoomFactor = CGFloat(z)
            case .torch(let t):
                switch t {
                case .off: device.torchMode = .off
                case .on: device.torchMode = .on
                case .level(let l): try device.setTorchModeOn(level: Float(l))
                }
            }
        }
        return setting
    }

    func setFrameRate(_ fps: Double) throws(CameraError) -> Double {
        try configure {
            device.activeVideoMinFrameDuration = CMTime(value: 1000, timescale: CMTimeScale(fps * 1000))
            device.activeVideoMaxFrameDuration = device.activeVideoMinFrameDuration
        }
        return fps
    }

    func currentExposure() -> (iso: Double, duration: Double)? {
        (Double(device.iso), device.exposureDuration.seconds)
    }

    func stop() {
        for o in observers { NotificationCenter.default.removeObserver(o) }
        observers = []
        output.setSampleBufferDelegate(nil, queue: nil)
        metadataOutput.setMetadataObjectsDelegate(nil, queue: nil)
        if session.isRunning { session.stopRunning() }
        queue.sync {}
    }

    func metadataOutput(_ output: AVCaptureMetadataOutput, didOutput metadataObjects: [AVMetadataObject],
                        from connection: AVCaptureConnection) {
        let found = metadataObjects.compactMap { $0 as? AVMetadataFaceObject }
        let time = found.first.map { Int64($0.time.seconds * 1e9) } ?? Int64(CMClockGetTime(CMClockGetHostTimeClock()).seconds * 1e9)
        faces.record(found.map(AVFoundationFaceMetadata.Sighting.init), at: time)
    }

    func captureOutput(_ output: AVCaptureOutput, didOutput sampleBuffer: CMSampleBuffer, from connection: AVCaptureConnection) {
        guard let pixels = CMSampleBufferGetImageBuffer(sampleBuffer) else { return }
        CVPixelBufferLockBaseAddress(pixels, .readOnly)
        defer { CVPixelBufferUnlockBaseAddress(pixels, .readOnly) }
        let w = CVPixelBufferGetWidth(pixels), h = CVPixelBufferGetHeight(pixels)
        let buffer: VideoFrameBuffer?
        if CVPixelBufferGetPlaneCount(pixels) == 2,
           let y = CVPixelBufferGetBaseAddressOfPlane(pixels, 0), let uv = CVPixelBufferGetBaseAddressOfPlane(pixels, 1) {
            buffer = try? VideoFrameBuffer.copy(fromNV12: y.assumingMemoryBound(to: UInt8.self), strideY: CVPixelBufferGetBytesPerRowOfPlane(pixels, 0),
                                                uv: uv.assumingMemoryBound(to: UInt8.self), strideUV: CVPixelBufferGetBytesPerRowOfPlane(pixels, 1),
                                                width: w, height: h, fullRange: true)
        } else if let base = CVPixelBufferGetBaseAddress(pixels) {
            buffer = try? VideoFrameBuffer.copy(fromBGRA: base.assumingMemoryBound(to: UInt8.self), stride: CVPixelBufferGetBytesPerRow(pixels),
                                                width: w, height: h)
        } else {
            buffer = nil
        }
        guard let buffer else { return }
        let pts = CMSampleBufferGetPresentationTimeStamp(sampleBuffer)
        sink.cameraStream(didCapture: VideoFrame(buffer: buffer, timestampNs: Int64(pts.seconds * 1e9)))
    }
}
/// AVFoundation's face metadata as a `FaceDetector`: the sightings its metadata output delivered,
/// looked up by the frame's time, turned from the sensor's coordinates into the upright picture.
final class AVFoundationFaceMetadata: FaceDetector, @unchecked Sendable {
    // @unchecked: `recent` is guarded by `lock`.
    struct Sighting {
        var faceID: Int
        /// Sensor (device) coordinates, as AVMetadataFaceObject.bounds.
        var bounds: NormalizedRect
        var roll: Double?
        var yaw: Double?

        init(_ face: AVMetadataFaceObject) {
            faceID = face.faceID
            bounds = NormalizedRect(x: face.bounds.origin.x, y: face.bounds.origin.y,
                                    width: face.bounds.size.width, height: face.bounds.size.height)
            roll = face.hasRollAngle ? Double(face.rollAngle) : nil
            yaw = face.hasYawAngle ? Double(face.yawAngle) : nil
        }
    }

    let name = "avfoundation"
    let analyzesPixels = false
    private let lock = NSLock()
    private var recent: [(timeNs: Int64, faces: [Sighting])] = []

    func record(_ faces: [Sighting], at timeNs: Int64) {
        lock.lock()
        defer { lock.unlock() }
        recent.append((timeNs, faces))
        if recent.count > 8 { recent.removeFirst() }
    }

    func detectFaces(in frame: VideoFrame) throws(CameraError) -> [FaceObservation] {
        lock.lock()
        let sightings = (recent.last { $0.timeNs <= frame.timestampNs } ?? recent.last)?.faces ?? []
        lock.unlock()
        // Angles into (-180, 180]: AVFoundation gives yaw as 0…360 and roll in sensor terms.
        func wrapped(_ a: Double) -> Double {
            let r = a.truncatingRemainder(dividingBy: 360)
            return r > 180 ? r - 360 : r <= -180 ? r + 360 : r
        }
        return sightings.map { s in
            FaceObservation(trackingID: s.faceID, bounds: s.bounds.rotated(frame.rotation),
                            rollAngle: s.roll.map { wrapped($0 + Double(frame.rotation.rawValue)) }, yawAngle: s.yaw.map(wrapped))
        }
    }
}
#endif
