import Foundation
import Media

/// Runs an image face detector on a thread of its own, one frame at a time. A frame offered while
/// it is busy is not taken, so the capture thread never waits for detection and never drops a
/// frame for it; results go back to the capturer from this thread.
final class FaceDetectionWorker: @unchecked Sendable {
    // @unchecked: `pending`, `busy`, `stopped` and `thread` are guarded by `condition`; the
    // detector and the capturer reference are immutable.
    private let detector: any FaceDetector
    private weak var capturer: CameraCapturer?
    private let condition = NSCondition()
    private var pending: (frame: VideoFrame, generation: UInt64)?
    private var busy = false
    private var stopped = false
    private var thread: Thread?
    private let finished = DispatchSemaphore(value: 0)

    init(detector: any FaceDetector, capturer: CameraCapturer) {
        self.detector = detector
        self.capturer = capturer
    }

    /// Takes the frame if the worker is idle (starting its thread on first use); false when busy.
    func offer(_ frame: VideoFrame, generation: UInt64) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        guard !stopped, !busy, pending == nil else { return false }
        if thread == nil {
            let t = Thread { [self] in run() }
            t.name = "face detection (\(detector.name))"
            thread = t
            t.start()
        }
        pending = (frame, generation)
        condition.signal()
        return true
    }

    private func run() {
        while true {
            condition.lock()
            while pending == nil && !stopped { condition.wait() }
            guard !stopped, let job = pending else {
                condition.unlock()
                break
            }
            pending = nil
            busy = true
            condition.unlock()
            let result = Result { () throws(CameraError) in try detector.detectFaces(in: job.frame) }
            capturer?.facesDetected(result, in: job.frame, generation: job.generation)
            condition.lock()
            busy = false
            condition.unlock()
        }
        finished.signal()
    }

    /// Stops the thread after the detection under way (if any) and waits for it.
    func stop() {
        condition.lock()
        let started = thread != nil && !stopped
        stopped = true
        pending = nil
        condition.signal()
        let own = Thread.current === thread
        condition.unlock()
        if started && !own { finished.wait() }
    }
}
