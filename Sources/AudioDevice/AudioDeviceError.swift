/// Why a device could not be listed, opened, read or written.
public enum AudioDeviceError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No sound server to talk to (PulseAudio not running, no socket).
    case serverUnavailable(String)
    case noSuchDevice(String)
    case unsupportedFormat(String)
    case openFailed(device: String, reason: String)
    case ioFailed(device: String, reason: String)
    case closed

    public var description: String {
        switch self {
        case .serverUnavailable(let why): return "audio: no sound server: \(why)"
        case .noSuchDevice(let id): return "audio: no device \"\(id)\""
        case .unsupportedFormat(let what): return "audio: unsupported format: \(what)"
        case .openFailed(let device, let why): return "audio: opening \"\(device)\" failed: \(why)"
        case .ioFailed(let device, let why): return "audio: \"\(device)\" failed: \(why)"
        case .closed: return "audio: the stream is closed"
        }
    }
}
