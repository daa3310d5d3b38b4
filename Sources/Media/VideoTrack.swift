import Locks

/// A video track (W3C `MediaStreamTrack` of kind "video"): frames from its source go to its
/// renderers. Disabled, it shows black instead, as libwebrtc does: one black I420 frame of the
/// last frame's size when it is disabled and then at most one per second (by frame timestamps);
/// enabling it again lets the next real frame through.
public final class VideoTrack: Sendable {
    public let id: String
    public let source: VideoSource
    public var kind: String { "video" }

    private struct State {
        var enabled = true
        var renderers: [any VideoRenderer] = []
        var lastFrameSize: VideoSize?
        var lastBlackNs: Int64?
        var black: VideoFrameBuffer?
        var framesRendered = 0
    }

    private let state = Locked(State())
    private let tap: Tap

    /// Black frames are sent at most this often while disabled.
    public static let blackFrameIntervalNs: Int64 = 1_000_000_000

    public init(id: String, source: VideoSource) {
        self.id = id
        self.source = source
        tap = Tap()
        tap.track.withLock { $0.object = self }
        source.addSink(tap)
    }

    deinit { source.removeSink(tap) }

    public var isEnabled: Bool {
        get { state.withLock { $0.enabled } }
        set {
            state.withLock { s in
                if s.enabled && !newValue { s.lastBlackNs = nil }   // black goes out with the next frame
                s.enabled = newValue
            }
        }
    }

    /// Size of the last frame the source delivered (for stats), nil before the first.
    public var lastFrameSize: VideoSize? { state.withLock { $0.lastFrameSize } }

    /// Frames (real or black) handed to renderers so far.
    public var framesRendered: Int { state.withLock { $0.framesRendered } }

    public func addRenderer(_ renderer: any VideoRenderer) {
        state.withLock { s in
            if !s.renderers.contains(where: { $0 === renderer }) { s.renderers.append(renderer) }
        }
    }

    public func removeRenderer(_ renderer: any VideoRenderer) {
        state.withLock { $0.renderers.removeAll { $0 === renderer } }
    }

    fileprivate func receive(_ frame: VideoFrame) {
        let (renderers, out): ([any VideoRenderer], VideoFrame?) = state.withLock { s in
            s.lastFrameSize = VideoSize(width: frame.width, height: frame.height)
            if s.enabled {
                s.framesRendered += 1
                return (s.renderers, frame)
            }
            if let last = s.lastBlackNs, frame.timestampNs >= last,
               frame.timestampNs - last < Self.blackFrameIntervalNs {
                return ([], nil)
            }
            s.lastBlackNs = frame.timestampNs
            let black: VideoFrameBuffer
            if let b = s.black, b.width == frame.width, b.height == frame.height {
                black = b
            } else {
                // Made once per size and then shared: buffers are immutable once handed out.
                black = VideoFrameBuffer.filledI420(width: frame.width, height: frame.height, y: 16, u: 128, v: 128,
                                                    pool: VideoBufferPool(format: .i420, width: frame.width,
                                                                          height: frame.height, capacity: 1))
                s.black = black
            }
            s.framesRendered += 1
            return (s.renderers, VideoFrame(buffer: black, rotation: frame.rotation, timestampNs: frame.timestampNs))
        }
        guard let out else { return }
        for renderer in renderers { renderer.render(out) }
    }

    /// Registered with the source; holds the track weakly so source and track do not keep each
    /// other alive.
    private final class Tap: VideoRenderer {
        let track = Locked(WeakTrack(object: nil))
        func render(_ frame: VideoFrame) {
            track.withLock { $0.object }?.receive(frame)
        }
    }

    private struct WeakTrack {
        weak var object: VideoTrack?
    }
}
