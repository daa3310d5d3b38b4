/// The small adaptive jitter buffer between a decoder and the speaker: decoded PCM arrives in
/// 20 ms frames on the network's schedule and leaves in 10 ms frames on the device's clock.
///
/// It starts playing once `targetMs` is buffered. Running dry is an underrun: what is left plays,
/// the rest is silence, the target grows by `stepMs` and it buffers up to the new target again.
/// A target that held for `shrinkAfterNs` without an underrun comes down by 10 ms; more than
/// `maxExcessMs` above the target (a sender clock faster than ours, a burst after a stall) is
/// dropped from the oldest end. Mono, deterministic: time only comes in as arguments.
public struct PlayoutBuffer: Sendable {
    public struct Configuration: Sendable {
        public var sampleRate = 48000
        public var initialTargetMs = 40, minTargetMs = 20, maxTargetMs = 200
        public var stepMs = 20
        public var maxExcessMs = 60
        public var shrinkAfterNs: Int64 = 5_000_000_000
        public init() {}
    }

    public struct Stats: Sendable, Equatable {
        public var samplesPlayed = 0
        /// Silence played while buffering or after an underrun.
        public var samplesSilent = 0
        public var underruns = 0
        public var samplesDropped = 0
        public var targetMs = 0
        public var levelMs = 0
    }

    public let configuration: Configuration
    public private(set) var targetMs: Int
    public private(set) var isPlaying = false
    private var samples: [Int16] = []
    private var readIndex = 0
    private var lastTargetChangeNs: Int64?
    private var counters = Stats()

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        targetMs = configuration.initialTargetMs
    }

    public var levelSamples: Int { samples.count - readIndex }
    public var levelMs: Int { levelSamples * 1000 / configuration.sampleRate }

    public var stats: Stats {
        var s = counters
        s.targetMs = targetMs
        s.levelMs = levelMs
        return s
    }

    private func samples(ms: Int) -> Int { ms * configuration.sampleRate / 1000 }

    public mutating func push(_ frame: [Int16], nowNs: Int64) {
        samples.append(contentsOf: frame)
        let limit = samples(ms: targetMs + configuration.maxExcessMs)
        if levelSamples > limit {
            let drop = levelSamples - samples(ms: targetMs)
            readIndex += drop
            counters.samplesDropped += drop
        }
        compact()
    }

    /// Exactly `count` samples: buffered audio, then silence if there is not enough.
    public mutating func pull(_ count: Int, nowNs: Int64) -> [Int16] {
        if lastTargetChangeNs == nil { lastTargetChangeNs = nowNs }
        if !isPlaying {
            guard levelSamples >= samples(ms: targetMs), levelSamples > 0 else {
                counters.samplesSilent += count
                return [Int16](repeating: 0, count: count)
            }
            isPlaying = true
        }
        let available = min(count, levelSamples)
        var out = Array(samples[readIndex..<(readIndex + available)])
        readIndex += available
        counters.samplesPlayed += available
        if available < count {
            out.append(contentsOf: repeatElement(0, count: count - available))
            counters.samplesSilent += count - available
            counters.underruns += 1
            isPlaying = false
            targetMs = min(configuration.maxTargetMs, targetMs + configuration.stepMs)
            lastTargetChangeNs = nowNs
        } else if let since = lastTargetChangeNs, nowNs - since >= configuration.shrinkAfterNs {
            targetMs = max(configuration.minTargetMs, targetMs - 10)
            lastTargetChangeNs = nowNs
        }
        compact()
        return out
    }

    /// Drops what was read once it is the larger part, so the array does not grow forever.
    private mutating func compact() {
        if readIndex > 0, readIndex >= samples.count / 2 {
            samples.removeFirst(readIndex)
            readIndex = 0
        }
    }
}
