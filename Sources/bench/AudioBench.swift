// The send side of the microphone path, per 10 ms frame: the echo path's processing (AEC, AGC,
// NS, high-pass, with a render reference every frame as in a call) and Opus at 20 ms packets.
// Device reads are left out: they are a blocking read of 960 bytes from the sound server.
// Compared with aiortc's send path for the same audio (bench/aiortc_audio.py: PCM → av.AudioFrame
// → its OpusEncoder, which resamples to stereo and encodes at 96 kbit/s; it has no processing).
import AudioCodecs
import AudioDevice
import AudioProcessing
import Foundation
import Glibc
import Media

func audioBenchmarks(python: String, aiortcScript: String, seconds: Double = 3) async -> [Row] {
    let ours = ourAudioPath(seconds: seconds, processing: true)
    let opusOnly = ourAudioPath(seconds: seconds, processing: false)
    var rows = [ours, opusOnly]
    do {
        let theirs = try await aiortcAudioPath(python: python, script: aiortcScript, seconds: seconds)
        rows.append(Row("audio.aiortc_send_cpu_per_10ms", theirs, "us",
                        note: "aiortc's send path for the same input, same measure (thread CPU): av.AudioFrame + OpusEncoder (stereo resample, libopus 96 kbit/s); no APM in aiortc"))
        if let value = opusOnly.value {
            rows.append(Row("audio.opus_only_vs_aiortc", value / theirs, "x",
                            note: "our send path without processing vs aiortc's; not the same codec work: ours is 32 kbit/s voice (SILK/hybrid) with in-band FEC for 10% loss, complexity 9, theirs 96 kbit/s stereo, which libopus codes as CELT without FEC"))
        }
        if let value = ours.value {
            rows.append(Row("audio.apm_opus_vs_aiortc", value / theirs, "x",
                            note: "ours does AEC+AGC+NS+HPF besides Opus; aiortc only encodes"))
        }
    } catch {
        rows.append(Row("audio.aiortc_send_cpu_per_10ms", nil, "us", note: "failed: \(error)"))
    }
    return rows
}

private func aiortcAudioPath(python: String, script: String, seconds: Double) async throws -> Double {
    guard FileManager.default.fileExists(atPath: script) else { throw BenchError("\(script) not found") }
    let child = try ChildProcess(python, [script, "--seconds", String(seconds)], logPath: benchTempDirectory + "/aiortc_audio.log")
    let line = await child.jsonLine(withKey: "us_per_10ms", timeout: .seconds(seconds + 60))
    await child.stop(signal: SIGTERM, timeout: .seconds(2))
    guard let line, let value = (line["us_per_10ms"] as? NSNumber)?.doubleValue else {
        throw BenchError("\(script) printed no result: \(child.logTail())")
    }
    return value
}

private func ourAudioPath(seconds: Double, processing: Bool) -> Row {
    let name = processing ? "audio.apm_opus_cpu_per_10ms" : "audio.opus_only_cpu_per_10ms"
    let note = !processing ? "the same without processing (EchoPath with every component off): Opus encode per 20 ms, 48 kHz mono" : "CPU of one thread per 10 ms frame, 48 kHz mono: EchoPath.render (the far end) + EchoPath.capture with AEC (speexdsp MDF, 200 ms tail, + residual suppressor) + AGC+NS+HPF (webrtc APM), then Opus encode per 20 ms; speech-like input (harmonics with a syllable envelope)"
    do {
        let echo = try EchoPath(options: processing ? .all : .none)
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
        return Row(name, perFrameUs, "us", target: processing ? .below(2000) : nil, note: note)
    } catch {
        return Row(name, nil, "us", note: "failed: \(error)")
    }
}
