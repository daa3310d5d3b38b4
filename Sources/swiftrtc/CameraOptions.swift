import Foundation
import SwiftRTC

/// The camera flags `photo` and `publish` share, parsed into a device choice and control settings.
struct CameraOptions {
    static let usage = """
      --source camera[:ID]  a camera (IDs from `swiftrtc devices`; synthetic:front and synthetic:back always exist)
      --position P          front or back (the first camera there)
      --exposure-bias EV    exposure target bias (auto exposure aims brighter +, darker -)
      --iso N               custom exposure gain           --exposure-time MS   custom exposure time
      --white-balance K     colour temperature in kelvin, or auto
      --zoom Z              zoom factor (1 = none)         --torch on|off|LEVEL   the light (LEVEL 0…1)
      --focus F             auto, continuous or a lens position 0 (near) … 1 (far)
      --orientation O       portrait, portrait-upside-down, landscape-left, landscape-right (frame rotation)
      --mirror M            auto (front camera only, default), on or off
      --exposure-policy     brightness-driven ISO/exposure/frame-rate table (the reference app's)
      --faces               report faces as they enter, leave and move (V4L2 cameras: OpenCV's detector;
                            the synthetic camera's visitor walks in and out every 5 s)
      --face-exposure       exposure and focus follow the largest face (with --faces)
    """

    var deviceID: String?
    var position: CameraPosition?
    var settings: [CameraSetting] = []
    var orientation: DeviceOrientation?
    var mirror: MirrorMode = .auto
    var exposurePolicy = false
    var faces = false
    var faceExposure = false

    /// Whether `--source` names a camera.
    static func isCamera(_ spec: String) -> Bool { spec == "camera" || spec.hasPrefix("camera:") }

    static func parse(_ a: inout Arguments, source: String) throws(UsageError) -> CameraOptions {
        var o = CameraOptions()
        if source.hasPrefix("camera:") { o.deviceID = String(source.dropFirst(7)) }
        let cmd = a.command
        o.position = try a.option("position", default: CameraPosition?.none) { CameraPosition(rawValue: $0) }
        if let v = try a.option("exposure-bias", default: Double?.none, finite) { o.settings.append(.exposureBias(v)) }
        if let v = try a.option("iso", default: Double?.none, positive) { o.settings.append(.iso(v)) }
        if let v = try a.option("exposure-time", default: Double?.none, positive) { o.settings.append(.exposureDuration(v / 1000)) }
        if let wb = try a.option("white-balance") {
            if wb == "auto" { o.settings.append(.whiteBalanceMode(.continuousAuto)) } else if let k = positive(wb) {
                o.settings.append(.whiteBalanceTemperature(k))
            } else { throw UsageError("\(cmd): --white-balance \"\(wb)\" is not valid (kelvin or auto)") }
        }
        if let v = try a.option("zoom", default: Double?.none, positive) { o.settings.append(.zoom(v)) }
        if let t = try a.option("torch") {
            switch t {
            case "on": o.settings.append(.torch(.on))
            case "off": o.settings.append(.torch(.off))
            default:
                guard let l = Double(t), (0...1).contains(l) else { throw UsageError("\(cmd): --torch \"\(t)\" is not valid (on, off or 0…1)") }
                o.settings.append(.torch(.level(l)))
            }
        }
        if let f = try a.option("focus") {
            switch f {
            case "auto": o.settings.append(.focusMode(.autoFocus))
            case "continuous": o.settings.append(.focusMode(.continuousAuto))
            default:
                guard let p = Double(f), (0...1).contains(p) else { throw UsageError("\(cmd): --focus \"\(f)\" is not valid (auto, continuous or 0…1)") }
                o.settings.append(.focusPosition(p))
            }
        }
        o.orientation = try a.option("orientation", default: DeviceOrientation?.none, parseOrientation)
        o.mirror = try a.option("mirror", default: MirrorMode.auto) { MirrorMode(rawValue: $0) }
        o.exposurePolicy = a.flag("exposure-policy")
        o.faces = a.flag("faces")
        o.faceExposure = a.flag("face-exposure")
        if o.faceExposure && !o.faces { throw UsageError("\(cmd): --face-exposure needs --faces") }
        return o
    }

    /// The machine's cameras: V4L2 devices, then the synthetic front and back cameras.
    static let synthetic = SyntheticCameraBackend()
    static let backend = MultiCameraBackend([V4L2CameraBackend(), synthetic])

