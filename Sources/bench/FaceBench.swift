// The face rows: OpenCV's cascade detector per 720p frame, and the capture rate a 30 fps camera
// keeps while it runs.
import Camera
import Capture
import Dispatch
import Foundation
import Media
import Render
import Synchronization

/// The portrait python-matplotlib-data ships, fitted into a 1280x720 NV12 frame.
private func portrait720p() throws -> VideoFrame {
    let path = "/usr/share/matplotlib/mpl-data/sample_data/grace_hopper.jpg"
    guard let data = FileManager.default.contents(atPath: path) else {
        throw MediaError("\(path) is missing (apt-get install python-matplotlib-data)")
    }
    let photo = try JPEGDecoder.decode([UInt8](data))
    let pix = V4L2PixFormat(width: 1280, height: 720, fourcc: V4L2FourCC.nv12)
    return VideoFrame(buffer: RecordedV4L2Picture.fitted(photo, in: pix).converted(to: .nv12VideoRange), timestampNs: 0)
}

func faceDetectionBenchmarks() async -> [Row] {
    let frame: VideoFrame, detector: CascadeFaceDetector
    do {
        frame = try portrait720p()
        detector = try CascadeFaceDetector()
    } catch {
        return [Row("camera.faces.cascade_720p", nil, "ms/frame", note: "failed: \(error)")]
    }
    var found = 0
    let ms = medianCPUMs { _ in found = (try? detector.detectFaces(in: frame).count) ?? -1 }
    var rows = [Row("camera.faces.cascade_720p", ms, "ms/frame",
                    note: "CascadeFaceDetector (OpenCV 4.6, haarcascade_frontalface_default, one thread) on the portrait in python-matplotlib-data fitted into a 1280x720 NV12 frame: luma scaled to 640x360, equalised, detectMultiScale; found \(found) face(s); thread CPU, median of 60")]
    do {
        let (fps, detections) = try await captureRateWithDetection(frame: frame, detector: detector)
        rows.append(Row("camera.faces.capture_fps_720p30", fps, "fps", target: .atLeast(29),
                        note: "a CameraCapturer fed 1280x720 NV12 frames at 30 fps for 5 s by a paced thread, face detection on (the cascade on its worker: \(String(format: "%.1f", detections)) detections/s); frames delivered per second"))
    } catch {
        rows.append(Row("camera.faces.capture_fps_720p30", nil, "fps", target: .atLeast(29), note: "failed: \(error)"))
    }
    return rows
}

/// Counts what goes through the detector it wraps.
private final class CountingDetector: FaceDetector {
    let inner: any FaceDetector
    let calls = Mutex(0)
    init(_ inner: any FaceDetector) { self.inner = inner }
    var name: String { inner.name }
    var analyzesPixels: Bool { inner.analyzesPixels }
    func detectFaces(in frame: VideoFrame) throws(CameraError) -> [FaceObservation] {
        calls.withLock { $0 += 1 }
        return try inner.detectFaces(in: frame)
    }
}

/// Delivered frames' arrival times.
private final class ArrivalClock: VideoCapturerDelegate {
    let times = Mutex<[Int64]>([])
    func capturer(_ capturer: any VideoCapturer, didCapture frame: VideoFrame) {
        times.withLock { $0.append(CaptureClock.monotonicNs()) }
    }
}

/// Frames delivered per second, and detections per second, over 150 frames pushed at 30 fps.
private func captureRateWithDetection(frame: VideoFrame, detector: any FaceDetector) async throws -> (fps: Double, detections: Double) {
    let device = SyntheticDevices.back
    let backend = PushBackend(device: device)
    let arrivals = ArrivalClock()
    let counting = CountingDetector(detector)
    let capturer = CameraCapturer(backend: backend, delegate: arrivals)
    capturer.setFaceDetection(FaceDetectionOptions(imageDetector: counting))
    try await capturer.startCapture(device: device, width: 1280, height: 720, fps: 30)
    guard let stream = backend.stream.withLock({ $0 }) else { throw MediaError("the capturer opened no stream") }
    let count: UInt64 = 150
    let done = DispatchSemaphore(value: 0)
    let pacer = PacedThread(intervalNs: 1_000_000_000 / 30) { i, now in
        stream.sink.cameraStream(didCapture: VideoFrame(buffer: frame.buffer, timestampNs: now))
        if i + 1 == count { done.signal() }
        return i + 1 < count
    }
    guard pacer.start() else { throw MediaError("could not start the pacing thread") }
    await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
        DispatchQueue.global().async {
            done.wait()
            c.resume()
        }
    }
    pacer.stop()
    await capturer.stopCapture()
    let times = arrivals.times.withLock { $0 }
    guard times.count == Int(count), let first = times.first, let last = times.last, last > first else {
        throw MediaError("\(times.count) of \(count) frames delivered")
    }
    let seconds = Double(last - first) / 1e9
    return (Double(times.count - 1) / seconds, Double(counting.calls.withLock { $0 }) / seconds)
}
