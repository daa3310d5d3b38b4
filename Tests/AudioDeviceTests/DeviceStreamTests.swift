import AudioDevice
import Media
import Testing
import TestSupport

/// A sound card in memory whose clock is the test's: each read or write waits for a period
/// the test lets pass (`tick`, `run(periods:)`), so the audio thread moves only when told and
/// every frame is accounted for. Reads return `value`, writes are kept; `failing` makes every
/// call fail (unplugged) until cleared. Stopping a stream waits for its audio thread, so a test
/// stops (or switches) inside `unclocked`, which lets the thread run until the call returns.
final class MemoryAudioDevice: AudioDeviceModule, AudioCaptureStream, AudioPlayoutStream, @unchecked Sendable {
    // @unchecked: all state is behind `state`.
    struct State {
        var value: Int16 = 1000
        var failing = false
        /// Outputs that fail to open (the others work).
        var missing: Set<String> = []
        var opens = 0
        var written: [Int16] = []
        /// Periods the test has let pass and no call has used yet.
        var periods = 0
        /// Calls that used a period and have finished.
        var clockedCalls = 0
        var unclocked = false
    }
    let state = Monitor(State())
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

    /// Lets `periods` device periods pass.
    func tick(_ periods: Int = 1) { state.withLock { $0.periods += periods } }

    /// Lets `periods` pass and waits until the calls they allow have finished.
    func run(periods: Int) -> Bool {
        let target = state.withLock { s -> Int in
            s.periods += periods
            return s.clockedCalls + s.periods
        }
        return state.wait(until: { $0.clockedCalls >= target })
    }

    /// Runs `body` with the clock stopped holding the audio thread back (stop and switch wait for it).
    func unclocked<R>(_ body: () throws -> R) rethrows -> R {
        state.withLock { $0.unclocked = true }
        defer { state.withLock { s in s.unclocked = false; s.periods = 0 } }
        return try body()
    }

    /// One device call: waits for a period (or runs at once when unclocked), then `body` with
    /// the state. Bounded, so a test that forgot to tick fails like an unplugged device.
    private func call<R>(_ device: String, _ body: (inout State) -> R) throws(AudioDeviceError) -> R {
        guard state.wait(until: { $0.periods > 0 || $0.unclocked }) else {
            throw .ioFailed(device: device, reason: "the test let no period pass")
        }
        let clocked = state.withLock { s -> Bool in
            guard !s.unclocked, s.periods > 0 else { return false }
            s.periods -= 1
            return true
        }
        return state.withLock { s in
            defer { if clocked { s.clockedCalls += 1 } }
            return body(&s)
        }
    }

    func read(into samples: inout [Int16]) throws(AudioDeviceError) {
        let (value, failing) = try call("mem.in") { ($0.value, $0.failing) }
        if failing { throw .ioFailed(device: "mem.in", reason: "unplugged") }
        samples = [Int16](repeating: value, count: format.samplesPer10ms)
    }
    func write(_ samples: [Int16]) throws(AudioDeviceError) {
        let failing = try call("mem.out") { s -> Bool in
            if !s.failing { s.written += samples }
            return s.failing
        }
        if failing { throw .ioFailed(device: "mem.out", reason: "unplugged") }
    }
    func delayMs() -> Int { 25 }
    func close() {}
}

struct DeviceStreamTests {
    @Test func microphoneDeliversMutesWithoutReopeningAndRecoversFromLoss() throws {
        let device = MemoryAudioDevice()
        let frames = Monitor([AudioFrame]()), events = Monitor([AudioDeviceEvent]())
        let mic = MicrophoneCapturer(module: device, device: nil) { e in events.withLock { $0.append(e) } }
        mic.onFrame = { f in frames.withLock { $0.append(f) } }
        try mic.start()
        for (count, muted) in [(5, false), (10, true), (15, false)] {
            mic.isMuted = muted
            device.tick(5)
            #expect(frames.wait(until: { $0.count == count }))
        }
        #expect(device.state.value.opens == 1)   // mute and unmute did not reopen

        device.state.withLock { $0.failing = true }
        device.tick()
        #expect(events.wait(until: { !$0.isEmpty }))
        device.state.withLock { $0.failing = false }
        #expect(events.wait(until: { $0.count == 2 }))   // reopened at its next retry
        device.tick(2)
        #expect(frames.wait(until: { $0.count == 17 }))
        device.unclocked { mic.stop() }

        let got = frames.value.prefix(17)
        #expect(got.allSatisfy { $0.samplesPerChannel == 480 && $0.sampleRate == 48000 })
        let levels = got.map { Set($0.int16Samples) }
        #expect(levels == Array(repeating: [1000], count: 5) + Array(repeating: [0], count: 5) + Array(repeating: [1000], count: 7))
        #expect(events.value == [.lost(device: "default", reason: "audio: \"mem.in\" failed: unplugged"),
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
        // Period by period until both tracks come out summed (the buffers may hold some back first).
        for _ in 0..<50 where !device.state.value.written.contains(340) {
            #expect(device.run(periods: 1))
        }
        playout.remove(b)
        device.unclocked { playout.stop() }
        let written = device.state.value.written
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
        try device.unclocked { try playout.switchDevice(to: nil) }
        #expect(playout.device == nil)
        device.state.withLock { $0.missing = ["earpiece"] }
        #expect(throws: AudioDeviceError.openFailed(device: "earpiece", reason: "unplugged")) {
            try device.unclocked { try playout.switchDevice(to: "earpiece") }
        }
        #expect(playout.device == nil)
        let before = playout.stats.framesPlayed
        #expect(device.run(periods: 4))   // the old output resumed: it plays each period let pass
        device.unclocked { playout.stop() }
        #expect(playout.stats.framesPlayed >= before + 4)
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
