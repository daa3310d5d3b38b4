import Foundation
import Testing
import Media
import SeededRandom
@testable import AudioCodecs

@Suite struct OpusCodecTests {
    /// Encodes and decodes a whole signal frame by frame; returns the decoded interleaved PCM.
    private func roundTrip(_ pcm: [Int16], channels: Int, ms: Int, encoder: OpusEncoder) throws -> (decoded: [Int16], packets: [[UInt8]]) {
        let decoder = try OpusDecoder(channels: channels)
        var decoded: [Int16] = []
        var packets: [[UInt8]] = []
        for frame in Signal.frames(pcm, ms: ms, channels: channels) {
            let packet = try encoder.encode(frame)
            packets.append(packet)
            let out = try decoder.decode(packet)
            #expect(out.samplesPerChannel == 48 * ms)
            #expect(out.channels == channels)
            decoded += out.int16Samples
        }
        return (decoded, packets)
    }

    @Test(arguments: [(1, 20), (1, 10), (2, 20), (2, 10)])
    func toneKeepsDurationFrequencyAndEnergy(channels: Int, ms: Int) throws {
        let seconds = 1
        let input = Signal.tone(hz: 440, amplitude: 0.5, samples: 48000 * seconds, channels: channels)
        let encoder = try OpusEncoder(settings: OpusEncoderSettings(channels: channels, bitrate: 48000 * channels))
        let (decoded, packets) = try roundTrip(input, channels: channels, ms: ms, encoder: encoder)
        #expect(packets.count == 1000 / ms * seconds)
        #expect(decoded.count == input.count, "decoded duration equals the input's")

        let delay = encoder.lookahead
        for c in 0..<channels {
            let original = Signal.channel(input, c, of: channels)
            let output = Signal.channel(decoded, c, of: channels)
            // Skip the start-up (first 100 ms) and compare over the rest, aligned by the codec delay.
            let outSlice = output[4800..<output.count]
            let inSlice = original[(4800 - delay)..<(output.count - delay)]
            let frequency = Signal.zeroCrossingFrequency(outSlice)
            #expect(abs(frequency - 440) < 5, "zero-crossing frequency \(frequency) Hz")
            let at440 = Signal.goertzel(outSlice, hz: 440)
            let at880 = Signal.goertzel(outSlice, hz: 880)
            #expect(at440 > 100 * at880, "440 Hz dominates")
            let gain = Signal.dB(Signal.energy(outSlice) / Signal.energy(inSlice))
            #expect(abs(gain) < 3, "energy within 3 dB, got \(gain) dB")
        }
    }

    @Test func dtxYieldsTinyPacketsOnSilence() throws {
        let silence = [Int16](repeating: 0, count: 48000)
        let withDTX = try OpusEncoder(settings: OpusEncoderSettings(dtx: true))
        let packets = try roundTrip(silence, channels: 1, ms: 20, encoder: withDTX).packets
        // libopus enters DTX after ~200 ms of silence; from then on packets are 1–2 bytes except
        // a comfort-noise update every 400 ms.
        let tail = packets[15...]
        let tiny = tail.filter { $0.count <= 2 }.count
        #expect(tiny >= tail.count - 2, "\(tiny) of the last \(tail.count) packets are ≤ 2 bytes")
        #expect(withDTX.isInDTX)

        let withoutDTX = try OpusEncoder(settings: OpusEncoderSettings(dtx: false))
        let plain = try roundTrip(silence, channels: 1, ms: 20, encoder: withoutDTX).packets
        #expect(plain.allSatisfy { $0.count > 2 }, "without DTX every packet carries a frame")

        // Switching DTX off at run time: speech after silence is sent in full packets.
        try withDTX.setDTX(false)
        let tone = Signal.tone(hz: 440, amplitude: 0.3, samples: 9600)
        for frame in Signal.frames(tone, ms: 20) {
            #expect(try withDTX.encode(frame).count > 2)
        }
    }

