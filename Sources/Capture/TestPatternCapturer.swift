import Media
import Locks

/// A capturer that draws the machine-readable test pattern (frame number + wall clock in the
/// pixels) at a fixed size and rate on its own thread. Frame timestamps are CLOCK_MONOTONIC ns;
/// the wall clock in the pixels is CLOCK_REALTIME ms. Frames come from a buffer pool, so steady
/// state allocates nothing per frame.
public final class TestPatternCapturer: VideoCapturer, Sendable {
    private struct State {
        var delegate: (any VideoCapturerDelegate)?
        var pool: VideoBufferPool?
        var nextFrameNumber: UInt32 = 0
        var width = 0, height = 0
    }
    private let state = Locked(State())
    private let thread = PacedThreadSlot()

    public init(delegate: (any VideoCapturerDelegate)? = nil) {
        state.withLock { $0.delegate = delegate }
    }

    deinit { stop() }

    /// Receives every frame (held strongly, on the capture thread).
    public var delegate: (any VideoCapturerDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    /// Number the next frame will carry (frames start at 0 after each `start`).
    public var nextFrameNumber: UInt32 { state.withLock { $0.nextFrameNumber } }

    /// Buffers the frame pool has allocated (tests check steady state stops growing).
    var pooledBufferCount: Int { state.withLock { $0.pool?.allocatedCount ?? 0 } }

    public var isRunning: Bool { thread.isRunning }

    /// Starts delivering frames of `width`×`height` at `fps`: frame n at start + n/fps.
    /// Restarts (from frame 0) if already running. Throws for sizes or rates out of range.
    public func start(width: Int, height: Int, fps: Double) throws {
        guard width >= 2, height >= 2, VideoFrameBuffer.isValidSize(width: width, height: height) else {
            throw MediaError("test pattern: frame size \(width)x\(height) out of range (2…\(VideoFrameBuffer.maxDimension))")
        }
        guard fps.isFinite, fps > 0, fps <= 1000 else {
            throw MediaError("test pattern: frame rate \(fps) out of range (0…1000]")
        }
        thread.start(prepare: {
            state.withLock {
                $0.width = width; $0.height = height
                $0.nextFrameNumber = 0
            }
            return Int64((1e9 / fps).rounded())
        }) { [weak self] _, now in
            guard let self else { return false }
            _ = self.deliverFrame(timestampNs: now, wallClockMs: CaptureClock.realtimeMs(), width: nil, height: nil)
            return true
        }
    }

    /// Stops delivering and waits for the capture thread to finish. Idempotent.
    public func stop() { thread.stop() }

    /// Manual mode (tests, offline pipelines): draws the next frame now, delivers it to the
    /// delegate on the calling thread, and returns it. The stamp defaults to the frame's own time
    /// in ms, not the wall clock: the same calls draw the same pictures, so a simulation replays.
    @discardableResult
    public func captureFrame(at timestampNs: Int64, width: Int = 1280, height: Int = 720,
                             wallClockMs: UInt64? = nil) -> VideoFrame {
        deliverFrame(timestampNs: timestampNs, wallClockMs: wallClockMs ?? UInt64(max(0, timestampNs) / 1_000_000),
                     width: VideoFrameBuffer.clampedDimension(width, minimum: 2),
                     height: VideoFrameBuffer.clampedDimension(height, minimum: 2))
    }

    private func deliverFrame(timestampNs: Int64, wallClockMs: UInt64, width: Int?, height: Int?) -> VideoFrame {
        let (pool, number, delegate) = state.withLock { s -> (VideoBufferPool, UInt32, (any VideoCapturerDelegate)?) in
            let w = width ?? s.width, h = height ?? s.height
            let pool: VideoBufferPool
            if let existing = s.pool, existing.width == w, existing.height == h {
                pool = existing
            } else {
                pool = VideoBufferPool(format: .i420, width: w, height: h)
                s.pool = pool
            }
            let n = s.nextFrameNumber
            s.nextFrameNumber &+= 1
            return (pool, n, s.delegate)
        }
        let buffer = pool.get()
        TestPattern.render(frameNumber: number, wallClockMs: wallClockMs,
                           width: buffer.width, height: buffer.height, into: buffer)
        let frame = VideoFrame(buffer: buffer, timestampNs: timestampNs)
        delegate?.capturer(self, didCapture: frame)
        return frame
    }
}
