/// A point in the sensor's picture, each coordinate 0...1: (0, 0) is the top left of the
/// landscape sensor image with the home button on the right (AVFoundation's convention).
public struct NormalizedPoint: Sendable, Hashable, Codable, CustomStringConvertible {
    public var x: Double
    public var y: Double
    public init(x: Double, y: Double) {
        self.x = x
        self.y = y
    }
    public static let center = NormalizedPoint(x: 0.5, y: 0.5)

    /// Both coordinates clamped to 0...1 (NaN goes to the centre).
    public var clamped: NormalizedPoint {
        func c(_ v: Double) -> Double { v.isFinite ? min(max(v, 0), 1) : 0.5 }
        return NormalizedPoint(x: c(x), y: c(y))
    }

    public var description: String { "(\(fmt(x)), \(fmt(y)))" }
}

/// The torch (video light): off, on at the device's default level, or a level in 0...1.
public enum TorchSetting: Sendable, Hashable, CustomStringConvertible {
    case off, on
    case level(Double)

    public var description: String {
        switch self {
        case .off: return "off"
        case .on: return "on"
        case .level(let l): return fmt(l)
        }
    }
}

/// One control change. Numeric values are clamped to the device's range before they reach a
/// backend; the backend answers with what it actually set.
public enum CameraSetting: Sendable, Hashable, CustomStringConvertible {
    case exposureMode(ExposureMode)
    /// EV; continuous auto exposure aims this many stops brighter (+) or darker (-).
    case exposureBias(Double)
    /// Custom exposure with this ISO (the exposure duration stays as it is).
    case iso(Double)
    /// Custom exposure with this exposure time in seconds (the ISO stays as it is).
    case exposureDuration(Double)
    /// Where auto exposure meters (sensor coordinates, see `NormalizedPoint`).
    case exposurePoint(NormalizedPoint)
    case focusMode(FocusMode)
    /// Lens position 0 (near) ... 1 (far); locks focus there.
    case focusPosition(Double)
    case focusPoint(NormalizedPoint)
    case whiteBalanceMode(WhiteBalanceMode)
    /// Kelvin; locks white balance at this temperature.
    case whiteBalanceTemperature(Double)
    case zoom(Double)
    case torch(TorchSetting)

    /// The numeric control this setting needs, if any.
    public var control: CameraControl? {
        switch self {
        case .exposureBias: return .exposureBias
        case .iso: return .iso
        case .exposureDuration: return .exposureDuration
        case .whiteBalanceTemperature: return .whiteBalanceTemperature
        case .zoom: return .zoom
        case .focusPosition: return .focusPosition
        case .torch(let t): return t == .off ? nil : .torchLevel
        default: return nil
        }
    }

    public var description: String {
        switch self {
        case .exposureMode(let m): return "exposure mode \(m.rawValue)"
        case .exposureBias(let v): return "exposure bias \(fmt(v)) EV"
        case .iso(let v): return "ISO \(fmt(v))"
        case .exposureDuration(let v): return "exposure \(fmt(v * 1000)) ms"
        case .exposurePoint(let p): return "exposure point \(p)"
        case .focusMode(let m): return "focus mode \(m.rawValue)"
        case .focusPosition(let v): return "focus position \(fmt(v))"
        case .focusPoint(let p): return "focus point \(p)"
        case .whiteBalanceMode(let m): return "white balance \(m.rawValue)"
        case .whiteBalanceTemperature(let k): return "white balance \(fmt(k)) K"
        case .zoom(let z): return "zoom \(fmt(z))x"
        case .torch(let t): return "torch \(t)"
        }
    }
}

/// Every control's current value, as the capturer tracks it (and re-applies after a restart or
/// a camera switch).
public struct CameraControlState: Sendable, Hashable {
    public var exposureMode: ExposureMode = .continuousAuto
    public var exposureBias: Double = 0
    public var iso: Double = 100
    public var exposureDuration: Double = 1.0 / 30
    public var exposurePoint: NormalizedPoint = .center
    public var focusMode: FocusMode = .continuousAuto
    public var focusPosition: Double = 1
    public var focusPoint: NormalizedPoint = .center
    public var whiteBalanceMode: WhiteBalanceMode = .continuousAuto
    public var whiteBalanceTemperature: Double = 5500
    public var zoom: Double = 1
    public var torch: TorchSetting = .off

