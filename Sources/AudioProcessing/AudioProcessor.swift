internal import CAudioProcessing
import Media
import Locks

/// Microphone-side audio processing: feed every captured frame through `processCapture` and
/// every frame sent to the loudspeaker through `processRender`. Echo cancellation of mono audio
/// is `LinearEchoCanceller` (speexdsp) fed by `EchoReference`; gain control, noise suppression
/// and the high-pass filter are libwebrtc's APM, which also cancels echo for stereo capture.
///
/// Frames are 10 ms; longer frames that are a whole number of 10 ms chunks (20 ms) are split and
/// processed chunk by chunk. Capture and render may run on two threads at the same time; options
/// and the stream delay may change from any thread and take effect with the next chunk.
public final class AudioProcessor: @unchecked Sendable {
    // @unchecked: `handle` is only used through the C shim, which serializes each direction
    // (capture, render) with its own mutex and keeps options and delay in atomics; the Swift-side
    // state is behind `state`.
    private let handle: OpaquePointer
    public let sampleRate: Int
    public let channels: Int

    private struct State {
        var options: AudioProcessingOptions
        var streamDelayMs: Int = 0
        var lastError: MediaError?
    }
    private let state: Locked<State>

    /// The mono echo canceller and its reference stream (render and capture threads).
    private struct Echo: ~Copyable {
        var reference: EchoReference
        var canceller: LinearEchoCanceller?
        var failed = false
    }
    private let echo: Locked<Echo>

    /// - Parameters:
    ///   - sampleRate: 8000, 16000, 32000 or 48000 (other multiples of 100 Hz are resampled).
    ///   - channels: 1 or 2.
    public init(sampleRate: Int = 48000, channels: Int = 1,
                options: AudioProcessingOptions = .all) throws(MediaError) {
        guard (8000...48000).contains(sampleRate), sampleRate % 100 == 0 else {
            throw MediaError("AudioProcessor: unsupported sample rate \(sampleRate) Hz (8000…48000, a multiple of 100)")
        }
        guard (1...2).contains(channels) else {
            throw MediaError("AudioProcessor: unsupported channel count \(channels) (1 or 2)")
        }
        guard let handle = capm_create(Int32(sampleRate), Int32(channels)) else {
            throw MediaError("AudioProcessor: webrtc-audio-processing failed to create a processor for \(sampleRate) Hz, \(channels) channel(s)")
        }
        self.handle = handle
        self.sampleRate = sampleRate
        self.channels = channels
        self.state = Locked(State(options: options))
        self.echo = Locked(Echo(reference: EchoReference(sampleRate: sampleRate)))
        let result = capm_set_components(handle, Self.apmBits(options, channels: channels))
        if result != 0 {
            capm_destroy(handle)
            throw MediaError("AudioProcessor: enabling \(options) failed: \(Self.describe(result))")
        }
    }

    deinit { capm_destroy(handle) }

    /// The components currently running.
    public var options: AudioProcessingOptions { state.withLock { $0.options } }

    /// Why the last frame was passed through unprocessed, if it was (wrong rate, channel count or
    /// length). Cleared by the next frame processed successfully.
    public var lastError: MediaError? { state.withLock { $0.lastError } }

    /// Switches components on or off while running (the per-track goog* constraints).
    public func update(options: AudioProcessingOptions) {
        state.withLock { state in
            let result = capm_set_components(handle, Self.apmBits(options, channels: channels))
            state.options = options
            state.lastError = result == 0 ? nil
                : MediaError("AudioProcessor: applying \(options) failed: \(Self.describe(result))")
        }
    }

    /// Time between a frame passed to `processRender` and the capture frame that holds its echo
    /// (playout buffering + capture buffering). The echo canceller also estimates it itself
    /// (delay-agnostic mode); a good value here speeds up convergence.
    public func setStreamDelay(ms: Int) {
        let clamped = max(0, min(ms, 500))
        state.withLock { $0.streamDelayMs = clamped }
        capm_set_stream_delay_ms(handle, Int32(clamped))
    }

    public var streamDelayMs: Int { state.withLock { $0.streamDelayMs } }

    /// Whether the echo canceller thinks the last capture chunk might contain echo.
    public var streamHasEcho: Bool { capm_stream_has_echo(handle) != 0 }

    /// Whether the last capture chunk held speech (libwebrtc's voice activity detector; it runs
    /// while any component is on).
    public var streamHasVoice: Bool { capm_stream_has_voice(handle) != 0 }

    /// The echo canceller's own estimate of the render→capture delay, once it has one: for mono,
    /// the filter's impulse-response peak after the reference it was given.
    public var estimatedEchoDelayMs: Int? {
        if channels == 1 {
            return echo.withLock { e -> Int? in
                // The echo lags the reference by `peak`; the reference frame ends `age − frame`
                // before the newest render.
                guard let canceller = e.canceller, let peak = canceller.impulsePeakSamples(),
                      let age = e.reference.referenceAgeSamples else { return nil }
                return (age - canceller.frameSize + peak) * 1000 / sampleRate
            }
        }
        let median = capm_echo_delay_median_ms(handle)
        return median >= 0 ? Int(median) : nil
    }

    /// How often the echo canceller's reference had to be re-placed (render and capture drifted
    /// apart by more than 30 ms); each costs the filter some re-learning.
    public var echoReferenceResyncs: Int { echo.withLock { $0.reference.resyncs } }

    /// The APM's components: echo cancellation of mono audio is done before it, not by it.
    private static func apmBits(_ options: AudioProcessingOptions, channels: Int) -> UInt32 {
        var bits = options.componentBits
        if channels == 1, options.echoCancellation {
            // The voice activity detector keeps running for the stats (`streamHasVoice`).
            bits &= ~UInt32(CAPM_ECHO_CANCELLATION)
            bits |= UInt32(CAPM_VOICE_DETECTION)
        }
        return bits
    }

