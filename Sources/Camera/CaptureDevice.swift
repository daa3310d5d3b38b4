import Foundation
import Media

/// Where a camera looks: at the user (front, mirrored by default), away (back), or neither.
public enum CameraPosition: String, Sendable, Hashable, CaseIterable, Codable {
    case front, back, external
}

/// Pixel layouts cameras deliver, before the capturer converts them to its output format.
public enum CameraPixelFormat: String, Sendable, Hashable, CaseIterable, Codable {
    case i420, nv12, yuyv, bgra, mjpeg

    /// Relative cost of turning a frame of this layout into I420 (lower is cheaper); format choice
    /// breaks ties toward the cheaper one.
    public var conversionCost: Int {
        switch self {
        case .i420: return 0
        case .nv12: return 1
        case .yuyv: return 2
        case .bgra: return 3
        case .mjpeg: return 4
        }
    }
}

/// Frame rates a format supports: a single rate when `min == max` (V4L2 discrete intervals), a
/// continuous range otherwise (AVFoundation, V4L2 stepwise).
public struct FrameRateRange: Sendable, Hashable, Codable, CustomStringConvertible {
    public var min: Double
    public var max: Double
    public init(min: Double, max: Double) {
        self.min = Swift.min(min, max)
        self.max = Swift.max(min, max)
    }
    public init(_ fps: Double) { self.init(min: fps, max: fps) }

    public func contains(_ fps: Double) -> Bool { fps >= min - 1e-6 && fps <= max + 1e-6 }

    public var description: String {
        min == max ? fmt(max) : "\(fmt(min))-\(fmt(max))"
    }
}

/// One way a device can stream: size, pixel layout and the frame rates it allows.
public struct CaptureFormat: Sendable, Hashable, Codable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public var pixelFormat: CameraPixelFormat
    public var frameRateRanges: [FrameRateRange]

    public init(width: Int, height: Int, pixelFormat: CameraPixelFormat, frameRateRanges: [FrameRateRange]) {
        self.width = width
        self.height = height
        self.pixelFormat = pixelFormat
        self.frameRateRanges = frameRateRanges
    }

    public var maxFrameRate: Double { frameRateRanges.map(\.max).max() ?? 0 }
    public var minFrameRate: Double { frameRateRanges.map(\.min).min() ?? 0 }

    /// The highest rate this format supports that is ≤ `fps`; nil when every rate is above it.
    public func bestFrameRate(atMost fps: Double) -> Double? {
        var best: Double?
        for r in frameRateRanges {
            let candidate: Double
            if fps >= r.max - 1e-6 { candidate = r.max } else if fps >= r.min - 1e-6 { candidate = fps } else { continue }
            if candidate > (best ?? -1) { best = candidate }
        }
        return best
    }

    public var sizeDescription: String { "\(width)x\(height)" }
    public var description: String {
        "\(width)x\(height) \(pixelFormat.rawValue) @ \(frameRateRanges.map(\.description).joined(separator: ",")) fps"
    }
}

/// Numeric range of a control: values are clamped to `min...max` and snapped to `step`.
public struct ControlRange: Sendable, Hashable, Codable {
    public var min: Double
    public var max: Double
    public var step: Double
    public var defaultValue: Double

    public init(min: Double, max: Double, step: Double = 0, defaultValue: Double) {
        self.min = Swift.min(min, max)
        self.max = Swift.max(min, max)
        self.step = step
        self.defaultValue = defaultValue
    }

    /// `value` clamped to both ends of the range (the reference app's ISO clamp overwrote its
    /// own lower bound; this one cannot) and snapped to the step grid from `min`.
    public func clamp(_ value: Double) -> Double {
        guard value.isFinite else { return defaultValue }
        var v = Swift.min(Swift.max(value, min), max)
        if step > 0 {
            v = min + ((v - min) / step).rounded() * step
            v = Swift.min(Swift.max(v, min), max)
        }
        return v
    }
}

/// Numeric controls a device may have.
public enum CameraControl: String, Sendable, Hashable, CaseIterable, Codable {
    /// Exposure target bias in EV (auto exposure aims this many stops brighter or darker).
    case exposureBias
    /// Sensor gain as ISO (custom exposure).
    case iso
    /// Exposure time in seconds (custom exposure).
    case exposureDuration
    /// White balance colour temperature in kelvin.
    case whiteBalanceTemperature
    /// Zoom factor, 1 = no zoom.
    case zoom
    /// Lens position, 0 = nearest focus, 1 = farthest (infinity).
    case focusPosition
    /// Torch (the light next to the camera) level, 0 = off, 1 = full.
    case torchLevel
}

public enum ExposureMode: String, Sendable, Hashable, CaseIterable, Codable {
    case continuousAuto, locked, custom
}

public enum FocusMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// Keeps refocusing. `autoFocus` focuses once (at the point of interest) and then locks.
    case continuousAuto, autoFocus, locked
}

public enum WhiteBalanceMode: String, Sendable, Hashable, CaseIterable, Codable {
    /// `locked` keeps the current gains; setting a temperature locks at that temperature.
    case continuousAuto, locked
}

/// What a device can be told to do besides streaming.
public struct CameraCapabilities: Sendable, Hashable, Codable {
    public var ranges: [CameraControl: ControlRange]
    public var exposureModes: Set<ExposureMode>
    public var focusModes: Set<FocusMode>
    public var whiteBalanceModes: Set<WhiteBalanceMode>
    public var exposurePointOfInterest: Bool
    public var focusPointOfInterest: Bool

    public init(ranges: [CameraControl: ControlRange] = [:], exposureModes: Set<ExposureMode> = [],
                focusModes: Set<FocusMode> = [], whiteBalanceModes: Set<WhiteBalanceMode> = [],
                exposurePointOfInterest: Bool = false, focusPointOfInterest: Bool = false) {
        self.ranges = ranges
        self.exposureModes = exposureModes
        self.focusModes = focusModes
        self.whiteBalanceModes = whiteBalanceModes
        self.exposurePointOfInterest = exposurePointOfInterest
        self.focusPointOfInterest = focusPointOfInterest
    }

    public var hasTorch: Bool { ranges[.torchLevel] != nil }
}

/// A camera: what it is, how it can stream, which controls it has.
public struct CaptureDevice: Sendable, Hashable, Codable, Identifiable, CustomStringConvertible {
    /// Stable identifier (`/dev/video0`, `synthetic:front`, an AVCaptureDevice uniqueID).
    public var id: String
    public var name: String
    public var position: CameraPosition
    public var formats: [CaptureFormat]
    public var capabilities: CameraCapabilities

    public init(id: String, name: String, position: CameraPosition, formats: [CaptureFormat],
                capabilities: CameraCapabilities) {
        self.id = id
        self.name = name
        self.position = position
        self.formats = formats
        self.capabilities = capabilities
    }

    public var description: String { "\(name) (\(id), \(position.rawValue))" }
}

func fmt(_ v: Double) -> String {
    v == v.rounded() ? String(Int(v)) : String(format: "%.2f", v)
}