    public init() {}

    /// Records a setting the device accepted (with the side effects on modes a device has:
    /// ISO or duration switch exposure to custom, a lens position locks focus, a temperature
    /// locks white balance).
    public mutating func record(_ setting: CameraSetting) {
        switch setting {
        case .exposureMode(let m): exposureMode = m
        case .exposureBias(let v): exposureBias = v
        case .iso(let v): iso = v; exposureMode = .custom
        case .exposureDuration(let v): exposureDuration = v; exposureMode = .custom
        case .exposurePoint(let p): exposurePoint = p
        case .focusMode(let m): focusMode = m
        case .focusPosition(let v): focusPosition = v; focusMode = .locked
        case .focusPoint(let p): focusPoint = p
        case .whiteBalanceMode(let m): whiteBalanceMode = m
        case .whiteBalanceTemperature(let k): whiteBalanceTemperature = k; whiteBalanceMode = .locked
        case .zoom(let z): zoom = z
        case .torch(let t): torch = t
        }
    }

    /// The settings that bring a freshly opened device to this state (modes before values).
    public var settings: [CameraSetting] {
        var s: [CameraSetting] = [.zoom(zoom), .torch(torch), .exposureBias(exposureBias), .exposurePoint(exposurePoint),
                                  .focusPoint(focusPoint)]
        switch exposureMode {
        case .custom: s += [.iso(iso), .exposureDuration(exposureDuration)]
        default: s.append(.exposureMode(exposureMode))
        }
        switch focusMode {
        case .locked: s.append(.focusPosition(focusPosition))
        default: s.append(.focusMode(focusMode))
        }
        switch whiteBalanceMode {
        case .locked: s.append(.whiteBalanceTemperature(whiteBalanceTemperature))
        default: s.append(.whiteBalanceMode(whiteBalanceMode))
        }
        return s
    }
}

extension CameraCapabilities {
    /// `setting` with its value clamped to this device's range, or an error naming what the
    /// device lacks.
    public func clamp(_ setting: CameraSetting, device: String) throws(CameraError) -> CameraSetting {
        func range(_ c: CameraControl) throws(CameraError) -> ControlRange {
            guard let r = ranges[c] else {
                throw CameraError(.unsupported, device: device, "has no \(c.rawValue) control")
            }
            return r
        }
        switch setting {
        case .exposureBias(let v): return .exposureBias(try range(.exposureBias).clamp(v))
        case .iso(let v): return .iso(try range(.iso).clamp(v))
        case .exposureDuration(let v): return .exposureDuration(try range(.exposureDuration).clamp(v))
        case .whiteBalanceTemperature(let v): return .whiteBalanceTemperature(try range(.whiteBalanceTemperature).clamp(v))
        case .zoom(let v): return .zoom(try range(.zoom).clamp(v))
        case .focusPosition(let v): return .focusPosition(try range(.focusPosition).clamp(v))
        case .torch(.off): return .torch(.off)
        case .torch(.on): _ = try range(.torchLevel); return .torch(.on)
        case .torch(.level(let l)):
            let r = try range(.torchLevel)
            let v = r.clamp(l)
            return v <= 0 ? .torch(.off) : .torch(.level(v))
        case .exposureMode(let m):
            guard exposureModes.contains(m) else { throw CameraError(.unsupported, device: device, "has no \(m.rawValue) exposure mode") }
            return setting
        case .focusMode(let m):
            guard focusModes.contains(m) else { throw CameraError(.unsupported, device: device, "has no \(m.rawValue) focus mode") }
            return setting
        case .whiteBalanceMode(let m):
            guard whiteBalanceModes.contains(m) else { throw CameraError(.unsupported, device: device, "has no \(m.rawValue) white balance mode") }
            return setting
        case .exposurePoint(let p):
            guard exposurePointOfInterest else { throw CameraError(.unsupported, device: device, "has no exposure point of interest") }
            return .exposurePoint(p.clamped)
        case .focusPoint(let p):
            guard focusPointOfInterest else { throw CameraError(.unsupported, device: device, "has no focus point of interest") }
            return .focusPoint(p.clamped)
        }
    }
}
