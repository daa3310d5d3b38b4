import Locks

/// Where captured audio enters the pipeline: takes frames from an `AudioCapturer` (or from
/// `deliver(_:)`) and hands each to its sinks on the capturer's thread.
public final class AudioSource: Sendable {
    private let sinks = Locked<[any AudioRenderer]>([])
    private let delivered = Locked(0)

    public init() {}

    /// A source fed by `capturer` (it takes over the capturer's `onFrame`).
    public convenience init(capturer: any AudioCapturer) {
        self.init()
        attach(capturer)
    }

    /// Makes `capturer` deliver its frames here (replacing its previous `onFrame`).
    public func attach(_ capturer: any AudioCapturer) {
        capturer.onFrame = { [weak self] frame in self?.deliver(frame) }
    }

    public func addSink(_ sink: any AudioRenderer) {
        sinks.withLock { list in
            if !list.contains(where: { $0 === sink }) { list.append(sink) }
        }
    }

    public func removeSink(_ sink: any AudioRenderer) {
        sinks.withLock { $0.removeAll { $0 === sink } }
    }

    /// Frames handed to sinks so far.
    public var framesDelivered: Int { delivered.withLock { $0 } }

    public func deliver(_ frame: AudioFrame) {
        let current = sinks.withLock { $0 }
        delivered.withLock { $0 += 1 }
        for sink in current { sink.render(frame) }
    }
}

/// An audio track (W3C `MediaStreamTrack` of kind "audio"). Disabled, it sends silence of the
/// same length, rate and channel count for every frame (the stream keeps its timing, as in
/// libwebrtc); enabled again, the next frame is the real one.
public final class AudioTrack: Sendable {
    public let id: String
    public let source: AudioSource
    public var kind: String { "audio" }

    private struct State {
        var enabled = true
        var sinks: [any AudioRenderer] = []
        // Silence kept between frames so a disabled track allocates nothing per frame.
        var silentInt16: [Int16] = []
        var silentFloat: [Float] = []
    }

    private let state = Locked(State())
    private let tap: Tap

    public init(id: String, source: AudioSource) {
        self.id = id
        self.source = source
        tap = Tap()
        tap.track.withLock { $0.object = self }
        source.addSink(tap)
    }

    deinit { source.removeSink(tap) }

    public var isEnabled: Bool {
        get { state.withLock { $0.enabled } }
        set { state.withLock { $0.enabled = newValue } }
    }

    public func addSink(_ sink: any AudioRenderer) {
        state.withLock { s in
            if !s.sinks.contains(where: { $0 === sink }) { s.sinks.append(sink) }
        }
    }

    public func removeSink(_ sink: any AudioRenderer) {
        state.withLock { $0.sinks.removeAll { $0 === sink } }
    }

    fileprivate func receive(_ frame: AudioFrame) {
        let (sinks, out): ([any AudioRenderer], AudioFrame) = state.withLock { s in
            if s.enabled { return (s.sinks, frame) }
            var silent = frame
            switch frame.samples {
            case .int16(let samples):
                if s.silentInt16.count != samples.count { s.silentInt16 = [Int16](repeating: 0, count: samples.count) }
                silent.samples = .int16(s.silentInt16)
            case .float(let samples):
                if s.silentFloat.count != samples.count { s.silentFloat = [Float](repeating: 0, count: samples.count) }
                silent.samples = .float(s.silentFloat)
            }
            return (s.sinks, silent)
        }
        for sink in sinks { sink.render(out) }
    }

    private final class Tap: AudioRenderer {
        let track = Locked(WeakTrack(object: nil))
        func render(_ frame: AudioFrame) {
            track.withLock { $0.object }?.receive(frame)
        }
    }

    private struct WeakTrack {
        weak var object: AudioTrack?
    }
}
