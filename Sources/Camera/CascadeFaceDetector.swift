import CFaceDetect
import Foundation
import Media

/// OpenCV's cascade face detector (Viola–Jones, Debian's libopencv-objdetect) with a frontal-face
/// cascade from the opencv-data package: the image detector for cameras that report no faces
/// themselves (V4L2). It looks at luma scaled to `detectionSide` pixels on the shorter side and
/// turned upright, so its cost does not grow with the camera's resolution. Frontal faces only
/// (a head turned past ~30° or tilted past ~20° is missed); no roll or yaw.
public final class CascadeFaceDetector: FaceDetector, @unchecked Sendable {
    // @unchecked: the C handle is immutable and the shim serializes calls on it; the rest is
    // immutable.
    private let handle: OpaquePointer
    public let cascadePath: String
    /// Shorter side of the picture the cascade runs on.
    public let detectionSide: Int
    /// Smallest face looked for, as a fraction of the picture's shorter side.
    public let minimumFaceSize: Double
    public let name = "opencv-cascade"
    public let analyzesPixels = true

    /// Where Debian's opencv-data (and a local OpenCV build) put the cascades.
    public static let cascadeDirectories = ["/usr/share/opencv4/haarcascades", "/usr/share/opencv/haarcascades",
                                            "/usr/local/share/opencv4/haarcascades"]
    public static let defaultCascade = "haarcascade_frontalface_default.xml"

    /// Loads `cascadePath`, or the frontal-face cascade opencv-data installs. Throws, saying what
    /// to install, when there is none or it does not load.
    public init(cascadePath: String? = nil, detectionSide: Int = 360, minimumFaceSize: Double = 0.08) throws(CameraError) {
        let path: String
        if let cascadePath { path = cascadePath } else { path = try Self.installedCascade() }
        var error = [CChar](repeating: 0, count: 256)
        guard let h = cfd_create(path, &error, error.count) else {
            throw CameraError(.unsupported, "face detector: cannot load the cascade \(path): \(Self.text(error))")
        }
        handle = h
        self.cascadePath = path
        self.detectionSide = min(max(detectionSide, 48), 2160)
        self.minimumFaceSize = minimumFaceSize.isFinite ? min(max(minimumFaceSize, 0.02), 1) : 0.08
    }

    deinit { cfd_destroy(handle) }

    /// The shim's NUL-terminated error message.
    private static func text(_ buffer: [CChar]) -> String {
        String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// The path of the installed frontal-face cascade.
    public static func installedCascade() throws(CameraError) -> String {
        let candidates = cascadeDirectories.map { $0 + "/" + defaultCascade }
        guard let found = candidates.first(where: { FileManager.default.isReadableFile(atPath: $0) }) else {
            throw CameraError(.unsupported, "face detector: no \(defaultCascade) in \(cascadeDirectories.joined(separator: ", ")) (apt-get install opencv-data)")
        }
        return found
    }

    public func detectFaces(in frame: VideoFrame) throws(CameraError) -> [FaceObservation] {
        let shorter = min(frame.width, frame.height)
        guard shorter >= 24 else {
            throw CameraError(.invalidArgument, "face detector: a \(frame.width)x\(frame.height) frame is too small to look for faces in")
        }
        // Luma (plane 0 of I420 and NV12), scaled down, upright: what the cascade was trained on.
        let scale = min(1, Double(detectionSide) / Double(shorter))
        let w = max(2, Int((Double(frame.width) * scale).rounded())), h = max(2, Int((Double(frame.height) * scale).rounded()))
        let source = frame.format == .bgra ? frame.buffer.converted(to: .i420) : frame.buffer
        let picture = source.scaled(width: w, height: h).rotated(frame.rotation)
        let pw = picture.width, ph = picture.height
        let minSide = Int((Double(min(pw, ph)) * minimumFaceSize).rounded())
        var rects = [cfd_rect](repeating: cfd_rect(), count: 32)
        var error = [CChar](repeating: 0, count: 256)
        // Scales 1.2 apart and 4 overlapping hits: half the time of OpenCV's usual 1.1 / 3, and
        // still no face in the test patterns.
        let n = cfd_detect(handle, picture.planePointer(0), Int32(pw), Int32(ph), Int32(picture.strides[0]), Int32(minSide),
                           1.2, 4, &rects, Int32(rects.count), &error, error.count)
        guard n >= 0 else {
            throw CameraError(.io, "face detector: OpenCV failed on a \(frame.width)x\(frame.height) frame: \(Self.text(error))")
        }
        return rects.prefix(Int(n)).map { r in
            FaceObservation(bounds: NormalizedRect(x: Double(r.x) / Double(pw), y: Double(r.y) / Double(ph),
                                                   width: Double(r.width) / Double(pw), height: Double(r.height) / Double(ph)))
        }
    }
}
