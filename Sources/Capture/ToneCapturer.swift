#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Media
import Locks

/// A sine tone as an audio source: 48 kHz mono 16-bit PCM, `level` × full scale, in 10 or 20 ms
/// frames paced on the capturer's own thread (timestamps CLOCK_MONOTONIC ns). The phase runs on
/// across frames, so the tone is continuous.
public final class ToneCapturer: AudioCapturer, Sendable {
    public static let sampleRate = 48000
    public let frequency: Double
    /// Peak amplitude as a fraction of full scale, 0…1.
    public let level: Double
    public let frameDuration: AudioFrameDuration

    private struct State {
        var onFrame: (@Sendable (AudioFrame) -> Void)?
        /// Samples produced so far (drives the phase and manual timestamps).
        var sampleIndex: Int64 = 0
    }
    private let state = Locked(State())
    private let thread = PacedThreadSlot()

    /// `frequency` is clamped to 0…24000 Hz and `level` to 0…1.
    public init(frequency: Double = 440, level: Double = 0.25, frameDuration: AudioFrameDuration = .ms10) {
        self.frequency = frequency.isFinite ? min(max(frequency, 0), Double(Self.sampleRate) / 2) : 0
        self.level = level.isFinite ? min(max(level, 0), 1) : 0
        self.frameDuration = frameDuration
    }

    deinit { stop() }

    public var onFrame: (@Sendable (AudioFrame) -> Void)? {
        get { state.withLock { $0.onFrame } }
        set { state.withLock { $0.onFrame = newValue } }
    }

    public var isRunning: Bool { thread.isRunning }

    /// Starts delivering frames to `onFrame` every 10 or 20 ms. Restarts if already running.
    public func start() {
        thread.start(prepare: { frameDuration.nanoseconds }) { [weak self] _, now in
            guard let self else { return false }
            let frame = self.nextFrame(timestampNs: now)
            self.state.withLock { $0.onFrame }?(frame)
            return true
        }
    }

    /// Stops and joins the capture thread. Idempotent.
    public func stop() { thread.stop() }

    /// Manual mode: the next frame of the tone (not passed to `onFrame`). Timestamps default to
    /// the frame's position in the tone (first sample = 0 ns).
    public func nextFrame(timestampNs: Int64? = nil) -> AudioFrame {
        let count = frameDuration.samples(atRate: Self.sampleRate)
        let start = state.withLock { s -> Int64 in
            let first = s.sampleIndex
            s.sampleIndex += Int64(count)
            return first
        }
        let rate = Double(Self.sampleRate)
        // Phase from the sample index modulo one period keeps precision over long runs; within a
        // frame the phasor turns by one sample's angle per sample (two multiply-adds, where a
        // sin() per sample was 1% of a publisher's CPU), from sin/cos of the frame's first phase.
        let periodSamples = frequency > 0 ? rate / frequency : 0
        let amplitude = level * 32767
        let phase = periodSamples > 0 ? 2 * Double.pi * Double(start).truncatingRemainder(dividingBy: periodSamples) / periodSamples : 0
        let step = periodSamples > 0 ? 2 * Double.pi / periodSamples : 0
        let (stepSin, stepCos) = (sin(step), cos(step))
        var (y, x) = (sin(phase), cos(phase))
        let samples = [Int16](unsafeUninitializedCapacity: count) { out, initialized in
            for i in 0..<count {
                out[i] = Int16((amplitude * y).rounded())
                (y, x) = (y * stepCos + x * stepSin, x * stepCos - y * stepSin)
            }
            initialized = count
        }
        let ts = timestampNs ?? start * 1_000_000_000 / Int64(Self.sampleRate)
        return AudioFrame(samples: .int16(samples), sampleRate: Self.sampleRate, channels: 1, timestampNs: ts)
    }
}
