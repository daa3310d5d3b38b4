/// What went wrong with a camera, and which one.
public struct CameraError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable, Equatable {
        /// No device with that id (or position) exists.
        case noSuchDevice
        /// The device node exists but we may not open it (no permission).
        case permissionDenied
        /// Another process holds the device.
        case busy
        /// The device went away or failed while streaming.
        case deviceLost
        /// The device lacks the control, mode or format asked for.
        case unsupported
        /// A value or request makes no sense (bad size, NaN, zero frame rate).
        case invalidArgument
        /// A system call failed (errno text in the message).
        case io
        /// The operation needs a running capture.
        case notRunning
    }

    public var kind: Kind
    /// Device id, when one is concerned.
    public var device: String?
    public var message: String

    public init(_ kind: Kind, device: String? = nil, _ message: String) {
        self.kind = kind
        self.device = device
        self.message = message
    }

    public var description: String {
        if let device { return "camera \(device): \(message)" }
        return "camera: \(message)"
    }
}
