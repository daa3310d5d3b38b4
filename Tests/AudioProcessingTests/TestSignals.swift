import Foundation
import Media
import SeededRandom

/// Deterministic signals and level measurements for the processing tests.
enum TestSignal {
    static let rate = 48000

    /// Uniform white noise in [-amplitude, amplitude], the same for a seed.
    static func whiteNoise(samples: Int, amplitude: Float, seed: UInt64 = 1) -> [Float] {
        var random = SplitMix64(seed: seed)
        return (0..<samples).map { _ in Float(random.unit() * 2 - 1) * amplitude }
    }

    static func tone(hz: Double, amplitude: Double, samples: Int, offset: Int = 0) -> [Float] {
        (0..<samples).map { n in Float(amplitude * sin(2 * Double.pi * hz * Double(n + offset) / Double(rate))) }
    }

    static func energy<C: Collection>(_ x: C) -> Double where C.Element == Float {
        x.reduce(0.0) { $0 + Double($1) * Double($1) }
    }

    static func dB(_ ratio: Double) -> Double { 10 * log10(ratio) }

    /// 10 ms float frames of mono audio.
    static func frames(_ samples: [Float], ms: Int = 10) -> [AudioFrame] {
        let size = rate / 1000 * ms
        return stride(from: 0, to: samples.count - size + 1, by: size).enumerated().map { index, start in
            AudioFrame(samples: .float(Array(samples[start..<start + size])), timestampNs: Int64(index * ms) * 1_000_000)
        }
    }

    static func floats(_ frame: AudioFrame) -> [Float] {
        switch frame.samples {
        case .float(let f): return f
        case .int16(let s): return s.map { Float($0) / 32768 }
        }
    }

    /// Energy left after removing the best-fitting sinusoid at `hz` in each 100 ms block: what
    /// remains of a signal once a known near-end tone is taken out.
    static func energyWithoutTone<C: RandomAccessCollection>(_ x: C, hz: Double, offset: Int) -> Double
    where C.Element == Float, C.Index == Int {
        var total = 0.0
        let block = rate / 10
        var start = x.startIndex
        while start + block <= x.endIndex {
            var ss = 0.0, cc = 0.0, sc = 0.0, xs = 0.0, xc = 0.0
            for i in start..<start + block {
                let t = 2 * Double.pi * hz * Double(i - x.startIndex + offset) / Double(rate)
                let s = sin(t), c = cos(t), v = Double(x[i])
                ss += s * s; cc += c * c; sc += s * c; xs += v * s; xc += v * c
            }
            // Least squares for a·sin + b·cos.
            let det = ss * cc - sc * sc
            let a = (xs * cc - xc * sc) / det, b = (xc * ss - xs * sc) / det
            for i in start..<start + block {
                let t = 2 * Double.pi * hz * Double(i - x.startIndex + offset) / Double(rate)
                let r = Double(x[i]) - a * sin(t) - b * cos(t)
                total += r * r
            }
            start += block
        }
        return total
    }

    /// Energy (dB) below or above a corner: 8th-order Butterworth (four RBJ biquads of Q from
    /// the Butterworth poles), enough to keep two talkers an octave apart out of each other.
    static func bandDB(_ x: [Float], below corner: Double) -> Double { dB(energy(butterworth(x, corner: corner, highPass: false)) + 1e-12) }
    static func bandDB(_ x: [Float], above corner: Double) -> Double { dB(energy(butterworth(x, corner: corner, highPass: true)) + 1e-12) }

    private static func butterworth(_ x: [Float], corner: Double, highPass: Bool) -> [Float] {
        var y = x.map(Double.init)
        let w = 2 * Double.pi * corner / Double(rate), cw = cos(w)
        for k in 0..<4 {
            let q = 1 / (2 * cos(Double.pi * (2 * Double(k) + 1) / 16))
            let alpha = sin(w) / (2 * q)
            let b0 = highPass ? (1 + cw) / 2 : (1 - cw) / 2, b1 = highPass ? -(1 + cw) : 1 - cw
            let a0 = 1 + alpha, a1 = -2 * cw, a2 = 1 - alpha
            var x1 = 0.0, x2 = 0.0, y1 = 0.0, y2 = 0.0
            for i in y.indices {
                let v = (b0 * y[i] + b1 * x1 + b0 * x2 - a1 * y1 - a2 * y2) / a0
                x2 = x1; x1 = y[i]; y2 = y1; y1 = v
                y[i] = v
            }
        }
        return y.map { Float($0) }
    }
}
