import AudioProcessing
import Media
import Locks

/// One echo path: the audio processor shared by playout and capture. Playout hands it the exact
/// mix going to the speaker (the echo canceller's reference) with the speaker's delay; capture
/// runs the microphone through it with the microphone's delay. The stream delay the processor
/// gets is their sum, as libwebrtc's `AudioDeviceModule` reports playout + recording delay.
public final class EchoPath: Sendable {
    public let processor: AudioProcessor
    private let delays = Locked((playout: 0, capture: 0))

    public init(options: AudioProcessingOptions, sampleRate: Int = 48000, channels: Int = 1) throws(MediaError) {
        processor = try AudioProcessor(sampleRate: sampleRate, channels: channels, options: options)
    }

    public var options: AudioProcessingOptions {
        get { processor.options }
        set { processor.update(options: newValue) }
    }

    /// playout + capture delay, ms.
    public var streamDelayMs: Int { delays.withLock { $0.playout + $0.capture } }

    /// The far end as played: call with every frame written to the speaker.
    public func render(_ frame: AudioFrame, playoutDelayMs: Int) {
        let total = delays.withLock { d -> Int in
            d.playout = playoutDelayMs
            return d.playout + d.capture
        }
        processor.setStreamDelay(ms: total)
        processor.processRender(frame)
    }

    /// The near end: every microphone frame, processed (echo removed, gain, noise, high-pass).
    public func capture(_ frame: AudioFrame, captureDelayMs: Int) -> AudioFrame {
        let total = delays.withLock { d -> Int in
            d.capture = captureDelayMs
            return d.playout + d.capture
        }
        processor.setStreamDelay(ms: total)
        return processor.processCapture(frame)
    }
}
