import AudioDevice
import Media
import Testing

struct AudioMixerTests {
    static func frame(_ value: Int16, channels: Int = 1, ms: Int = 20) -> AudioFrame {
        AudioFrame(samples: .int16([Int16](repeating: value, count: ms * 48 * channels)), sampleRate: 48000,
                   channels: channels, timestampNs: 0)
    }

    @Test func sumsSaturatesAndScales() {
        #expect(AudioMixer.sum([[1000, -1000], [2000, 500]], count: 2) == [3000, -500])
        #expect(AudioMixer.sum([[30000, -30000], [30000, -30000]], count: 2) == [32767, -32768])
        #expect(AudioMixer.sum([[1000]], count: 3) == [1000, 0, 0])
        #expect(AudioMixer.sum([[1000]], count: 1, gain: 0.5) == [500])
        #expect(AudioMixer.sum([], count: 2) == [0, 0])
    }

    /// Two remote tracks play together; each has its own buffer, so one stalling does not stop
    /// the other.
    @Test func mixesTracksIndependently() {
        let mixer = AudioMixer()
        let ms: Int64 = 1_000_000
        var out: [[Int16]] = []
        for tick in 0..<40 {
            let now = Int64(tick) * 10 * ms
            if tick % 2 == 0 {
                mixer.push("a", frame: Self.frame(100), nowNs: now)
                if tick < 20 { mixer.push("b", frame: Self.frame(10), nowNs: now) }
            }
            out.append(mixer.mix(480, nowNs: now))
        }
        #expect(Set(out[5]) == [110])            // both playing
        #expect(Set(out[35]) == [100])           // b ran dry: a alone
        let stats = mixer.stats.inputs
        #expect(stats["a"]?.underruns == 0)
        #expect((stats["b"]?.underruns ?? 0) == 1)
        #expect(mixer.inputIDs == ["a", "b"])
        mixer.removeInput("b")
        #expect(mixer.inputIDs == ["a"])
    }

    @Test func downmixesStereoDropsOtherRatesAndAppliesVolume() {
        let mixer = AudioMixer()
        mixer.volume = 0.5
        mixer.push("s", frame: Self.frame(400, channels: 2), nowNs: 0)
        mixer.push("s", frame: Self.frame(400, channels: 2), nowNs: 0)
        mixer.push("s", frame: AudioFrame(samples: .int16([1, 2]), sampleRate: 16000, channels: 1, timestampNs: 0), nowNs: 0)
        #expect(Set(mixer.mix(480, nowNs: 0)) == [200])
        #expect(mixer.stats.droppedFrames == 1)
        mixer.volume = .nan
        #expect(mixer.volume == 1)
        mixer.volume = 7
        #expect(mixer.volume == 1)
    }

    @Test func noInputsIsSilence() {
        #expect(AudioMixer().mix(480, nowNs: 0) == [Int16](repeating: 0, count: 480))
    }
}
