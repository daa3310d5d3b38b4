import Media
import Locks

/// What a `StatsRenderer` has seen so far.
public struct RenderStats: Sendable, Equatable {
    public var framesRendered: Int = 0
    /// Frame rate over the last second of frame timestamps (capture clock).
    public var fpsByTimestamp: Double = 0
    /// Frame rate over the last second of arrival times (wall clock, monotonic).
    public var fpsByArrival: Double = 0
    /// Size of the last frame as delivered (before rotation), nil before the first frame.
    public var width: Int?
    public var height: Int?
    public var rotation: VideoRotation?
    public var format: PixelFormat?
    /// How often the frame size changed after the first frame.
    public var sizeChanges: Int = 0
    /// When the first frame arrived, and how long after the renderer was created (or reset).
    public var firstFrameArrival: ContinuousClock.Instant?
    public var timeToFirstFrame: Duration?
    public var firstFrameTimestampNs: Int64?
    public var lastFrameTimestampNs: Int64?
    /// Times a frame's timestamp went backwards (the timestamp window restarts then).
    public var timestampResets: Int = 0

    public init() {}
}

/// Counts frames and measures frame rate and size; `render` is a few stores under a lock and
/// never allocates (the 1 s windows are fixed-size rings).
public final class StatsRenderer: VideoRenderer {
    private static let window: Int64 = 1_000_000_000
    private static let ringCapacity = 512

    private struct State {
        var stats = RenderStats()
        var createdAt: ContinuousClock.Instant
        var timestamps: Ring<Int64>
        var arrivals: Ring<ContinuousClock.Instant>
    }
    private let state: Locked<State>

    public init(now: ContinuousClock.Instant = .now) {
        state = Locked(State(createdAt: now,
                            timestamps: Ring(capacity: Self.ringCapacity, filler: 0),
                            arrivals: Ring(capacity: Self.ringCapacity, filler: now)))
    }

    public func render(_ frame: VideoFrame) {
        render(frame, arrival: .now)
    }

    /// `render` with the arrival time given (tests drive a fake clock through this).
    public func render(_ frame: VideoFrame, arrival: ContinuousClock.Instant) {
        state.withLock { s in
            if s.stats.framesRendered == 0 {
                s.stats.firstFrameArrival = arrival
                s.stats.timeToFirstFrame = arrival - s.createdAt
                s.stats.firstFrameTimestampNs = frame.timestampNs
            } else if frame.width != s.stats.width || frame.height != s.stats.height {
                s.stats.sizeChanges += 1
            }
            s.stats.framesRendered += 1
            s.stats.width = frame.width
            s.stats.height = frame.height
            s.stats.rotation = frame.rotation
            s.stats.format = frame.format

            if let last = s.timestamps.last, frame.timestampNs < last {
                s.timestamps.removeAll()
                s.stats.timestampResets += 1
            }
            s.timestamps.append(frame.timestampNs)
            s.timestamps.dropFirst(while: { $0 <= frame.timestampNs - Self.window })
            s.stats.fpsByTimestamp = Self.rate(s.timestamps) { Double($1 - $0) / 1e9 }
            s.stats.lastFrameTimestampNs = frame.timestampNs

            s.arrivals.append(arrival)
            s.arrivals.dropFirst(while: { $0 <= arrival - .seconds(1) })
            s.stats.fpsByArrival = Self.arrivalRate(s.arrivals)
        }
    }

    /// The current numbers. Arrival fps counts only frames within 1 s before `now`, so it falls
    /// to 0 when frames stop; timestamp fps keeps the last measured value.
    public func snapshot(now: ContinuousClock.Instant = .now) -> RenderStats {
        state.withLock { s in
            s.arrivals.dropFirst(while: { $0 <= now - .seconds(1) })
            s.stats.fpsByArrival = Self.arrivalRate(s.arrivals)
            return s.stats
        }
    }

    /// Forgets everything (e.g. when the track restarts).
    public func reset(now: ContinuousClock.Instant = .now) {
        state.withLock { s in
            s.stats = RenderStats()
            s.createdAt = now
            s.timestamps.removeAll()
            s.arrivals.removeAll()
        }
    }

    /// (frames − 1) / span: n frames spaced 1/30 s apart give exactly 30.
    private static func rate<T>(_ ring: Ring<T>, _ seconds: (T, T) -> Double) -> Double {
        guard ring.count >= 2, let first = ring.first, let last = ring.last else { return 0 }
        let span = seconds(first, last)
        return span > 0 ? Double(ring.count - 1) / span : 0
    }

    private static func arrivalRate(_ ring: Ring<ContinuousClock.Instant>) -> Double {
        rate(ring) { a, b in
            let d = (b - a).components
            return Double(d.seconds) + Double(d.attoseconds) / 1e18
        }
    }
}

/// A fixed-capacity FIFO; when full, appending drops the oldest element.
struct Ring<T> {
    private var items: [T]
    private var head = 0
    private(set) var count = 0

    init(capacity: Int, filler: T) { items = Array(repeating: filler, count: capacity) }

    var first: T? { count > 0 ? items[head] : nil }
    var last: T? { count > 0 ? items[(head + count - 1) % items.count] : nil }

    mutating func append(_ x: T) {
        if count == items.count {
            items[head] = x
            head = (head + 1) % items.count
        } else {
            items[(head + count) % items.count] = x
            count += 1
        }
    }

    mutating func dropFirst(while shouldDrop: (T) -> Bool) {
        while count > 0, shouldDrop(items[head]) {
            head = (head + 1) % items.count
            count -= 1
        }
    }

    mutating func removeAll() {
        head = 0
        count = 0
    }
}