    @Test func bitrateChangesAtRunTime() throws {
        let speech = Signal.voiceLike(samples: 48000 * 2)
        let frames = Signal.frames(speech, ms: 20)
        let encoder = try OpusEncoder(settings: OpusEncoderSettings(bitrate: 64000, inbandFEC: false))
        var high = 0, low = 0
        for frame in frames[0..<50] { high += try encoder.encode(frame).count }
        try encoder.setBitrate(12000)
        #expect(encoder.settings.bitrate == 12000)
        for frame in frames[50..<100] { low += try encoder.encode(frame).count }
        // 50 frames = 1 s, so bytes * 8 is bits per second.
        #expect(abs(Double(high * 8) - 64000) / 64000 < 0.25, "≈64 kbps, got \(high * 8)")
        #expect(abs(Double(low * 8) - 12000) / 12000 < 0.25, "≈12 kbps, got \(low * 8)")
    }

    @Test func settingsAreValidated() throws {
        let encoder = try OpusEncoder()
        #expect(throws: MediaError.self) { try encoder.setBitrate(1000) }
        #expect(throws: MediaError.self) { try encoder.setComplexity(11) }
        #expect(throws: MediaError.self) { try encoder.setInbandFEC(true, packetLossPercent: 101) }
        #expect(throws: MediaError.self) { try OpusEncoder(settings: OpusEncoderSettings(channels: 3)) }
        #expect(throws: MediaError.self) { try OpusDecoder(channels: 0) }
        try encoder.setComplexity(0)
        #expect(encoder.settings.complexity == 0)
        // Stereo after mono re-creates the encoder.
        try encoder.update(OpusEncoderSettings(channels: 2))
        let stereo = Signal.frames(Signal.tone(hz: 440, amplitude: 0.3, samples: 960, channels: 2), ms: 20, channels: 2)
        #expect(try encoder.encode(stereo[0]).count > 2)
    }

    @Test func badFramesAreRejected() throws {
        let encoder = try OpusEncoder()
        let odd = AudioFrame(samples: .int16([Int16](repeating: 0, count: 700)), timestampNs: 0)
        #expect(throws: MediaError.self) { try encoder.encode(odd) }
        let wrongRate = AudioFrame(samples: .int16([Int16](repeating: 0, count: 160)), sampleRate: 16000, timestampNs: 0)
        #expect(throws: MediaError.self) { try encoder.encode(wrongRate) }
        let stereo = AudioFrame(samples: .int16([Int16](repeating: 0, count: 1920)), channels: 2, timestampNs: 0)
        #expect(throws: MediaError.self) { try encoder.encode(stereo) }
        let empty = AudioFrame(samples: .float([]), timestampNs: 0)
        #expect(throws: MediaError.self) { try encoder.encode(empty) }
    }

    @Test func floatFramesEncode() throws {
        let encoder = try OpusEncoder()
        let decoder = try OpusDecoder()
        var energyOut = 0.0
        for i in 0..<20 {
            let pcm: [Float] = (0..<960).map { n -> Float in
                let t = Double(i * 960 + n) / 48000
                return Float(0.4 * sin(2 * Double.pi * 440 * t))
            }
            let out = try decoder.decode(try encoder.encode(AudioFrame(samples: .float(pcm), timestampNs: 0)))
            if i >= 5 { energyOut += Signal.energy(Signal.channel(out.int16Samples, 0, of: 1)[...]) }
        }
        let expected = 15 * 960 * 0.4 * 0.4 / 2
        #expect(abs(Signal.dB(energyOut / expected)) < 3)
    }

