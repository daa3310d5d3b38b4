import Media

/// One face as a detector saw it in one frame.
public struct FaceObservation: Sendable, Hashable {
    /// The source's own id when it tracks faces itself (AVFoundation's `faceID`, the synthetic
    /// camera's); nil when it does not, and the capturer matches the face to those it knows.
    public var trackingID: Int?
    /// Where the face is in the upright picture: the frame's buffer turned by `frame.rotation`,
    /// not mirrored (the capturer mirrors faces with the picture).
    public var bounds: NormalizedRect
    /// See `Face.rollAngle` and `Face.yawAngle`.
    public var rollAngle: Double?
    public var yawAngle: Double?

    public init(trackingID: Int? = nil, bounds: NormalizedRect, rollAngle: Double? = nil, yawAngle: Double? = nil) {
        self.trackingID = trackingID
        self.bounds = bounds
        self.rollAngle = rollAngle
        self.yawAngle = yawAngle
    }
}

/// Finds faces in the frames a camera delivers. Cameras that report faces themselves
/// (AVFoundation's metadata output, the synthetic camera) give one with their stream
/// (`CameraStream.faceDetector`); for the others (V4L2) the capturer runs an image detector such
/// as `CascadeFaceDetector` (OpenCV).
public protocol FaceDetector: AnyObject, Sendable {
    /// Short name for logs ("synthetic", "avfoundation", "opencv-cascade").
    var name: String { get }
    /// True when it analyses pixels, which takes milliseconds: the capturer then runs it on a
    /// worker thread at a bounded rate, so capture never waits for it. False when it reads what
    /// the camera already knows about the frame: then it runs on the capture thread, every frame.
    var analyzesPixels: Bool { get }
    /// The faces in `frame`, as the backend delivered it (sensor orientation) with `rotation` set
    /// to the rotation the capturer gives it. Throws for a frame it cannot read; capture goes on.
    func detectFaces(in frame: VideoFrame) throws(CameraError) -> [FaceObservation]
}
