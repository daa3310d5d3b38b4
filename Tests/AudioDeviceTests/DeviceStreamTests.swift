import AudioDevice
import Foundation
import Media
import Synchronization
import Testing

/// A sound card in memory: reads return `value`, writes are kept; `failing` makes every call
/// fail (unplugged) until cleared. Each call takes 1 ms, standing in for the device's clock.
final class MemoryAudioDevice: AudioDeviceModule, AudioCaptureStream, AudioPlayoutStream, @unchecked Sendable {
    // @unchecked: all state is behind `state`.
    struct State {
        var value: Int16 = 1000
        var failing = false
        /// Outputs that fail to open (the others work).
        var missing: Set<String> = []
        var opens = 0
        var written: [Int16] = []
    }
    let state = Mutex(State())
    let format = AudioStreamFormat.mono48k

    func inputDevices() -> [AudioDeviceInfo] { [AudioDeviceInfo(id: "mem.in", name: "memory", kind: .input, isDefault: true)] }
    func outputDevices() -> [AudioDeviceInfo] { [AudioDeviceInfo(id: "mem.out", name: "memory", kind: .output, isDefault: true)] }

    func openCapture(device: String?, format: AudioStreamFormat) throws(AudioDeviceError) -> any AudioCaptureStream {
        try open(device)
    }
    func openPlayout(device: String?, format: AudioStreamFormat) throws(AudioDeviceError) -> any AudioPlayoutStream {
        try open(device)
    }
    private func open(_ device: String?) throws(AudioDeviceError) -> MemoryAudioDevice {
        let ok = state.withLock { s -> Bool in
            s.opens += 1
            return !s.failing && !s.missing.contains(device ?? "default")
        }
        guard ok else { throw .openFailed(device: device ?? "default", reason: "unplugged") }
        return self
    }

    func read(into samples: inout [Int16]) throws(AudioDeviceError) {
        Thread.sleep(forTimeInterval: 0.001)
        let (value, failing) = state.withLock { ($0.value, $0.failing) }
        if failing { throw .ioFailed(device: "mem.in", reason: "unplugged") }
        samples = [Int16](repeating: value, count: format.samplesPer10ms)
    }
    func write(_ samples: [Int16]) throws(AudioDeviceError) {
        Thread.sleep(forTimeInterval: 0.001)
        let failing = state.withLock { s -> Bool in
            if !s.failing { s.written += samples }
            return s.failing
        }
        if failing { throw .ioFailed(device: "mem.out", reason: "unplugged") }
    }
    func delayMs() -> Int { 25 }
    func close() {}
}

/// Collects what a capturer delivers and the device events.
final class Collector: Sendable {
    let frames = Mutex<[AudioFrame]>([])
    let events = Mutex<[AudioDeviceEvent]>([])
    func waitUntil(_ condition: () -> Bool) {
        let deadline = Date().addingTimeInterval(5)
        while !condition(), Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
    }
}