    /// Mono, echo cancellation on, a far end heard: the echo taken out, 10 ms at a time.
    private func cancelEcho(_ input: [Int16]) -> [Int16] {
        guard channels == 1, options.echoCancellation else { return input }
        let delaySamples = streamDelayMs * sampleRate / 1000
        return echo.withLock { e -> [Int16] in
            guard e.reference.hasReference, !e.failed else { return input }
            if e.canceller == nil {
                e.canceller = LinearEchoCanceller(sampleRate: sampleRate)
                if e.canceller == nil {
                    e.failed = true
                    return input
                }
            }
            guard let canceller = e.canceller else { return input }
            var out = [Int16]()
            out.reserveCapacity(input.count)
            input.withUnsafeBufferPointer { mic in
                var start = 0
                while start + canceller.frameSize <= mic.count {
                    let resyncs = e.reference.resyncs
                    let reference = e.reference.frame(streamDelaySamples: delaySamples)
                    // A moved reference makes the learned echo path wrong: start over, which also
                    // puts the filter back in its fast initial adaptation.
                    if e.reference.resyncs != resyncs { canceller.reset() }
                    reference.withUnsafeBufferPointer { ref in
                        out += canceller.process(capture: UnsafeBufferPointer(rebasing: mic[start..<(start + canceller.frameSize)]), reference: ref)
                    }
                    start += canceller.frameSize
                }
            }
            return out
        }
    }

    /// Processes near-end (microphone) audio. Returns a frame of the same format, duration and
    /// timestamp. A frame that cannot be processed (rate, channel count or a length that is not a
    /// whole number of 10 ms) comes back unchanged and `lastError` says why.
    public func processCapture(_ frame: AudioFrame) -> AudioFrame {
        if let problem = check(frame, direction: "capture") {
            record(problem)
            return frame
        }
        let frames = frame.samplesPerChannel
        let rate = Int32(frame.sampleRate), ch = Int32(frame.channels)
        var result: Int32 = 0
        var out = frame
        var samples = frame.samples
        if channels == 1, options.echoCancellation {
            switch samples {
            case .int16(let input): samples = .int16(cancelEcho(input))
            case .float(let input):
                samples = .float(cancelEcho(input.map { Int16(clamping: Int(($0 * 32768).rounded())) }).map { Float($0) / 32768 })
            }
        }
        switch samples {
        case .int16(let input):
            let output = [Int16](unsafeUninitializedCapacity: input.count) { buffer, count in
                input.withUnsafeBufferPointer { src in
                    result = capm_process_capture_s16(handle, src.baseAddress, buffer.baseAddress, frames, rate, ch)
                }
                count = input.count
            }
            out.samples = .int16(output)
        case .float(let input):
            let output = [Float](unsafeUninitializedCapacity: input.count) { buffer, count in
                input.withUnsafeBufferPointer { src in
                    result = capm_process_capture_f32(handle, src.baseAddress, buffer.baseAddress, frames, rate, ch)
                }
                count = input.count
            }
            out.samples = .float(output)
        }
        if result != 0 {
            record(MediaError("AudioProcessor: capture processing failed: \(Self.describe(result))"))
            return frame
        }
        record(nil)
        return out
    }

    /// Feeds far-end audio (what the loudspeaker plays), the echo canceller's reference. Only used
    /// while echo cancellation or gain control is on; cheap otherwise.
    public func processRender(_ frame: AudioFrame) {
        if let problem = check(frame, direction: "render") {
            record(problem)
            return
        }
        let frames = frame.samplesPerChannel
        let rate = Int32(frame.sampleRate), ch = Int32(frame.channels)
        if channels == 1, frame.channels == 1, options.echoCancellation {
            let mono = frame.int16Samples
            echo.withLock { e in mono.withUnsafeBufferPointer { e.reference.render($0) } }
        }
        let result: Int32
        switch frame.samples {
        case .int16(let input):
            result = input.withUnsafeBufferPointer { capm_process_render_s16(handle, $0.baseAddress, frames, rate, ch) }
        case .float(let input):
            result = input.withUnsafeBufferPointer { capm_process_render_f32(handle, $0.baseAddress, frames, rate, ch) }
        }
        if result != 0 {
            record(MediaError("AudioProcessor: render processing failed: \(Self.describe(result))"))
        }
    }

    private func check(_ frame: AudioFrame, direction: String) -> MediaError? {
        guard (8000...48000).contains(frame.sampleRate), frame.sampleRate % 100 == 0 else {
            return MediaError("AudioProcessor: \(direction) frame at \(frame.sampleRate) Hz is not supported")
        }
        guard (1...2).contains(frame.channels) else {
            return MediaError("AudioProcessor: \(direction) frame has \(frame.channels) channels (1 or 2 supported)")
        }
        let count: Int
        switch frame.samples {
        case .int16(let s): count = s.count
        case .float(let s): count = s.count
        }
        let chunk = frame.sampleRate / 100
        guard count > 0, count % frame.channels == 0, (count / frame.channels) % chunk == 0 else {
            return MediaError("AudioProcessor: \(direction) frame has \(count) samples for \(frame.channels) channel(s); "
                              + "needs a whole number of 10 ms chunks (\(chunk * frame.channels) samples each)")
        }
        return nil
    }

    private func record(_ error: MediaError?) {
        state.withLock { $0.lastError = error }
    }

    private static func describe(_ code: Int32) -> String {
        "\(String(cString: capm_error_string(code))) (\(code))"
    }
}
