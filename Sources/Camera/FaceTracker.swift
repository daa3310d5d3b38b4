import Media

/// Gives faces ids that stay while the face stays, and tells which entered and which left.
/// Observations with the source's own id are matched by it; the others by overlap (IoU) with the
/// faces already known. Pure state, no threads: the capturer owns one per stream.
struct FaceTracker {
    struct Update: Equatable {
        var faces: [Face]
        var entered: [Face]
        var left: [Face]
    }

    private struct Track {
        var face: Face
        var sourceID: Int?
        var misses: Int
    }

    /// Detections in a row a face may be missing from before it counts as gone: image detectors
    /// lose a face for a frame now and then; metadata sources report every face they have.
    let maxMisses: Int
    /// Least overlap for an observation without an id to be the same face as a known one.
    static let minimumIoU = 0.3
    private var tracks: [Track] = []
    private var nextID = 1

    init(maxMisses: Int) {
        self.maxMisses = max(0, maxMisses)
    }

    var faces: [Face] { tracks.map(\.face) }

    mutating func update(_ observations: [FaceObservation]) -> Update {
        var matched = [Bool](repeating: false, count: tracks.count)
        var assignment = [Int?](repeating: nil, count: observations.count)
        // Source ids first: they are the source's word that it is the same face.
        for (o, obs) in observations.enumerated() {
            guard let sid = obs.trackingID else { continue }
            if let t = tracks.indices.first(where: { !matched[$0] && tracks[$0].sourceID == sid }) {
                matched[t] = true
                assignment[o] = t
            }
        }
        // Then the best overlaps, greedily, among tracks the source did not name.
        var pairs: [(iou: Double, o: Int, t: Int)] = []
        for (o, obs) in observations.enumerated() where obs.trackingID == nil {
            for t in tracks.indices where !matched[t] && tracks[t].sourceID == nil {
                let iou = obs.bounds.iou(tracks[t].face.bounds)
                if iou >= Self.minimumIoU { pairs.append((iou, o, t)) }
            }
        }
        for p in pairs.sorted(by: { $0.iou > $1.iou }) where assignment[p.o] == nil && !matched[p.t] {
            matched[p.t] = true
            assignment[p.o] = p.t
        }

        var update = Update(faces: [], entered: [], left: [])
        var next: [Track] = []
        for (t, track) in tracks.enumerated() where !matched[t] {
            if track.misses < maxMisses {
                next.append(Track(face: track.face, sourceID: track.sourceID, misses: track.misses + 1))
            } else {
                update.left.append(track.face)
            }
        }
        for (o, obs) in observations.enumerated() {
            if let t = assignment[o] {
                let face = Face(id: tracks[t].face.id, bounds: obs.bounds, rollAngle: obs.rollAngle, yawAngle: obs.yawAngle)
                next.append(Track(face: face, sourceID: obs.trackingID, misses: 0))
            } else {
                let face = Face(id: nextID, bounds: obs.bounds, rollAngle: obs.rollAngle, yawAngle: obs.yawAngle)
                nextID += 1
                next.append(Track(face: face, sourceID: obs.trackingID, misses: 0))
                update.entered.append(face)
            }
        }
        tracks = next.sorted { $0.face.id < $1.face.id }
        update.faces = faces
        return update
    }

    /// Every face leaves (the stream stopped or detection was turned off).
    mutating func removeAll() -> [Face] {
        defer { tracks = [] }
        return faces
    }
}
