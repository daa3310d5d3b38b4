import Media
import Locks

/// Plays a 16-bit PCM WAV file as an audio source: resampled to 48 kHz (windowed sinc), in 10 or
/// 20 ms frames with the file's channel count, paced on the capturer's own thread (timestamps
/// CLOCK_MONOTONIC ns). Loops on request; otherwise the last frame is padded with silence and
/// `.ended` goes on `events`.
public final class WAVFileCapturer: AudioCapturer, Sendable {
    public static let outputRate = 48000
    public let path: String
    public let loop: Bool
    public let frameDuration: AudioFrameDuration

    private struct Callbacks {
        var onFrame: (@Sendable (AudioFrame) -> Void)?
    }
    private let callbacks = Locked(Callbacks())
    private let playback = Locked<Playback?>(nil)
    private let thread = PacedThreadSlot()

    /// The end of the file, or a read error (the newest 16 wait for a reader).
    public let events: AsyncStream<FileCaptureEvent>
    private let eventSink: AsyncStream<FileCaptureEvent>.Continuation

    public init(path: String, loop: Bool = false, frameDuration: AudioFrameDuration = .ms10) {
        self.path = path
        self.loop = loop
        self.frameDuration = frameDuration
        (events, eventSink) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(16))
    }

    deinit {
        stop()
        eventSink.finish()
    }

    public var onFrame: (@Sendable (AudioFrame) -> Void)? {
        get { callbacks.withLock { $0.onFrame } }
        set { callbacks.withLock { $0.onFrame = newValue } }
    }

    public var isRunning: Bool { thread.isRunning }

    /// The file's own rate and channel count (opens it if needed).
    public func fileFormat() throws -> (sampleRate: Int, channels: Int) {
        try withPlayback { ($0.reader.sampleRate, $0.reader.channels) }
    }

    /// Opens the file and delivers frames to `onFrame` from its start. Throws a `MediaError`
    /// naming the file when it is missing or not a supported WAV.
    public func start() throws {
        let started = try thread.start(prepare: {
            try withPlayback { try $0.restart() }
            return frameDuration.nanoseconds
        }) { [weak self] _, now in
            guard let self else { return false }
            do {
                guard let frame = try self.nextFrame(timestampNs: now) else {
                    self.eventSink.yield(.ended)
                    return false
                }
                self.callbacks.withLock { $0.onFrame }?(frame)
                return true
            } catch {
                let e = error as? MediaError ?? MediaError("\(self.path): \(error)")
                self.eventSink.yield(.failed(e))
                return false
            }
        }
        guard started else { throw MediaError("\(path): cannot start the capture thread") }
    }

    /// Stops and joins the capture thread. Idempotent.
    public func stop() { thread.stop() }

    /// Manual mode: the next 48 kHz frame (not passed to `onFrame`), or nil after the end of a
    /// non-looping file. Timestamps default to the frame's position in the output (0 first).
    public func nextFrame(timestampNs: Int64? = nil) throws -> AudioFrame? {
        let duration = frameDuration
        return try withPlayback { p in try p.nextFrame(duration: duration, loop: loop, timestampNs: timestampNs) }
    }

    private func withPlayback<T>(_ body: (Playback) throws -> T) throws -> T {
        try playback.withLock { slot in
            let p: Playback
            if let existing = slot {
                p = existing
            } else {
                p = try Playback(reader: WAVReader(path: path))
                slot = p
            }
            return try body(p)
        }
    }
}

/// Reader + resampler + the 48 kHz samples not yet handed out.
private final class Playback: @unchecked Sendable {
    // @unchecked: used only under WAVFileCapturer's playback lock.
    let reader: WAVReader
    private var resampler: AudioResampler
    private var output: [Int16] = []
    private var inputEnded = false
    private var framesOut: Int64 = 0

    init(reader: WAVReader) throws {
        self.reader = reader
        resampler = try AudioResampler(inputRate: reader.sampleRate, outputRate: WAVFileCapturer.outputRate,
                                       channels: reader.channels)
    }

    func restart() throws {
        try reader.rewind()
        resampler = try AudioResampler(inputRate: reader.sampleRate, outputRate: WAVFileCapturer.outputRate,
                                       channels: reader.channels)
        output.removeAll(keepingCapacity: true)
        inputEnded = false
        framesOut = 0
    }

    func nextFrame(duration: AudioFrameDuration, loop: Bool, timestampNs: Int64?) throws -> AudioFrame? {
        let channels = reader.channels
        let perChannel = duration.samples(atRate: WAVFileCapturer.outputRate)
        let need = perChannel * channels
        // Input frames per read: about one output frame's worth.
        let chunk = max(64, perChannel * reader.sampleRate / WAVFileCapturer.outputRate + 1)
        while output.count < need && !inputEnded {
            let input = try reader.read(maxFrames: chunk)
            if input.isEmpty {
                if loop && reader.frameCount > 0 {
                    try reader.rewind()   // the resampler runs on across the seam
                    continue
                }
                inputEnded = true
                output += resampler.flush()
            } else {
                output += resampler.process(input)
            }
        }
        guard !output.isEmpty else { return nil }
        var samples = Array(output.prefix(need))
        output.removeFirst(samples.count)
        if samples.count < need { samples += repeatElement(0, count: need - samples.count) }   // pad the tail
        let ts = timestampNs ?? framesOut * duration.nanoseconds
        framesOut += 1
        return AudioFrame(samples: .int16(samples), sampleRate: WAVFileCapturer.outputRate, channels: channels, timestampNs: ts)
    }
}
