import Foundation
import Media

/// Deterministic test signals and measurements.
enum Signal {
    static let rate = 48000

    static func tone(hz: Double, amplitude: Double, samples: Int, channels: Int = 1) -> [Int16] {
        var out = [Int16](repeating: 0, count: samples * channels)
        for n in 0..<samples {
            let v = Int16(amplitude * 32767 * sin(2 * Double.pi * hz * Double(n) / Double(rate)))
            for c in 0..<channels { out[n * channels + c] = v }
        }
        return out
    }

    /// Voice-like: "syllables" of 100–220 ms, each with its own gliding pitch (90–260 Hz, six
    /// harmonics) and loudness, separated by short pauses — so concealment, which extends the
    /// last pitch period, cannot guess what comes next.
    static func voiceLike(samples: Int, amplitude: Double = 0.3) -> [Int16] {
        var out = [Int16](repeating: 0, count: samples)
        var seed: UInt64 = 42
        func random() -> Double {
            seed = seed &* 6364136223846793005 &+ 1442695040888963407
            return Double(seed >> 11) / Double(1 << 53)
        }
        var start = 0
        while start < samples {
            let length = Int((0.10 + 0.12 * random()) * Double(rate))
            let pause = Int((0.02 + 0.05 * random()) * Double(rate))
            let f0 = 90 + 170 * random(), glide = (random() - 0.5) * 80
            let loudness = amplitude * (0.4 + 0.6 * random())
            var phase = 0.0
            for n in 0..<min(length, samples - start) {
                let progress = Double(n) / Double(length)
                phase += 2 * Double.pi * (f0 + glide * progress) / Double(rate)
                var v = 0.0
                for h in 1...6 { v += sin(Double(h) * phase) / Double(h) }
                let envelope = sin(Double.pi * progress)   // rises and falls within the syllable
                out[start + n] = Int16(max(-32767, min(32767, loudness * 32767 * 0.6 * v * envelope)))
            }
            start += length + pause
        }
        return out
    }

    static func channel(_ samples: [Int16], _ c: Int, of channels: Int) -> [Double] {
        stride(from: c, to: samples.count, by: channels).map { Double(samples[$0]) / 32768 }
    }

    static func energy(_ x: ArraySlice<Double>) -> Double { x.reduce(0) { $0 + $1 * $1 } }

    static func rms(_ x: ArraySlice<Double>) -> Double { (energy(x) / Double(max(x.count, 1))).squareRoot() }

    static func dB(_ ratio: Double) -> Double { 10 * log10(ratio) }

    /// Zero crossings per second / 2: the frequency of a clean tone.
    static func zeroCrossingFrequency(_ x: ArraySlice<Double>) -> Double {
        var crossings = 0
        var previous = x.first ?? 0
        for v in x.dropFirst() {
            if (previous < 0) != (v < 0) { crossings += 1 }
            previous = v
        }
        return Double(crossings) / 2 / (Double(x.count) / Double(rate))
    }

    /// Power of one frequency (Goertzel), normalized by length.
    static func goertzel(_ x: ArraySlice<Double>, hz: Double) -> Double {
        let w = 2 * Double.pi * hz / Double(rate)
        let coefficient = 2 * cos(w)
        var s1 = 0.0, s2 = 0.0
        for v in x {
            let s = v + coefficient * s1 - s2
            s2 = s1
            s1 = s
        }
        return (s1 * s1 + s2 * s2 - coefficient * s1 * s2) / Double(x.count * x.count)
    }

    /// Cuts interleaved samples into frames of `ms` milliseconds.
    static func frames(_ samples: [Int16], ms: Int, channels: Int = 1) -> [AudioFrame] {
        let size = rate / 1000 * ms * channels
        return stride(from: 0, to: samples.count - size + 1, by: size).enumerated().map { index, start in
            AudioFrame(samples: .int16(Array(samples[start..<start + size])), channels: channels,
                       timestampNs: Int64(index) * Int64(ms) * 1_000_000)
        }
    }
}
