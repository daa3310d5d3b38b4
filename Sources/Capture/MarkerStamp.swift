import Media
import Locks

/// Burns the test pattern's band (frame number, wall clock) into the top of every I420 frame
/// that passes, like a camera's timestamp overlay: any source — a camera included — then carries
/// what `TestPattern.read` and the players' checkers verify (order, latency). Put it last in a
/// source's processors so nothing moves the band afterwards. Frames are stamped in place: it must
/// be the first to see them (a capturer's fresh buffer), not a frame others still hold.
public final class MarkerStamp: VideoProcessor, Sendable {
    private let next = Locked<UInt32>(0)
    public init() {}

    public func process(_ frame: VideoFrame) -> VideoFrame? {
        guard frame.format == .i420 else { return frame }
        let n = next.withLock { n in
            defer { n &+= 1 }
            return n
        }
        TestPattern.stampBand(frameNumber: n, wallClockMs: CaptureClock.realtimeMs(), into: frame.buffer)
        return frame
    }
}
