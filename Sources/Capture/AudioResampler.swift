#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Media

/// Converts interleaved 16-bit PCM between sample rates with a polyphase windowed-sinc filter
/// (32 taps per phase when upsampling, Blackman window). Streaming: feed any number of frames to
/// `process`, then `flush` once at the end for the tail; the total output is exactly
/// ceil(inputFrames × outputRate / inputRate) frames.
public final class AudioResampler {
    public let inputRate: Int
    public let outputRate: Int
    public let channels: Int

    private let up: Int      // L: output phases per input step
    private let down: Int    // M
    private let half: Int    // T: taps each side
    private let taps: [Float]   // up × 2T coefficients
    /// Input frames not yet consumed, interleaved; pending[0] is input frame `pendingStart`.
    private var pending: [Float]
    private var pendingStart: Int
    private var inputFrames = 0
    private var outputIndex = 0
    private var flushed = false

    /// Rates from 1 Hz to 384 kHz; channels 1…8.
    public init(inputRate: Int, outputRate: Int, channels: Int) throws {
        guard (1...384_000).contains(inputRate), (1...384_000).contains(outputRate) else {
            throw MediaError("resampler: rates \(inputRate) → \(outputRate) Hz out of range")
        }
        guard (1...8).contains(channels) else { throw MediaError("resampler: \(channels) channels out of range (1…8)") }
        self.inputRate = inputRate
        self.outputRate = outputRate
        self.channels = channels
        func gcd(_ a: Int, _ b: Int) -> Int { b == 0 ? a : gcd(b, a % b) }
        let g = gcd(inputRate, outputRate)
        up = outputRate / g
        down = inputRate / g
        // Cut-off relative to the input Nyquist: the lower of the two rates' Nyquist, minus a margin.
        let cutoff = min(1.0, Double(outputRate) / Double(inputRate)) * 0.95
        let half = Int((16.0 / min(1.0, Double(outputRate) / Double(inputRate))).rounded(.up))
        self.half = half
        var taps = [Float](repeating: 0, count: up * 2 * half)
        for p in 0..<up {
            var sum = 0.0
            var row = [Double](repeating: 0, count: 2 * half)
            for j in 0..<(2 * half) {
                let d = Double(j - half + 1) - Double(p) / Double(up)   // input sample minus output position
                let x = cutoff * d
                let sinc = abs(x) < 1e-12 ? 1.0 : sin(Double.pi * x) / (Double.pi * x)
                let w = Self.blackman((d + Double(half)) / Double(2 * half))
                row[j] = cutoff * sinc * w
                sum += row[j]
            }
            for j in 0..<(2 * half) { taps[p * 2 * half + j] = Float(row[j] / sum) }   // unity gain at DC
        }
        self.taps = taps
        // Virtual zeros before the first sample so early outputs have full filter support.
        pending = [Float](repeating: 0, count: half * channels)
        pendingStart = -half
    }

    private static func blackman(_ t: Double) -> Double {
        guard t > 0, t < 1 else { return 0 }
        return 0.42 - 0.5 * cos(2 * Double.pi * t) + 0.08 * cos(4 * Double.pi * t)
    }

    /// Resamples the next interleaved frames; returns what can be produced so far.
    public func process(_ input: [Int16]) -> [Int16] {
        guard !flushed else { return [] }
        if outputRate == inputRate { inputFrames += input.count / channels; return input }
        let frames = input.count / channels
        pending.reserveCapacity(pending.count + frames * channels)
        for s in input.prefix(frames * channels) { pending.append(Float(s)) }
        inputFrames += frames
        return produce(upTo: nil)
    }

    /// The remaining output after the last input (the filter's tail). Call once.
    public func flush() -> [Int16] {
        guard !flushed else { return [] }
        flushed = true
        if outputRate == inputRate { return [] }
        pending.append(contentsOf: repeatElement(0, count: half * channels))
        let total = (inputFrames * up + down - 1) / down
        return produce(upTo: total)
    }

    private func produce(upTo limit: Int?) -> [Int16] {
        var out: [Int16] = []
        let available = pendingStart + pending.count / channels   // first input index not held
        let width = 2 * half
        taps.withUnsafeBufferPointer { h in
            pending.withUnsafeBufferPointer { x in
                while true {
                    if let limit, outputIndex >= limit { break }
                    let pos = outputIndex * down
                    let i = pos / up, p = pos % up
                    let first = i - half + 1
                    guard first + width <= available else { break }
                    if limit == nil, i >= inputFrames { break }   // only outputs inside the real input
                    let row = p * width
                    let base = (first - pendingStart) * channels
                    for c in 0..<channels {
                        var acc: Float = 0
                        var k = base + c
                        for j in 0..<width {
                            acc += h[row + j] * x[k]
                            k += channels
                        }
                        out.append(Int16(max(-32768, min(32767, acc.rounded()))))
                    }
                    outputIndex += 1
                }
            }
        }
        // Drop input no future output needs (in batches, to keep this O(n)).
        let nextFirst = (outputIndex * down) / up - half + 1
        let drop = nextFirst - pendingStart
        if drop > 4096 {
            pending.removeFirst(drop * channels)
            pendingStart += drop
        }
        return out
    }
}
