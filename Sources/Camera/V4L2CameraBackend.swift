import Foundation
import Glibc
import Media

/// Cameras on Linux through V4L2: /dev/video* nodes that can stream video (UVC metadata nodes
/// are skipped), with their formats, frame rates and controls mapped onto the camera model.
public final class V4L2CameraBackend: CameraBackend {
    /// A device node and how to open it (tests open recorded devices).
    public struct Node: Sendable {
        public var path: String
        public var open: @Sendable () throws(V4L2Error) -> any V4L2DeviceIO
        public init(path: String, open: @escaping @Sendable () throws(V4L2Error) -> any V4L2DeviceIO) {
            self.path = path
            self.open = open
        }
    }

    public let name = "v4l2"
    private let nodes: @Sendable () -> [Node]

    /// The machine's /dev/video* nodes, listed again on every `devices()`.
    public init() {
        nodes = { V4L2CameraBackend.systemNodes() }
    }

    /// These nodes only.
    public init(nodes: [Node]) {
        self.nodes = { nodes }
    }

    /// /dev/video0, /dev/video1, … in numeric order.
    public static func systemNodes(directory: String = "/dev") -> [Node] {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: directory)) ?? []
        let numbered = names.compactMap { n -> (Int, String)? in
            guard n.hasPrefix("video"), let i = Int(n.dropFirst(5)) else { return nil }
            return (i, directory + "/" + n)
        }.sorted { $0.0 < $1.0 }
        return numbered.map { _, path in Node(path: path) { () throws(V4L2Error) in try V4L2SystemDevice(path: path) } }
    }

    /// Whether this machine has any /dev/video* node.
    public static var hasVideoNodes: Bool { !systemNodes().isEmpty }

    public func devices() throws(CameraError) -> [CaptureDevice] {
        var found: [CaptureDevice] = []
        var denied: CameraError?
        for node in nodes() {
            do {
                let io = try Self.open(node)
                defer { io.close() }
                if let d = try Self.describe(io) { found.append(d) }
            } catch {
                // A node we may not open is worth reporting only when nothing else was found.
                if error.kind == .permissionDenied { denied = denied ?? error }
            }
        }
        if found.isEmpty, let denied { throw denied }
        return found
    }

    public func open(_ device: CaptureDevice, format: CaptureFormat, fps: Double, controls: CameraControlState,
                     sink: any CameraStreamSink) throws(CameraError) -> any CameraStream {
        guard let node = nodes().first(where: { $0.path == device.id }) else {
            throw CameraError(.noSuchDevice, device: device.id, "no such V4L2 device node")
        }
        guard fps.isFinite, fps > 0 else { throw CameraError(.invalidArgument, device: device.id, "frame rate \(fps) is not positive") }
        let io = try Self.open(node)
        return try V4L2CameraStream(io: io, format: format, fps: fps, controls: controls, sink: sink)
    }

    /// Opens a node, with errors that say what to do about them.
    static func open(_ node: Node) throws(CameraError) -> any V4L2DeviceIO {
        do {
            return try node.open()
        } catch {
            let p = node.path
            switch error.errno {
            case EACCES, EPERM:
                throw CameraError(.permissionDenied, device: p, "cannot open \(p): \(error.text) (add the user to the 'video' group)")
            case EBUSY:
                throw CameraError(.busy, device: p, "cannot open \(p): \(error.text) (another program is using the camera)")
            case ENOENT, ENODEV, ENXIO:
                throw CameraError(.noSuchDevice, device: p, "cannot open \(p): \(error.text)")
            default:
                throw CameraError(.io, device: p, "cannot open \(p): \(error.text)")
            }
        }
    }

    /// The device behind an open node, nil when the node cannot stream video.
    static func describe(_ io: any V4L2DeviceIO) throws(CameraError) -> CaptureDevice? {
        do {
            let cap = try io.queryCapability()
            guard cap.canStreamVideo else { return nil }
            let formats = try captureFormats(io)
            guard !formats.isEmpty else { return nil }
            let map = try V4L2ControlMap(io: io)
            return CaptureDevice(id: io.path, name: cap.card, position: position(card: cap.card),
                                 formats: formats, capabilities: map.capabilities)
        } catch {
            throw V4L2ControlMap.cameraError(error, path: io.path, "cannot query the device")
        }
    }

    /// V4L2 has no camera position; a card name saying front or back is the only hint.
    static func position(card: String) -> CameraPosition {
        let c = card.lowercased()
        if c.contains("front") || c.contains("user-facing") { return .front }
        if c.contains("back") || c.contains("rear") || c.contains("world-facing") { return .back }
        return .external
    }

    /// Sizes we offer from a stepwise range: the usual ones that fit, and the largest.
    static let stepwiseCandidates = [(320, 240), (640, 480), (1280, 720), (1920, 1080), (2560, 1440), (3840, 2160)]

    static func captureFormats(_ io: any V4L2DeviceIO) throws(V4L2Error) -> [CaptureFormat] {
        var out: [CaptureFormat] = []
        for f in try io.formats() {
            guard let pixelFormat = V4L2FourCC.pixelFormat(f.fourcc) else { continue }
            var sizes: [(Int, Int)] = []
            for s in try io.frameSizes(fourcc: f.fourcc) {
                switch s {
                case .discrete(let w, let h):
                    sizes.append((w, h))
                case .stepwise(let minW, let maxW, let stepW, let minH, let maxH, let stepH):
                    for (w, h) in stepwiseCandidates where (minW...maxW).contains(w) && (minH...maxH).contains(h)
                        && (w - minW) % stepW == 0 && (h - minH) % stepH == 0 {
                        sizes.append((w, h))
                    }
                    if !sizes.contains(where: { $0 == (maxW, maxH) }) { sizes.append((maxW, maxH)) }
                }
            }
            for (w, h) in sizes {
                var ranges: [FrameRateRange] = []
                for i in try io.frameIntervals(fourcc: f.fourcc, width: w, height: h) {
                    switch i {
                    case .discrete(let fr) where fr.numerator > 0:
                        ranges.append(FrameRateRange(fr.fps))
                    case .stepwise(let lo, let hi, _) where lo.numerator > 0 && hi.numerator > 0:
                        ranges.append(FrameRateRange(min: hi.fps, max: lo.fps))
                    default:
                        continue
                    }
                }
                if !ranges.isEmpty {
                    out.append(CaptureFormat(width: w, height: h, pixelFormat: pixelFormat, frameRateRanges: ranges))
                }
            }
        }
        return out
    }
}
