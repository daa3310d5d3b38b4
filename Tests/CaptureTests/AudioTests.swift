import Foundation
import Media
import SeededRandom
import Testing
import TestSupport
@testable import Capture

/// A WAV file with arbitrary header fields (for the unsupported-format cases).
func rawWAV(tag: UInt16, channels: UInt16, rate: UInt32, bits: UInt16, data: [UInt8] = [0, 0, 0, 0]) -> Data {
    var d = Data()
    func u32(_ v: UInt32) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
    func u16(_ v: UInt16) { withUnsafeBytes(of: v.littleEndian) { d.append(contentsOf: $0) } }
    d.append(contentsOf: Array("RIFF".utf8)); u32(UInt32(36 + data.count)); d.append(contentsOf: Array("WAVE".utf8))
    d.append(contentsOf: Array("fmt ".utf8)); u32(16); u16(tag); u16(channels); u32(rate)
    u32(rate * UInt32(channels) * UInt32(bits / 8)); u16(channels * bits / 8); u16(bits)
    d.append(contentsOf: Array("data".utf8)); u32(UInt32(data.count)); d.append(contentsOf: data)
    return d
}

/// `seconds` of a sine at `frequency` sampled at `rate`, interleaved over `channels`.
func sine(frequency: Double, rate: Int, seconds: Double, channels: Int = 1, amplitude: Double = 16000) -> [Int16] {
    let n = Int(Double(rate) * seconds)
    var out: [Int16] = []
    out.reserveCapacity(n * channels)
    for i in 0..<n {
        let v = Int16((amplitude * sin(2 * Double.pi * frequency * Double(i) / Double(rate))).rounded())
        for _ in 0..<channels { out.append(v) }
    }
    return out
}

@Suite struct AudioTests {
    @Test(arguments: [AudioFrameDuration.ms10, .ms20])
    func toneHasTheRightShape(duration: AudioFrameDuration) {
        let tone = ToneCapturer(frequency: 1000, level: 0.5, frameDuration: duration)
        var all: [Int16] = []
        let frames = 1000 / duration.rawValue   // one second
        for i in 0..<frames {
            let f = tone.nextFrame()
            #expect(f.sampleRate == 48000 && f.channels == 1)
            #expect(f.samplesPerChannel == 48 * duration.rawValue)
            #expect(f.timestampNs == Int64(i) * duration.nanoseconds)
            all += f.int16Samples
        }
        #expect(all.count == 48000)
        #expect(abs(zeroCrossings(all) - 2000) <= 2)
        let peak = all.map { abs(Int($0)) }.max() ?? 0
        #expect(abs(peak - 16384) <= 2)
        #expect(abs(rms(all) - 16383.5 / 2.0.squareRoot()) < 50)
        // Continuous across frame boundaries: no step bigger than the sine's own slope.
        let maxStep = zip(all, all.dropFirst()).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(maxStep <= Int(16384 * 2 * Double.pi * 1000 / 48000) + 2)
    }

    /// The phasor that turns per sample stays on the sine: a frame a minute in equals sin() of
    /// its sample index to within a step of rounding.
    @Test func toneStaysExactOverAMinute() {
        let tone = ToneCapturer(frequency: 441, level: 0.8, frameDuration: .ms20)
        var frame = tone.nextFrame()
        for _ in 0..<3000 { frame = tone.nextFrame() }
        let first = 3000 * 960
        let exact = (0..<960).map { i in
            Int16((0.8 * 32767 * sin(2 * Double.pi * 441 * Double(first + i) / 48000)).rounded())
        }
        let worst = zip(frame.int16Samples, exact).map { abs(Int($0) - Int($1)) }.max() ?? .max
        #expect(worst <= 1, "largest difference \(worst)")
    }

