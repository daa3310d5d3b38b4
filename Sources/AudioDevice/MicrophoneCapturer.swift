import Foundation
import Media
import Locks

/// A microphone as an `AudioCapturer`: 10 ms frames read on its own audio thread, through the
/// `EchoPath` (echo cancellation, gain, noise suppression, high-pass) when one is given, to
/// `onFrame`. Muted, it delivers silence of the same length — the device stays open and the
/// processor keeps adapting, so unmuting is instant.
public final class MicrophoneCapturer: AudioCapturer, Sendable {
    public struct Stats: Sendable {
        public var framesCaptured = 0
        public var deviceDelayMs = 0
        /// RMS of the last frame before muting, 0…1 (full scale).
        public var level = 0.0
        public var deviceLost = 0
        /// Frames the voice activity detector found speech in (0 without an echo path).
        public var framesWithVoice = 0
    }

    public let device: String?
    public let format: AudioStreamFormat
    private let module: any AudioDeviceModule
    private let echo: EchoPath?
    private let onEvent: @Sendable (AudioDeviceEvent) -> Void
    private let callback = Locked<(@Sendable (AudioFrame) -> Void)?>(nil)
    private let muted = Locked(false)
    private let counters = Locked(Stats())
    private let thread = AudioDeviceThreadSlot<AudioCaptureBox>()

    public init(module: any AudioDeviceModule, device: String?, format: AudioStreamFormat = .mono48k,
                echo: EchoPath? = nil, onEvent: @escaping @Sendable (AudioDeviceEvent) -> Void = { _ in }) {
        self.module = module
        self.device = device
        self.format = format
        self.echo = echo
        self.onEvent = onEvent
    }

    deinit { stop() }

    public var onFrame: (@Sendable (AudioFrame) -> Void)? {
        get { callback.withLock { $0 } }
        set { callback.withLock { $0 = newValue } }
    }

    public var isMuted: Bool {
        get { muted.value }
        set { muted.withLock { $0 = newValue } }
    }

    public var stats: Stats { counters.value }

    /// Opens the device and starts capturing; throws if it cannot be opened.
    public func start() throws(AudioDeviceError) {
        stop()
        let (module, device, format, echo, counters, callback) = (self.module, self.device, self.format, self.echo, self.counters, self.callback)
        let muted = self.muted
        let open: @Sendable () throws(AudioDeviceError) -> AudioCaptureBox = {
            AudioCaptureBox(try module.openCapture(device: device, format: format))
        }
        let first = try open()
        let onEvent = self.onEvent
        let t = AudioDeviceThread(name: "swiftrtc.audio-capture", device: device ?? "default", first: first, open: open, frame: { box throws(AudioDeviceError) in
            try box.stream.read(into: &box.buffer)
            let readAt = MonotonicClock.nanoseconds()
            if box.frames % 10 == 0 { box.delayMs = box.stream.delayMs() }
            box.frames += 1
            var frame = AudioFrame(samples: .int16(box.buffer), sampleRate: format.sampleRate, channels: format.channels,
                                   timestampNs: readAt - Int64(box.delayMs) * 1_000_000)
            var voice = false
            if let echo {
                frame = echo.capture(frame, captureDelayMs: box.delayMs)
                voice = echo.processor.streamHasVoice
            }
            let pcm = frame.int16Samples
            let power = pcm.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(pcm.count, 1))
            let delay = box.delayMs
            counters.withLock {
                $0.framesCaptured += 1
                $0.level = power.squareRoot() / 32768
                $0.deviceDelayMs = delay
                if voice { $0.framesWithVoice += 1 }
            }
            if muted.value {
                if box.silence.count != pcm.count { box.silence = [Int16](repeating: 0, count: pcm.count) }
                frame.samples = .int16(box.silence)
            }
            callback.value?(frame)
        }, close: { $0.stream.close() }, onEvent: { event in
            if case .lost = event { counters.withLock { $0.deviceLost += 1 } }
            onEvent(event)
        })
        thread.set(t)
    }

    /// Stops capturing and closes the device. Idempotent.
    public func stop() {
        thread.stop()
    }
}

/// The capture stream and the audio thread's buffers (touched on that thread only).
final class AudioCaptureBox: @unchecked Sendable {
    // @unchecked: everything but `stream` is used by the capture thread alone.
    let stream: any AudioCaptureStream
    var buffer: [Int16] = []
    var silence: [Int16] = []
    var frames = 0
    var delayMs = 0
    init(_ stream: any AudioCaptureStream) { self.stream = stream }
}
