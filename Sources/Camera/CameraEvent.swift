import Media

/// What a camera capturer reports as it runs (warnings about unmet requests, interruptions,
/// restarts, controls as actually set).
public enum CameraEvent: Sendable, Equatable, CustomStringConvertible {
    case started(device: String, format: CaptureFormat, fps: Double)
    /// A request could not be met exactly (size, rate, a control the new camera lacks).
    case warning(String)
    case switched(from: String, to: String)
    /// The device failed or went away mid-stream; the capturer waits for it to come back.
    case interrupted(device: String, error: CameraError)
    /// The device is back and streaming again with the same format and controls.
    case resumed(device: String)
    case stopped(device: String)
    /// A control as the device actually set it.
    case controlChanged(CameraSetting)
    case frameRateChanged(Double)
    /// The brightness-driven exposure policy moved to `band` for scene brightness `brightness` (Bv).
    case exposurePolicy(band: Int, brightness: Double, iso: Double, duration: Double, fps: Double)
    /// A face came into view (bounds as in the delivered frames: upright, mirrored with them).
    case faceEntered(Face)
    /// A face left the view (as it was last seen).
    case faceLeft(Face)
    /// The faces in view now, after any of them entered, left, moved or turned.
    case facesChanged([Face])

    public var description: String {
        switch self {
        case .started(let d, let f, let fps): return "started \(d): \(f.sizeDescription) \(f.pixelFormat.rawValue) at \(fmt(fps)) fps"
        case .warning(let w): return "warning: \(w)"
        case .switched(let a, let b): return "switched \(a) → \(b)"
        case .interrupted(let d, let e): return "interrupted \(d): \(e.message)"
        case .resumed(let d): return "resumed \(d)"
        case .stopped(let d): return "stopped \(d)"
        case .controlChanged(let s): return "set \(s)"
        case .frameRateChanged(let f): return "frame rate \(fmt(f)) fps"
        case .exposurePolicy(let b, let bv, let iso, let d, let fps):
            return "exposure policy band \(b) (Bv \(fmt(bv))): ISO \(fmt(iso)), 1/\(fmt((1 / d).rounded())) s, \(fmt(fps)) fps"
        case .faceEntered(let f): return "\(f) entered"
        case .faceLeft(let f): return "face \(f.id) left"
        case .facesChanged(let faces): return faces.isEmpty ? "no faces" : "faces: " + faces.map(\.description).joined(separator: "; ")
        }
    }
}

/// Whether frames are flipped left to right: `auto` mirrors the front camera only (a selfie view).
public enum MirrorMode: String, Sendable, Hashable, CaseIterable {
    case auto, on, off

    func mirrors(_ position: CameraPosition) -> Bool {
        switch self {
        case .auto: return position == .front
        case .on: return true
        case .off: return false
        }
    }
}
