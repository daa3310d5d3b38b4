import Locks

/// Several backends as one: devices listed in order, each opened by the backend that listed it
/// (e.g. the machine's V4L2 cameras first, then the synthetic front and back cameras).
public final class MultiCameraBackend: CameraBackend {
    public let backends: [any CameraBackend]
    private let errors = Locked<[CameraError]>([])
    public init(_ backends: [any CameraBackend]) { self.backends = backends }

    /// Why backends listed nothing in the last `devices()` (a camera node without permission,
    /// say), so a caller can tell the user instead of silently falling back to another camera.
    public var listingErrors: [CameraError] { errors.withLock { $0 } }

    public var name: String { backends.map(\.name).joined(separator: "+") }

    /// Devices of every backend. A backend that cannot list (no /dev/video*, no permission to
    /// read sysfs) contributes none instead of hiding the others; with none listed at all, the
    /// first error is thrown so the user learns why.
    public func devices() throws(CameraError) -> [CaptureDevice] {
        var all: [CaptureDevice] = []
        var failures: [CameraError] = []
        for b in backends {
            do { all += try b.devices() } catch { failures.append(error) }
        }
        errors.withLock { $0 = failures }
        if all.isEmpty, let first = failures.first { throw first }
        return all
    }

    public func open(_ device: CaptureDevice, format: CaptureFormat, fps: Double, controls: CameraControlState,
                     sink: any CameraStreamSink) throws(CameraError) -> any CameraStream {
        for b in backends {
            guard let listed = try? b.devices(), listed.contains(where: { $0.id == device.id }) else { continue }
            return try b.open(device, format: format, fps: fps, controls: controls, sink: sink)
        }
        throw CameraError(.noSuchDevice, device: device.id, "is not connected")
    }
}