    /// A capturer for these options, printing its warnings, interruptions and switches (and,
    /// with --faces, faces entering and leaving, and where they are at most once a second).
    func makeCapturer(delegate: any VideoCapturerDelegate, command: String) -> CameraCapturer {
        let capturer = CameraCapturer(backend: Self.backend, delegate: delegate)
        capturer.mirrorMode = mirror
        if faces {
            Self.synthetic.faces = [.subject, .visitor]
            capturer.setFaceDetection(FaceDetectionOptions(imageDetector: Self.imageDetector(command: command), maxRate: 10))
        }
        let events = capturer.events()   // ends when the capturer goes away
        Task {
            var lastFaces = 0.0
            for await event in events {
                switch event {
                case .warning, .interrupted, .resumed, .switched, .exposurePolicy, .faceEntered, .faceLeft:
                    say("\(command): camera \(event)")
                case .facesChanged where now() - lastFaces >= 1:
                    lastFaces = now()
                    say("\(command): camera \(event)")
                default: break
                }
            }
        }
        return capturer
    }

    /// OpenCV's detector for cameras that report no faces themselves; without its cascade a
    /// warning says what to install and those cameras report none.
    static func imageDetector(command: String) -> (any FaceDetector)? {
        do {
            return try CascadeFaceDetector()
        } catch {
            printError("\(command): warning: \(error); V4L2 cameras will report no faces")
            return nil
        }
    }

    /// Starts `capturer` on the chosen camera at the nearest format, then applies the controls,
    /// printing each as the device actually set it.
    func start(_ capturer: CameraCapturer, width: Int, height: Int, fps: Double, command: String) async throws {
        let device = try pickDevice(capturer)
        if let orientation { await capturer.setDeviceOrientation(orientation) }
        let choice = try await capturer.startCapture(device: device, width: width, height: height, fps: fps)
        say("\(command): camera \(device.id) \"\(device.name)\" \(choice.format.sizeDescription) \(choice.format.pixelFormat.rawValue) at \(fmtNumber(choice.fps)) fps")
        try await Self.apply(settings, to: capturer, command: command)
        switch (exposurePolicy, faceExposure) {
        case (true, true): await capturer.setExposurePolicy(ExposurePolicy.reference.metering(.faces))
        case (true, false): await capturer.setExposurePolicy(.reference)
        case (false, true): await capturer.setExposurePolicy(.faces)
        case (false, false): break
        }
    }

    /// Applies `settings` in order, printing each as the camera actually set it.
    static func apply(_ settings: [CameraSetting], to capturer: CameraCapturer, command: String) async throws {
        for s in settings {
            let actual = try await capturer.set(s)
            say("\(command): camera \(actual)\(actual == s ? "" : " (asked: \(s))")")
        }
    }

    func pickDevice(_ capturer: CameraCapturer) throws -> CaptureDevice {
        let device: CaptureDevice
        if let deviceID { device = try capturer.device(id: deviceID) } else if let position {
            device = try capturer.device(position: position)
        } else {
            device = try capturer.device()
        }
        // A camera we could not open (no permission) must not go unnoticed behind the synthetic one.
        for e in Self.backend.listingErrors { printError("warning: \(e)") }
        return device
    }
}

/// A photo file: PNG for .png, JPEG for .jpg/.jpeg (upright, as the encoders write frames).
enum PhotoFile {
    static func isSupported(_ path: String) -> Bool { ["png", "jpg", "jpeg"].contains((path as NSString).pathExtension.lowercased()) }

    /// Encodes by the path's extension and writes; returns the file's size in bytes.
    static func write(_ photo: VideoFrame, to path: String, quality: Int = 90) throws -> Int {
        let png = (path as NSString).pathExtension.lowercased() == "png"
        let bytes = png ? PNGEncoder.encode(photo) : try JPEGEncoder.encode(photo, quality: quality)
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return bytes.count
    }
}

func parseOrientation(_ text: String) -> DeviceOrientation? {
    switch text {
    case "portrait": return .portrait
    case "portrait-upside-down": return .portraitUpsideDown
    case "landscape-left": return .landscapeLeft
    case "landscape-right": return .landscapeRight
    default: return nil
    }
}

private func finite(_ s: String) -> Double? { Double(s).flatMap { $0.isFinite ? $0 : nil } }
private func positive(_ s: String) -> Double? { Double(s).flatMap { $0.isFinite && $0 > 0 ? $0 : nil } }

func fmtNumber(_ v: Double) -> String { v == v.rounded() ? String(Int(v)) : String(format: "%.3g", v) }
