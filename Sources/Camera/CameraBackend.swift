import Media

/// A source of cameras: V4L2 on Linux, the synthetic camera, AVFoundation on Apple platforms.
/// `CameraCapturer` puts the device model, format choice, clamping, rotation, mirroring,
/// switching, photos and restarts on top of it, the same way for every backend.
public protocol CameraBackend: AnyObject, Sendable {
    /// Short name for logs and `swiftrtc devices` ("v4l2", "synthetic", "avfoundation").
    var name: String { get }
    /// The devices present now.
    func devices() throws(CameraError) -> [CaptureDevice]
    /// Opens `device` and starts streaming `format` at `fps` (one the format supports), with
    /// `controls` applied before the first frame. Frames and failures go to `sink` on the
    /// backend's own thread.
    func open(_ device: CaptureDevice, format: CaptureFormat, fps: Double, controls: CameraControlState,
              sink: any CameraStreamSink) throws(CameraError) -> any CameraStream
}

/// Receives what an open stream produces.
public protocol CameraStreamSink: AnyObject, Sendable {
    /// A frame as the sensor sees it (sensor orientation, not mirrored); any pixel format.
    func cameraStream(didCapture frame: VideoFrame)
    /// The stream died (device unplugged, I/O error). No frames follow.
    func cameraStream(didFail error: CameraError)
}

/// An open, streaming device.
public protocol CameraStream: AnyObject, Sendable {
    /// Applies a setting already clamped to the device's range and returns what the device
    /// actually set (drivers round; a read-back is the truth).
    func apply(_ setting: CameraSetting) throws(CameraError) -> CameraSetting
    /// Changes the frame rate while streaming; returns the rate now in effect.
    func setFrameRate(_ fps: Double) throws(CameraError) -> Double
    /// A still at the device's full resolution if it can take one without stopping the
    /// stream, else nil (the capturer then uses the next streamed frame).
    func capturePhoto() throws(CameraError) -> VideoFrame?
    /// The ISO and exposure time the device is using now, also under auto exposure (what EXIF
    /// records); nil when the device can't tell. The brightness-driven exposure policy needs it
    /// to turn a frame's mean luma into scene brightness.
    func currentExposure() -> (iso: Double, duration: Double)?
    /// The way the device is held (only a synthetic camera's scene cares; real sensors don't).
    func deviceOrientationChanged(_ orientation: DeviceOrientation)
    /// The faces the camera itself finds in its frames (AVFoundation's metadata output, the
    /// synthetic camera's scene); nil when it finds none and an image detector must look.
    var faceDetector: (any FaceDetector)? { get }
    /// Stops streaming and releases the device. Idempotent; no frames after it returns.
    func stop()
}

extension CameraStream {
    public func capturePhoto() throws(CameraError) -> VideoFrame? { nil }
    public func deviceOrientationChanged(_ orientation: DeviceOrientation) {}
    public func currentExposure() -> (iso: Double, duration: Double)? { nil }
    public var faceDetector: (any FaceDetector)? { nil }
}