    /// Drops every 7th packet of voice-like audio and rebuilds it twice: by concealment (PLC)
    /// and from the next packet's in-band FEC. Both are compared with the original signal, by
    /// sample error and by loudness envelope (2.5 ms blocks), next to a lossless decode.
    @Test func fecRecoversALostPacketBetterThanConcealment() throws {
        let input = Signal.voiceLike(samples: 48000 * 3)
        let encoder = try OpusEncoder(settings: OpusEncoderSettings(bitrate: 32000, inbandFEC: true, packetLossPercent: 20))
        let packets = try Signal.frames(input, ms: 20).map { try encoder.encode($0) }
        let delay = encoder.lookahead
        let original = input.map { Double($0) / 32768 }
        func samples(_ frame: AudioFrame) -> [Double] { Signal.channel(frame.int16Samples, 0, of: 1) }

        let lost = Set(stride(from: 20, to: packets.count - 1, by: 7))
        let plc = try OpusDecoder(), fec = try OpusDecoder(), lossless = try OpusDecoder()
        var waveError = (plc: 0.0, fec: 0.0, lossless: 0.0)
        var envelopeError = (plc: 0.0, fec: 0.0, lossless: 0.0)
        var signal = 0.0, envelope = 0.0
        for (index, packet) in packets.enumerated() {
            let good = samples(try lossless.decode(packet))
            guard lost.contains(index) else {
                _ = try plc.decode(packet)
                _ = try fec.decode(packet)
                continue
            }
            let concealed = samples(try plc.decode(nil))
            let recovered = samples(try fec.decode(packets[index + 1], fec: true))
            #expect(concealed.count == 960 && recovered.count == 960)
            // Decoded sample k of this frame is original sample (index * 960 + k - delay).
            let reference = original[(index * 960 - delay)..<(index * 960 + 960 - delay)]
            for (k, r) in zip(0..., reference) {
                waveError.plc += (concealed[k] - r) * (concealed[k] - r)
                waveError.fec += (recovered[k] - r) * (recovered[k] - r)
                waveError.lossless += (good[k] - r) * (good[k] - r)
                signal += r * r
            }
            for block in stride(from: 0, to: 960, by: 120) {
                let level = Signal.rms(reference.dropFirst(block).prefix(120))
                envelopeError.plc += abs(Signal.rms(concealed[block..<block + 120]) - level)
                envelopeError.fec += abs(Signal.rms(recovered[block..<block + 120]) - level)
                envelopeError.lossless += abs(Signal.rms(good[block..<block + 120]) - level)
                envelope += level
            }
        }
        let snr = (plc: Signal.dB(signal / waveError.plc), fec: Signal.dB(signal / waveError.fec),
                   lossless: Signal.dB(signal / waveError.lossless))
        // Opus does not keep phase closely, so even a lossless decode is only a few dB SNR against
        // the original; FEC should match it and beat concealment.
        #expect(waveError.fec < waveError.plc, "SNR: FEC \(snr.fec) dB, PLC \(snr.plc) dB")
        #expect(snr.fec > snr.lossless - 1, "SNR: FEC \(snr.fec) dB, lossless \(snr.lossless) dB")
        #expect(envelopeError.fec < envelopeError.plc / 2,
                "envelope error: FEC \(envelopeError.fec / envelope), PLC \(envelopeError.plc / envelope), lossless \(envelopeError.lossless / envelope)")
    }

    @Test func concealmentFollowsTheLastPacketDuration() throws {
        let encoder = try OpusEncoder()
        let decoder = try OpusDecoder()
        let frames = Signal.frames(Signal.tone(hz: 300, amplitude: 0.3, samples: 4800), ms: 10)
        for frame in frames { _ = try decoder.decode(try encoder.encode(frame)) }
        let concealed = try decoder.decode(nil)
        #expect(concealed.samplesPerChannel == 480)
        #expect(concealed.timestampNs == 100_000_000, "timestamps continue after 10 × 10 ms")
    }

    @Test func garbagePacketsThrowAndNeverTrap() throws {
        let decoder = try OpusDecoder()
        let invalid: [[UInt8]] = [
            [],                          // empty
            [0x03],                      // code 3 without its frame-count byte
            [0xFF, 0xFF, 0xFF, 0xFF],    // code 3 claiming 63 frames (> 120 ms)
            [0x01, 0x05, 0x05, 0x05],    // code 1 (two equal frames) with an odd payload
            [0x02, 0xFF, 0xFF, 0x00],    // code 2 first-frame length past the end
        ]
        for packet in invalid {
            do {
                _ = try decoder.decode(packet)
                Issue.record("packet \(packet) should not decode")
            } catch {
                #expect(error.description.hasPrefix("Opus decoder:"), "\(error)")
                #expect(error.description.contains("packet"), "\(error)")
            }
            #expect(throws: MediaError.self) { try decoder.decode(packet.isEmpty ? [] : packet, fec: true) }
        }

        // Random bytes: each either decodes or throws; afterwards the decoder still works.
        var random = SplitMix64(seed: 0x4F50_5553)
        var thrown = 0
        for _ in 0..<2000 {
            let packet = random.bytes(Int(random.next() >> 58) + 1)
            do { _ = try decoder.decode(packet) } catch { thrown += 1 }
        }
        #expect(thrown > 0)
        decoder.reset()
        let encoder = try OpusEncoder()
        let frame = Signal.frames(Signal.tone(hz: 440, amplitude: 0.3, samples: 960), ms: 20)[0]
        #expect(try decoder.decode(try encoder.encode(frame)).samplesPerChannel == 960)
    }
}
