// The send side of the microphone path, per 10 ms frame: the echo path's processing (AEC, AGC,
// NS, high-pass, with a render reference every frame as in a call) and Opus at 20 ms packets.
// Device reads are left out: they are a blocking read of 960 bytes from the sound server.
import AudioCodecs
import AudioDevice
import AudioProcessing
import Foundation
import Media

func audioBenchmarks(seconds: Double = 3) -> [Row] {
    let note = "CPU of one thread per 10 ms frame, 48 kHz mono: EchoPath.render (the far end) + EchoPath.capture with AEC+AGC+NS+HPF, then Opus encode per 20 ms; speech-like input (harmonics with a syllable envelope); no aiortc comparison yet"
    do {
        let echo = try EchoPath(options: .all)
        let encoder = try OpusEncoder()
        let frames = 100
        var near: [[Int16]] = [], far: [[Int16]] = []
        for f in 0..<frames {
            var n = [Int16](repeating: 0, count: 480), r = n
            for i in 0..<480 {
                let t = Double(f * 480 + i) / 48000
                let env = 0.5 + 0.5 * sin(2 * Double.pi * 4 * t)
                n[i] = Int16(6000 * env * (sin(2 * .pi * 220 * t) + 0.5 * sin(2 * .pi * 440 * t)))
                r[i] = Int16(6000 * (1 - env) * sin(2 * .pi * 130 * t + sin(2 * .pi * 3 * t)))
            }
            near.append(n)
            far.append(r)
        }
        var pending: [Int16] = []
        var done = 0
        let start = threadCPUSeconds()
        while threadCPUSeconds() - start < seconds {
            let i = done % frames
            echo.render(AudioFrame(samples: .int16(far[i]), timestampNs: 0), playoutDelayMs: 50)
            let out = echo.capture(AudioFrame(samples: .int16(near[i]), timestampNs: 0), captureDelayMs: 10)
            pending += out.int16Samples
            if pending.count >= 960 {
                _ = try encoder.encode(AudioFrame(samples: .int16(Array(pending.prefix(960))), timestampNs: 0))
                pending.removeFirst(960)
            }
            done += 1
        }
        let perFrameUs = (threadCPUSeconds() - start) / Double(done) * 1e6
        return [Row("audio.apm_opus_cpu_per_10ms", perFrameUs, "us", target: .below(2000), note: note)]
    } catch {
        return [Row("audio.apm_opus_cpu_per_10ms", nil, "us", note: "failed: \(error)")]
    }
}
