internal import CPulse
import Foundation

/// One pa_simple record or playback stream of 16-bit PCM.
final class PulseSimpleStream: AudioCaptureStream, AudioPlayoutStream, @unchecked Sendable {
    // @unchecked: `handle` is only touched under `lock` (a free must not race a read; a Mutex
    // cannot hold the C pointer across the call under strict sendability); one audio thread
    // does the reads or writes.
    enum Direction { case record, playback }

    let format: AudioStreamFormat
    let device: String
    private var handle: OpaquePointer?
    private let lock = NSLock()

    init(server: String?, name: String, direction: Direction, device: String?, format: AudioStreamFormat) throws(AudioDeviceError) {
        try format.validate()
        self.format = format
        self.device = device ?? "default"
        var spec = pa_sample_spec(format: PA_SAMPLE_S16LE, rate: UInt32(format.sampleRate), channels: UInt8(format.channels))
        let frameBytes = UInt32(format.samplesPer10ms * 2)
        // Small server-side buffers: 10 ms capture fragments; playout keeps 60 ms queued (less
        // underran on this shared 2-core machine), the device latency the echo canceller bridges.
        var attr = pa_buffer_attr(maxlength: UInt32.max, tlength: direction == .playback ? frameBytes * 6 : UInt32.max,
                                  prebuf: UInt32.max, minreq: direction == .playback ? frameBytes : UInt32.max,
                                  fragsize: direction == .record ? frameBytes : UInt32.max)
        var error: Int32 = 0
        let s = pa_simple_new(server, name, direction == .record ? PA_STREAM_RECORD : PA_STREAM_PLAYBACK, device,
                              direction == .record ? "capture" : "playout", &spec, nil, &attr, &error)
        guard let s else {
            throw .openFailed(device: self.device, reason: PulseIntrospection.errorText(error))
        }
        handle = s
    }

    deinit { close() }

    func read(into samples: inout [Int16]) throws(AudioDeviceError) {
        let count = format.samplesPer10ms
        if samples.count != count { samples = [Int16](repeating: 0, count: count) }
        var error: Int32 = 0
        let rc: Int32? = samples.withUnsafeMutableBytes { buffer in
            withHandle { pa_simple_read($0, buffer.baseAddress, buffer.count, &error) }
        }
        guard let rc else { throw .closed }
        if rc < 0 { throw .ioFailed(device: device, reason: PulseIntrospection.errorText(error)) }
    }

    func write(_ samples: [Int16]) throws(AudioDeviceError) {
        var error: Int32 = 0
        let rc: Int32? = samples.withUnsafeBytes { buffer in
            withHandle { pa_simple_write($0, buffer.baseAddress, buffer.count, &error) }
        }
        guard let rc else { throw .closed }
        if rc < 0 { throw .ioFailed(device: device, reason: PulseIntrospection.errorText(error)) }
    }

    func delayMs() -> Int {
        var error: Int32 = 0
        let usec = withHandle { pa_simple_get_latency($0, &error) } ?? 0
        return usec == UInt64.max ? 0 : Int(usec / 1000)
    }

    func close() {
        lock.lock()
        defer { lock.unlock() }
        if let handle { pa_simple_free(handle) }
        handle = nil
    }

    private func withHandle<R>(_ body: (OpaquePointer) -> R) -> R? {
        lock.lock()
        defer { lock.unlock() }
        return handle.map(body)
    }
}
