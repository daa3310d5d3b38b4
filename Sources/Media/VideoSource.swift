import Locks

/// Width and height of a picture.
public struct VideoSize: Sendable, Hashable, CustomStringConvertible {
    public var width: Int
    public var height: Int
    public init(width: Int, height: Int) {
        self.width = width
        self.height = height
    }
    public var description: String { "\(width)x\(height)" }
}

/// Where captured frames enter the pipeline (iOS SDK `RTCVideoSource`): a capturer delivers to
/// it, it runs the app's `processors` (the reference app's "frame consumer" with its beauty filter
/// lives here), adapts the output to the format asked with `adaptOutputFormat`, and hands the
/// frames to its sinks (tracks, local preview) on the capturer's thread.
public final class VideoSource: VideoCapturerDelegate {
    /// Processors every frame runs through before adaptation; editable while frames flow.
    public let processors: ProcessorChain

    private struct State {
        var sinks: [any VideoRenderer] = []
        var request: VideoSize?
        var gate = FrameRateGate(fps: 0)
        var captured = 0
        var dropped = 0
        var delivered = 0
    }

    private let state = Locked(State())

    public init(processors: ProcessorChain = ProcessorChain()) {
        self.processors = processors
    }

    /// Asks for frames of at most `width`×`height` pixels and `fps` frames per second, as
    /// libwebrtc does: frames are cropped (centred) to the requested aspect ratio, scaled down to
    /// the requested size (never up), and dropped evenly, judged by their timestamps, to reach the
    /// rate. The request is orientation-agnostic: 1280x720 also means 720x1280 for portrait frames.
    /// A width or height ≤ 0 keeps the resolution; fps ≤ 0 keeps every frame. Takes effect with the
    /// next frame; safe to call from any thread while streaming.
    public func adaptOutputFormat(width: Int, height: Int, fps: Int) {
        state.withLock { s in
            s.request = width > 0 && height > 0 ? VideoSize(width: width, height: height) : nil
            s.gate = FrameRateGate(fps: fps)
        }
    }

    public func addSink(_ sink: any VideoRenderer) {
        state.withLock { s in
            if !s.sinks.contains(where: { $0 === sink }) { s.sinks.append(sink) }
        }
    }

    public func removeSink(_ sink: any VideoRenderer) {
        state.withLock { $0.sinks.removeAll { $0 === sink } }
    }

    /// Frames received, dropped for the frame rate (or by a processor), and delivered to sinks.
    public var stats: (captured: Int, dropped: Int, delivered: Int) {
        state.withLock { ($0.captured, $0.dropped, $0.delivered) }
    }

    public func capturer(_ capturer: any VideoCapturer, didCapture frame: VideoFrame) {
        deliverCapturedFrame(frame)
    }

    /// Feeds a frame without a capturer (decoders, files, tests): same path as a captured frame.
    public func deliverCapturedFrame(_ frame: VideoFrame) {
        // Decide the frame-rate drop first: it depends only on the timestamp, and a dropped
        // frame then costs no processing.
        let (pass, request) = state.withLock { s in
            s.captured += 1
            let pass = s.gate.shouldPass(timestampNs: frame.timestampNs)
            if !pass { s.dropped += 1 }
            return (pass, s.request)
        }
        guard pass else { return }
        guard let processed = processors.process(frame) else {
            state.withLock { $0.dropped += 1 }
            return
        }
        var output = processed
        if let request {
            let plan = Self.adaptation(width: processed.width, height: processed.height, request: request)
            if plan.crop != PixelRect(x: 0, y: 0, width: processed.width, height: processed.height)
                || plan.output != VideoSize(width: processed.width, height: processed.height) {
                output.buffer = processed.buffer.cropAndScale(plan.crop, toWidth: plan.output.width,
                                                              toHeight: plan.output.height)
                output.faces = processed.facesAfterBufferCrop(plan.crop)
            }
        }
        let sinks = state.withLock { s in
            s.delivered += 1
            return s.sinks
        }
        for sink in sinks { sink.render(output) }
    }

    /// The crop and output size `adaptOutputFormat` gives a frame of `width`×`height`.
    public static func adaptation(width: Int, height: Int, request: VideoSize) -> (crop: PixelRect, output: VideoSize) {
        let full = PixelRect(x: 0, y: 0, width: width, height: height)
        // Clamped to the largest frame there can be, which also keeps the products below in range.
        let maxSide = VideoFrameBuffer.maxDimension
        var tw = min(request.width, maxSide), th = min(request.height, maxSide)
        guard tw > 0, th > 0, VideoFrameBuffer.isValidSize(width: width, height: height) else { return (full, VideoSize(width: width, height: height)) }
        // Orientation-agnostic: match the request's orientation to the frame's.
        if (width >= height) != (tw >= th) { swap(&tw, &th) }
        var crop = full
        if width * th != height * tw {
            if width * th > height * tw {   // frame is wider than the target aspect: crop the sides
                crop.width = min(width, max(2, (height * tw / th) & ~1))
            } else {                        // taller: crop top and bottom
                crop.height = min(height, max(2, (width * th / tw) & ~1))
            }
            crop.x = ((width - crop.width) / 2) & ~1
            crop.y = ((height - crop.height) / 2) & ~1
        }
        // Scale down only; the crop already has the target's aspect ratio.
        if crop.width * crop.height > tw * th {
            return (crop, VideoSize(width: max(2, tw & ~1), height: max(2, th & ~1)))
        }
        return (crop, VideoSize(width: crop.width, height: crop.height))
    }
}

/// Keeps frames evenly spaced at a maximum rate, judged by capture timestamps (not wall clock):
/// a frame passes when it is no earlier than a quarter interval before the next slot, and each
/// pass moves the slot on by one interval, so the long-run rate is exactly the target. A jump of
/// more than two intervals (a pause, a clock change) starts over from that frame.
struct FrameRateGate: Sendable {
    let intervalNs: Int64
    private var nextNs: Int64?

    init(fps: Int) {
        intervalNs = fps > 0 ? 1_000_000_000 / Int64(fps) : 0
    }

    mutating func shouldPass(timestampNs ts: Int64) -> Bool {
        guard intervalNs > 0 else { return true }
        if let next = nextNs {
            let (early, overflow) = next.subtractingReportingOverflow(ts)
            if !overflow, early.magnitude <= UInt64(2 * intervalNs) {
                if early > intervalNs / 4 { return false }
                nextNs = next + intervalNs
                return true
            }
        }
        nextNs = ts &+ intervalNs
        return true
    }
}
