import Foundation
import Media

/// Deterministic signals and level measurements for the processing tests.
enum TestSignal {
    static let rate = 48000

    /// Uniform white noise in [-amplitude, amplitude] from a fixed-seed LCG.
    static func whiteNoise(samples: Int, amplitude: Float, seed: UInt64 = 1) -> [Float] {
        var state = seed
        return (0..<samples).map { _ in
            state = state &* 6364136223846793005 &+ 1442695040888963407
            let unit = Float(state >> 40) / Float(1 << 24)   // [0, 1)
            return (unit * 2 - 1) * amplitude
        }
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
}
