import Media
import Locks

/// Mixes every remote audio track: each input has its own `PlayoutBuffer`; `mix` pulls 10 ms
/// from all of them and sums them (saturating) at the output volume. Inputs may be pushed from
/// any thread (the decoders) while the audio thread mixes.
public final class AudioMixer: Sendable {
    public let sampleRate: Int
    private struct State {
        var inputs: [String: PlayoutBuffer] = [:]
        var volume = 1.0
        var droppedFrames = 0
    }
    private let state = Locked(State())
    private let bufferConfiguration: PlayoutBuffer.Configuration

    public init(sampleRate: Int = 48000, buffer: PlayoutBuffer.Configuration = PlayoutBuffer.Configuration()) {
        self.sampleRate = sampleRate
        var c = buffer
        c.sampleRate = sampleRate
        bufferConfiguration = c
    }

    /// Output volume, 0…1 (values outside are clamped), applied after mixing.
    public var volume: Double {
        get { state.withLock { $0.volume } }
        set { state.withLock { $0.volume = newValue.isFinite ? min(max(newValue, 0), 1) : 1 } }
    }

    public func addInput(_ id: String) {
        state.withLock { s in if s.inputs[id] == nil { s.inputs[id] = PlayoutBuffer(configuration: bufferConfiguration) } }
    }

    public func removeInput(_ id: String) {
        state.withLock { _ = $0.inputs.removeValue(forKey: id) }
    }

    public var inputIDs: [String] { state.withLock { $0.inputs.keys.sorted() } }

    /// Queues a decoded frame for input `id` (added if new). Stereo is downmixed; a frame at
    /// another rate is dropped and counted.
    public func push(_ id: String, frame: AudioFrame, nowNs: Int64) {
        guard frame.sampleRate == sampleRate, frame.channels == 1 || frame.channels == 2 else {
            state.withLock { $0.droppedFrames += 1 }
            return
        }
        var pcm = frame.int16Samples
        if frame.channels == 2 {
            pcm = (0..<pcm.count / 2).map { Int16((Int(pcm[2 * $0]) + Int(pcm[2 * $0 + 1])) / 2) }
        }
        state.withLock { s in
            if s.inputs[id] == nil { s.inputs[id] = PlayoutBuffer(configuration: bufferConfiguration) }
            s.inputs[id]?.push(pcm, nowNs: nowNs)
        }
    }

    /// The next `count` mono samples of the mix (silence with no inputs).
    public func mix(_ count: Int, nowNs: Int64) -> [Int16] {
        state.withLock { s in
            var parts: [[Int16]] = []
            parts.reserveCapacity(s.inputs.count)
            for id in s.inputs.keys {
                if let part = s.inputs[id]?.pull(count, nowNs: nowNs) { parts.append(part) }
            }
            return Self.sum(parts, count: count, gain: s.volume)
        }
    }

    public var stats: (inputs: [String: PlayoutBuffer.Stats], droppedFrames: Int) {
        state.withLock { s in (s.inputs.mapValues(\.stats), s.droppedFrames) }
    }

    /// Sample-wise sum of `parts` times `gain`, clipped to 16 bits.
    public static func sum(_ parts: [[Int16]], count: Int, gain: Double = 1) -> [Int16] {
        var acc = [Int32](repeating: 0, count: count)
        for part in parts {
            for i in 0..<min(count, part.count) { acc[i] += Int32(part[i]) }
        }
        return acc.map { v in
            let scaled = gain == 1 ? Double(v) : (Double(v) * gain).rounded()
            return Int16(max(-32768, min(32767, scaled)))
        }
    }
}
