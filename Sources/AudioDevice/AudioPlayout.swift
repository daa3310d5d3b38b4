import Foundation
import Media
import Locks

/// Remote audio tracks → `AudioMixer` (a playout buffer per track) → the speaker, on its own
/// audio thread paced by the device. Every frame written to the device also goes to the
/// `EchoPath`, if any, with the device's reported delay.
public final class AudioPlayout: Sendable {
    public struct Stats: Sendable {
        public var framesPlayed = 0
        public var deviceDelayMs = 0
        public var inputs: [String: PlayoutBuffer.Stats] = [:]
        public var deviceLost = 0
    }

    /// The output in use (nil: the default).
    public var device: String? { deviceID.value }
    private let deviceID: Locked<String?>
    public let format: AudioStreamFormat
    public let mixer: AudioMixer
    private let module: any AudioDeviceModule
    private let echo: EchoPath?
    private let onEvent: @Sendable (AudioDeviceEvent) -> Void
    private let counters = Locked(Stats())
    private let thread = AudioDeviceThreadSlot<AudioPlayoutBox>()
    private let sinks = Locked<[ObjectIdentifier: (track: AudioTrack, sink: MixerInput)]>([:])

    /// `device` nil: the default output. `format.sampleRate` must be 48000 (what Opus decodes to).
    public init(module: any AudioDeviceModule, device: String?, format: AudioStreamFormat = .mono48k,
                echo: EchoPath? = nil, onEvent: @escaping @Sendable (AudioDeviceEvent) -> Void = { _ in }) {
        self.module = module
        deviceID = Locked(device)
        self.format = format
        self.echo = echo
        self.onEvent = onEvent
        mixer = AudioMixer(sampleRate: format.sampleRate, buffer: Self.bufferConfiguration)
    }

    /// Remote audio arrives from the connection's loop in 20 ms frames; a loop busy for a few
    /// tens of ms (getStats, a keyframe) delays them in a burst. Starting at 40 ms this ran dry
    /// once mid-stream in 2 of 3 clean CI runs (a 50 ms gap); 60 ms (never below 40) absorbs it.
    static var bufferConfiguration: PlayoutBuffer.Configuration {
        var c = PlayoutBuffer.Configuration()
        c.initialTargetMs = 60
        c.minTargetMs = 40
        return c
    }

    deinit { stop() }

    public var volume: Double {
        get { mixer.volume }
        set { mixer.volume = newValue }
    }

    /// Plays `track` (mixed with the others) until `remove`.
    /// Mixes `track` into what the speaker plays; adding it again changes nothing (a renegotiation
    /// or ICE restart announces the same tracks again).
    public func add(_ track: AudioTrack) {
        guard sinks.withLock({ $0[ObjectIdentifier(track)] == nil }) else { return }
        let input = MixerInput(id: track.id + "#" + String(UInt(bitPattern: ObjectIdentifier(track).hashValue), radix: 16), mixer: mixer)
        mixer.addInput(input.id)
        sinks.withLock { $0[ObjectIdentifier(track)] = (track, input) }
        track.addSink(input)
    }

    public func remove(_ track: AudioTrack) {
        guard let entry = sinks.withLock({ $0.removeValue(forKey: ObjectIdentifier(track)) }) else { return }
        track.removeSink(entry.sink)
        mixer.removeInput(entry.sink.id)
    }

    /// Opens the device and starts the audio thread; throws if the device cannot be opened.
    public func start() throws(AudioDeviceError) {
        guard format.sampleRate == 48000 else { throw .unsupportedFormat("playout runs at 48000 Hz, not \(format.sampleRate)") }
        stop()
        let (module, device, format, echo, mixer, counters, onEvent) = (self.module, self.deviceID.value, self.format, self.echo, self.mixer, self.counters, self.onEvent)
        let open: @Sendable () throws(AudioDeviceError) -> AudioPlayoutBox = {
            AudioPlayoutBox(try module.openPlayout(device: device, format: format))
        }
        let first = try open()
        let perChannel = format.sampleRate / 100
        let t = AudioDeviceThread(name: "swiftrtc.audio-playout", device: device ?? "default", first: first, open: open, frame: { box throws(AudioDeviceError) in
            let mono = mixer.mix(perChannel, nowNs: MonotonicClock.nanoseconds())
            let out = format.channels == 1 ? mono : mono.flatMap { repeatElement($0, count: format.channels) }
            // The device's delay moves slowly: ask the server every 100 ms, not every frame.
            if box.frames % 10 == 0 { box.delayMs = box.stream.delayMs() }
            box.frames += 1
            echo?.render(AudioFrame(samples: .int16(mono), sampleRate: format.sampleRate, channels: 1, timestampNs: MonotonicClock.nanoseconds()),
                         playoutDelayMs: box.delayMs)
            try box.stream.write(out)
            let delay = box.delayMs
            counters.withLock {
                $0.framesPlayed += 1
                $0.deviceDelayMs = delay
            }
        }, close: { $0.stream.close() }, onEvent: { event in
            if case .lost = event { counters.withLock { $0.deviceLost += 1 } }
            onEvent(event)
        })
        thread.set(t)
    }

    public func stop() {
        thread.stop()
    }

    /// Moves playout to another output (the reference app's speaker / earpiece route); the
    /// tracks and their buffers stay. If `id` cannot be opened the previous output resumes.
    public func switchDevice(to id: String?) throws(AudioDeviceError) {
        let previous = deviceID.withLock { d -> String? in
            defer { d = id }
            return d
        }
        do {
            try start()
        } catch {
            deviceID.withLock { $0 = previous }
            try? start()
            throw error
        }
    }

    public var stats: Stats {
        var s = counters.value
        s.inputs = mixer.stats.inputs
        return s
    }
}

/// The playout stream and the audio thread's own bookkeeping (touched on that thread only).
final class AudioPlayoutBox: @unchecked Sendable {
    // @unchecked: `frames` and `delayMs` are used by the playout thread alone.
    let stream: any AudioPlayoutStream
    var frames = 0
    var delayMs = 0
    init(_ stream: any AudioPlayoutStream) { self.stream = stream }
}

/// A track's sink: decoded frames into its mixer input (on the decoder's thread).
final class MixerInput: AudioRenderer, Sendable {
    let id: String
    let mixer: AudioMixer
    init(id: String, mixer: AudioMixer) {
        self.id = id
        self.mixer = mixer
    }
    func render(_ frame: AudioFrame) { mixer.push(id, frame: frame, nowNs: MonotonicClock.nanoseconds()) }
}