    @Test func toneThreadDeliversFrames() {
        let tone = ToneCapturer(frequency: 300, frameDuration: .ms10)
        let got = Monitor([Int64]())
        tone.onFrame = { f in got.withLock { $0.append(f.timestampNs) } }
        tone.start()
        #expect(got.wait(until: { $0.count >= 5 }, timeout: .seconds(20)))
        tone.stop()
        tone.stop()
        #expect(!tone.isRunning)
        let stamps = got.value
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 })
    }

    @Test(arguments: [1, 2])
    func wavWriteReadRoundTrip(channels: Int) throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("rt.wav")
        var rng = SplitMix64(seed: UInt64(channels))
        let samples = (0..<(4410 * channels)).map { _ in Int16.random(in: .min ... .max, using: &rng) }
        let writer = try WAVWriter(path: path, sampleRate: 44100, channels: channels)
        try writer.write(Array(samples.prefix(1000 * channels)))
        try writer.write(Array(samples.dropFirst(1000 * channels)))
        try writer.close()
        try writer.close()   // idempotent
        let size = try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int
        #expect(size == 44 + samples.count * 2)

        let reader = try WAVReader(path: path)
        #expect(reader.sampleRate == 44100)
        #expect(reader.channels == channels)
        #expect(reader.frameCount == 4410)
        var back: [Int16] = []
        while true {
            let chunk = try reader.read(maxFrames: 999)
            if chunk.isEmpty { break }
            back += chunk
        }
        #expect(back == samples)
        try reader.rewind()
        #expect(try reader.read(maxFrames: 2) == Array(samples.prefix(2 * channels)))
    }

    @Test func wavWriterTakesAudioFramesOfItsFormat() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("frames.wav")
        let writer = try WAVWriter(path: path)
        let tone = ToneCapturer()
        for _ in 0..<3 { try writer.write(tone.nextFrame()) }
        #expect(throws: MediaError.self) {
            try writer.write(AudioFrame.silence(sampleRate: 16000, channels: 1, timestampNs: 0))
        }
        try writer.close()
        #expect(try WAVReader(path: path).frameCount == 1440)
    }

    @Test func sixteenKilohertzFileIsResampledTo48k() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("16k.wav")
        let writer = try WAVWriter(path: path, sampleRate: 16000)
        try writer.write(sine(frequency: 1000, rate: 16000, seconds: 1))
        try writer.close()

        let capturer = WAVFileCapturer(path: path)
        #expect(try capturer.fileFormat().sampleRate == 16000)
        var out: [Int16] = []
        var frames = 0
        while let f = try capturer.nextFrame() {
            #expect(f.sampleRate == 48000 && f.channels == 1 && f.samplesPerChannel == 480)
            #expect(f.timestampNs == Int64(frames) * 10_000_000)
            out += f.int16Samples
            frames += 1
        }
        #expect(frames == 100)                  // exactly one second
        #expect(out.count == 48000)
        #expect(abs(zeroCrossings(out) - 2000) <= 4)
        // Level kept (skip the filter's edges).
        #expect(abs(rms(Array(out[480..<47520])) - 16000 / 2.0.squareRoot()) < 16000 * 0.02)
        // Smooth: a 1 kHz sine at 48 kHz never steps more than amplitude × 2π × 1000/48000.
        let maxStep = zip(out[100..<47900], out[101..<47901]).map { abs(Int($0) - Int($1)) }.max() ?? 0
        #expect(maxStep < 2200)
    }

    @Test func cdRateStereoBecomes48kStereoIn20msFrames() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("cd.wav")
        let writer = try WAVWriter(path: path, sampleRate: 44100, channels: 2)
        try writer.write(sine(frequency: 440, rate: 44100, seconds: 0.5, channels: 2))
        try writer.close()
        let capturer = WAVFileCapturer(path: path, frameDuration: .ms20)
        var out: [Int16] = []
        while let f = try capturer.nextFrame() {
            #expect(f.channels == 2 && f.samplesPerChannel == 960)
            out += f.int16Samples
        }
        #expect(out.count == 2 * 24000)   // 0.5 s = 25 frames of 20 ms
        let left = stride(from: 0, to: out.count, by: 2).map { out[$0] }
        let right = stride(from: 1, to: out.count, by: 2).map { out[$0] }
        #expect(left == right)
        #expect(abs(zeroCrossings(left) - 440) <= 3)
    }

    @Test func loopingWavKeepsGoing() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("short.wav")
        let writer = try WAVWriter(path: path, sampleRate: 48000)
        try writer.write(sine(frequency: 500, rate: 48000, seconds: 0.05))
        try writer.close()
        let capturer = WAVFileCapturer(path: path, loop: true)
        for _ in 0..<20 { _ = try #require(try capturer.nextFrame()) }   // 0.2 s out of a 0.05 s file
        let once = WAVFileCapturer(path: path)
        var n = 0
        while try once.nextFrame() != nil { n += 1 }
        #expect(n == 5)
    }

    @Test func wavCapturerThreadEnds() async throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("t.wav")
        let writer = try WAVWriter(path: path, sampleRate: 8000)
        try writer.write(sine(frequency: 200, rate: 8000, seconds: 0.03))
        try writer.close()
        let capturer = WAVFileCapturer(path: path)
        let count = Monitor(0)
        capturer.onFrame = { _ in count.withLock { $0 += 1 } }
        try capturer.start()
        #expect(await firstEvent(capturer.events) == .ended)
        capturer.stop()
        #expect(count.value == 3)
    }

    @Test func unsupportedWavFilesAreRefusedClearly() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        func error(_ data: Data) throws -> String {
            let path = dir.path("x.wav")
            try data.write(to: URL(fileURLWithPath: path))
            do {
                _ = try WAVReader(path: path)
                return "no error"
            } catch let e as MediaError {
                #expect(e.description.hasPrefix(path))
                return e.description
            }
        }
        #expect(try error(rawWAV(tag: 3, channels: 1, rate: 48000, bits: 32)).contains("unsupported encoding 3 (IEEE float)"))
        #expect(try error(rawWAV(tag: 1, channels: 1, rate: 48000, bits: 8)).contains("unsupported sample size 8 bits"))
        #expect(try error(rawWAV(tag: 1, channels: 6, rate: 48000, bits: 16)).contains("unsupported channel count 6"))
        #expect(try error(rawWAV(tag: 1, channels: 1, rate: 96000, bits: 16)).contains("unsupported sample rate 96000 Hz"))
        #expect(try error(Data("hello world, not audio".utf8)).contains("not a RIFF WAVE file"))
        #expect(try error(Data("RIFF".utf8)).contains("too short"))
        #expect(try error(rawWAV(tag: 1, channels: 1, rate: 16000, bits: 16)).contains("no error"))
        let missing = dir.path("nope.wav")
        #expect(throws: MediaError("\(missing): cannot open: No such file or directory")) { try WAVFileCapturer(path: missing).start() }
    }

    @Test func wavChunksBeforeDataAreSkipped() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        var d = rawWAV(tag: 1, channels: 2, rate: 22050, bits: 16, data: [1, 0, 2, 0, 3, 0, 4, 0])
        // Insert an odd-sized LIST chunk (padded to even) between fmt and data.
        let list: [UInt8] = Array("LIST".utf8) + [3, 0, 0, 0] + [0x61, 0x62, 0x63, 0]
        d.insert(contentsOf: list, at: 36)
        let path = dir.path("list.wav")
        try d.write(to: URL(fileURLWithPath: path))
        let r = try WAVReader(path: path)
        #expect(r.channels == 2 && r.sampleRate == 22050 && r.frameCount == 2)
        #expect(try r.read(maxFrames: 10) == [1, 2, 3, 4])
    }

    @Test func resamplerOutputLengthIsExact() throws {
        for (inRate, outRate) in [(8000, 48000), (11025, 48000), (22050, 48000), (44100, 48000), (48000, 16000), (32000, 48000)] {
            let r = try AudioResampler(inputRate: inRate, outputRate: outRate, channels: 1)
            var out: [Int16] = []
            for _ in 0..<7 { out += r.process([Int16](repeating: 1000, count: 1234)) }
            out += r.flush()
            #expect(out.count == (7 * 1234 * outRate + inRate - 1) / inRate, "\(inRate)→\(outRate)")
            // Unity gain at DC once the filter is past the leading edge (and before the tail).
            let middle = out[(out.count / 4)..<(3 * out.count / 4)]
            #expect(middle.allSatisfy { abs(Int($0) - 1000) <= 2 }, "\(inRate)→\(outRate)")
        }
    }
}
