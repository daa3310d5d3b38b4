import Media
import Locks

/// How a `CameraCapturer` finds faces (`setFaceDetection`).
public struct FaceDetectionOptions: Sendable {
    /// For cameras that report no faces themselves (V4L2): an image detector such as
    /// `CascadeFaceDetector`. nil: only cameras with face metadata (synthetic, AVFoundation) report faces.
    public var imageDetector: (any FaceDetector)?
    /// At most this many detections a second; nil: every frame (an image detector then runs
    /// whenever its worker is free). Frames in between carry the faces last found.
    public var maxRate: Double?

    public init(imageDetector: (any FaceDetector)? = nil, maxRate: Double? = nil) {
        self.imageDetector = imageDetector
        self.maxRate = maxRate.flatMap { $0.isFinite && $0 > 0 ? $0 : nil }
    }
}

/// The capturer's face state, behind its own lock (the frame path's lock stays short).
struct FaceState {
    var options: FaceDetectionOptions?
    /// The open stream's own detector (its camera's face metadata), if it has one.
    var streamDetector: (any FaceDetector)?
    var generation: UInt64 = 0
    var tracker: FaceTracker?
    var worker: FaceDetectionWorker?
    var lastDetectionNs: Int64?
    /// The last error reported, so a detector failing on every frame warns once.
    var lastError: String?
    /// Where face metering last pointed the camera (sensor coordinates), and whether a change is on its way.
    var meteringPoint: NormalizedPoint?
    var meteringPending = false

    var detector: (any FaceDetector)? { streamDetector ?? options?.imageDetector }
}

extension CameraCapturer {
    /// Turns face detection on (faces on every delivered frame, `faceEntered`, `faceLeft` and
    /// `facesChanged` events) or off (nil; the faces in view leave).
    public func setFaceDetection(_ options: FaceDetectionOptions?) {
        resetFaces { s in
            s.options = options
            s.lastError = nil
        }
    }

    /// Whether face detection is on.
    public var isDetectingFaces: Bool { faceState.withLock { $0.options != nil } }

    /// The faces in view now, as the last frame carried them.
    public var facesInView: [Face] {
        let mirror = isMirrored
        return faceState.withLock { $0.tracker?.faces ?? [] }.map { mirror ? $0.mirrored : $0 }
    }

    /// A new stream (or none) is delivering: its detector replaces the last one, its faces start afresh.
    func streamChanged(faceDetector: (any FaceDetector)?, generation: UInt64) {
        resetFaces { s in
            s.streamDetector = faceDetector
            s.generation = generation
        }
    }

    /// Applies `change`, then starts afresh: the worker stops, every face in view leaves.
    private func resetFaces(_ change: (inout FaceState) -> Void) {
        let (old, left) = faceState.withLock { s -> (FaceDetectionWorker?, [Face]) in
            change(&s)
            let old = s.worker
            s.worker = nil
            s.lastDetectionNs = nil
            let left = s.tracker?.removeAll() ?? []
            s.tracker = nil
            return (old, left)
        }
        old?.stop()
        report(FaceTracker.Update(faces: [], entered: [], left: left), previous: left)
    }