struct DeviceStreamTests {
    @Test func microphoneDeliversMutesWithoutReopeningAndRecoversFromLoss() throws {
        let device = MemoryAudioDevice()
        let seen = Collector()
        let mic = MicrophoneCapturer(module: device, device: nil) { e in seen.events.withLock { $0.append(e) } }
        mic.onFrame = { f in seen.frames.withLock { $0.append(f) } }
        try mic.start()
        seen.waitUntil { seen.frames.withLock { $0.count } >= 5 }
        mic.isMuted = true
        let mutedFrom = seen.frames.withLock { $0.count }
        seen.waitUntil { seen.frames.withLock { $0.count } >= mutedFrom + 5 }
        mic.isMuted = false
        let unmutedFrom = seen.frames.withLock { $0.count }
        seen.waitUntil { seen.frames.withLock { $0.count } >= unmutedFrom + 5 }
        #expect(device.state.withLock { $0.opens } == 1)   // mute and unmute did not reopen

        device.state.withLock { $0.failing = true }
        seen.waitUntil { !seen.events.withLock { $0 }.isEmpty }
        device.state.withLock { $0.failing = false }
        seen.waitUntil { seen.events.withLock { $0 }.count >= 2 }
        mic.stop()

        let frames = seen.frames.withLock { $0 }
        #expect(frames.allSatisfy { $0.samplesPerChannel == 480 && $0.sampleRate == 48000 })
        #expect(frames.prefix(mutedFrom - 1).allSatisfy { $0.int16Samples.allSatisfy { $0 == 1000 } })
        #expect(frames[(mutedFrom + 1)..<(unmutedFrom - 1)].allSatisfy { $0.int16Samples.allSatisfy { $0 == 0 } })
        #expect(frames.suffix(2).allSatisfy { $0.int16Samples.allSatisfy { $0 == 1000 } })
        #expect(seen.events.withLock { $0 } == [.lost(device: "default", reason: "audio: \"mem.in\" failed: unplugged"),
                                               .recovered(device: "default")])
        #expect(mic.stats.deviceLost == 1)
        #expect(mic.stats.deviceDelayMs == 25)
    }

    /// What the speaker is given is also the echo canceller's reference, with the device delay.
    @Test func playoutMixesTracksToTheDeviceAndFeedsTheEchoPath() throws {
        let device = MemoryAudioDevice()
        let echo = try EchoPath(options: .none)
        let playout = AudioPlayout(module: device, device: "mem.out", echo: echo)
        let a = AudioTrack(id: "a", source: AudioSource()), b = AudioTrack(id: "b", source: AudioSource())
        playout.add(a)
        playout.add(b)
        try playout.start()
        for _ in 0..<10 {
            a.source.deliver(AudioFrame(samples: .int16([Int16](repeating: 300, count: 960)), timestampNs: 0))
            b.source.deliver(AudioFrame(samples: .int16([Int16](repeating: 40, count: 960)), timestampNs: 0))
        }
        let seen = Collector()
        seen.waitUntil { device.state.withLock { $0.written.contains(340) } }
        playout.remove(b)
        playout.stop()
        let written = device.state.withLock { $0.written }
        #expect(written.contains(340))                      // both tracks, summed
        #expect(Set(written).isSubset(of: [0, 300, 340]))
        #expect(playout.stats.framesPlayed > 0)
        #expect(echo.streamDelayMs == 25)                   // the device's delay reached the canceller
        #expect(playout.mixer.inputIDs.count == 1)
    }

    /// The speaker route: another output, same tracks; an output that fails to open leaves the
    /// old one playing.
    @Test func switchingTheOutputKeepsPlaying() throws {
        let device = MemoryAudioDevice()
        let playout = AudioPlayout(module: device, device: "mem.out")
        try playout.start()
        try playout.switchDevice(to: nil)
        #expect(playout.device == nil)
        device.state.withLock { $0.missing = ["earpiece"] }
        #expect(throws: AudioDeviceError.openFailed(device: "earpiece", reason: "unplugged")) {
            try playout.switchDevice(to: "earpiece")
        }
        #expect(playout.device == nil)
        let before = playout.stats.framesPlayed
        Collector().waitUntil { playout.stats.framesPlayed > before + 3 }   // the old output resumed
        playout.stop()
        #expect(playout.stats.framesPlayed > before + 3)
    }

    @Test func badFormatsAreTypedErrors() {
        let playout = AudioPlayout(module: MemoryAudioDevice(), device: nil, format: AudioStreamFormat(sampleRate: 16000, channels: 1))
        #expect(throws: AudioDeviceError.unsupportedFormat("playout runs at 48000 Hz, not 16000")) { try playout.start() }
        let failing = MemoryAudioDevice()
        failing.state.withLock { $0.failing = true }
        let mic = MicrophoneCapturer(module: failing, device: "gone")
        #expect(throws: AudioDeviceError.openFailed(device: "gone", reason: "unplugged")) { try mic.start() }
    }
}