    /// The faces for a frame about to be delivered (upright, not yet mirrored): detected now when
    /// the detector reads metadata, handed to the worker when it analyses pixels and is free; nil
    /// when detection is off.
    func findFaces(in frame: VideoFrame, generation: UInt64) -> [Face]? {
        enum Plan { case off, keep, inline(any FaceDetector), offer(FaceDetectionWorker) }
        let plan = faceState.withLock { s -> Plan in
            guard let options = s.options, let detector = s.detector, s.generation == generation else { return .off }
            if s.tracker == nil { s.tracker = FaceTracker(maxMisses: detector.analyzesPixels ? 2 : 0) }
            if let rate = options.maxRate, rate.isFinite, rate > 0, let last = s.lastDetectionNs,
               frame.timestampNs >= last, Double(frame.timestampNs - last) < 1e9 / rate - 1e6 {
                return .keep
            }
            guard detector.analyzesPixels else {
                s.lastDetectionNs = frame.timestampNs
                return .inline(detector)
            }
            if s.worker == nil { s.worker = FaceDetectionWorker(detector: detector, capturer: self) }
            return s.worker.map { .offer($0) } ?? .keep
        }
        switch plan {
        case .off: return nil
        case .keep: break
        case .inline(let detector):
            facesDetected(Result { () throws(CameraError) in try detector.detectFaces(in: frame) }, in: frame, generation: generation)
        case .offer(let worker):
            if worker.offer(frame, generation: generation) {
                faceState.withLock { $0.lastDetectionNs = frame.timestampNs }
            }
        }
        return faceState.withLock { $0.generation == generation ? $0.tracker?.faces ?? [] : nil }
    }

    /// A detector's answer for `frame` (on the capture thread or the worker's): ids, events, metering.
    func facesDetected(_ result: Result<[FaceObservation], CameraError>, in frame: VideoFrame, generation: UInt64) {
        let outcome = faceState.withLock { s -> (update: FaceTracker.Update, previous: [Face])? in
            guard s.generation == generation, s.options != nil, var tracker = s.tracker else { return nil }
            switch result {
            case .success(let observations):
                s.lastError = nil
                let previous = tracker.faces
                let update = tracker.update(observations.filter { $0.bounds.clipped.area > 0 })
                s.tracker = tracker
                return (update, previous)
            case .failure(let error):
                guard s.lastError != error.message else { return nil }
                s.lastError = error.message
                return (FaceTracker.Update(faces: tracker.faces, entered: [], left: []), tracker.faces)
            }
        }
        if case .failure(let error) = result, outcome != nil { emit(.warning("face detection: \(error)")) }
        guard let outcome else { return }
        report(outcome.update, previous: outcome.previous)
        meterOnFaces(outcome.update.faces, rotation: frame.rotation)
    }

    /// Events for an update, in the delivered frames' coordinates (mirrored with them).
    private func report(_ update: FaceTracker.Update, previous: [Face]) {
        let mirror = isMirrored
        func shown(_ f: Face) -> Face { mirror ? f.mirrored : f }
        for f in update.left { emit(.faceLeft(shown(f))) }
        for f in update.entered { emit(.faceEntered(shown(f))) }
        if update.faces != previous { emit(.facesChanged(update.faces.map(shown))) }
    }

    /// With the exposure policy metering on faces: the point of interest goes to the largest face
    /// (back to the centre when none is left), when it moved enough to matter.
    private func meterOnFaces(_ faces: [Face], rotation: VideoRotation) {
        guard framePath.withLock({ $0.policy?.metering == .faces }) else { return }
        let target: NormalizedPoint
        if let largest = faces.max(by: { $0.bounds.area < $1.bounds.area }) {
            let c = NormalizedRect(x: largest.bounds.midX, y: largest.bounds.midY, width: 0, height: 0).rotated(rotation.inverse)
            target = NormalizedPoint(x: c.x, y: c.y).clamped
        } else {
            target = .center
        }
        let go = faceState.withLock { s -> Bool in
            guard !s.meteringPending else { return false }
            if let p = s.meteringPoint, abs(p.x - target.x) < 0.03, abs(p.y - target.y) < 0.03 { return false }
            s.meteringPending = true
            return true
        }
        guard go else { return }
        let controller = self.controller
        Task {
            let applied = await controller.meter(at: target)
            self.faceState.withLock { s in
                s.meteringPending = false
                if applied { s.meteringPoint = target }
            }
        }
    }

    /// Face metering ended: the point of interest back to the centre.
    func endFaceMetering() async {
        let was = faceState.withLock { s -> NormalizedPoint? in
            defer { s.meteringPoint = nil }
            return s.meteringPoint
        }
        if was != nil { _ = await controller.meter(at: .center) }
    }
}
