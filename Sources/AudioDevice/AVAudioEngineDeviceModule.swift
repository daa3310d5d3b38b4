// The Apple audio device module: one AVAudioEngine under the reference app's AVAudioSession
// (.playAndRecord, .voiceChat, default to speaker). Only compiled on iOS, never on this Linux
// machine: it is kept small, the same two stream protocols as PulseAudio, so everything above
// (mixer, playout buffer, echo path) is shared. The system's voice processing stays off: the echo
// path cancels echo with the exact mix we play, as on Linux.
#if canImport(AVFoundation) && os(iOS)
import AVFoundation
import Foundation

public final class AVAudioEngineDeviceModule: AudioDeviceModule, @unchecked Sendable {
    // @unchecked: the engine is only touched under `lock`.
    /// Output ids: the loudspeaker (the reference app's "speaker on") and the earpiece; other
    /// routes (headsets, Bluetooth) are listed by their port UID.
    public static let speaker = "speaker", receiver = "receiver"
    let engine = AVAudioEngine()
    let lock = NSLock()

    public init() throws(AudioDeviceError) {
        let session = AVAudioSession.sharedInstance()
        do {
            try session.setCategory(.playAndRecord, mode: .voiceChat, options: [.defaultToSpeaker, .allowBluetooth])
            try session.setPreferredSampleRate(48000)
            try session.setPreferredIOBufferDuration(0.01)
            try session.setActive(true)
        } catch {
            throw .serverUnavailable("AVAudioSession: \(error)")
        }
    }

    public func inputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] {
        let session = AVAudioSession.sharedInstance()
        let current = session.currentRoute.inputs.first?.uid
        return (session.availableInputs ?? []).map {
            AudioDeviceInfo(id: $0.uid, name: $0.portName, kind: .input, isDefault: $0.uid == current,
                            sampleRate: Int(session.sampleRate), channels: 1)
        }
    }

    public func outputDevices() throws(AudioDeviceError) -> [AudioDeviceInfo] {
        let session = AVAudioSession.sharedInstance()
        let route = session.currentRoute.outputs
        let onSpeaker = route.contains { $0.portType == .builtInSpeaker }
        var list = [AudioDeviceInfo(id: Self.speaker, name: "Speaker", kind: .output, isDefault: onSpeaker),
                    AudioDeviceInfo(id: Self.receiver, name: "Receiver", kind: .output, isDefault: route.contains { $0.portType == .builtInReceiver })]
        for port in route where port.portType != .builtInSpeaker && port.portType != .builtInReceiver {
            list.append(AudioDeviceInfo(id: port.uid, name: port.portName, kind: .output, isDefault: true))
        }
        return list
    }

    public func openCapture(device: String?, format: AudioStreamFormat) throws(AudioDeviceError) -> any AudioCaptureStream {
        try format.validate()
        let session = AVAudioSession.sharedInstance()
        if let device {
            guard let port = session.availableInputs?.first(where: { $0.uid == device }) else { throw .noSuchDevice(device) }
            do { try session.setPreferredInput(port) } catch { throw .openFailed(device: device, reason: "\(error)") }
        }
        return try EngineCaptureStream(module: self, device: device ?? "default", format: format)
    }

    /// The speaker route is the output device: `speaker` overrides the route to the loudspeaker
    /// (`overrideOutputAudioPort(.speaker)`), anything else lets the session route (earpiece or
    /// a headset).
    public func openPlayout(device: String?, format: AudioStreamFormat) throws(AudioDeviceError) -> any AudioPlayoutStream {
        try format.validate()
        do {
            try AVAudioSession.sharedInstance().overrideOutputAudioPort(device == Self.speaker ? .speaker : .none)
        } catch {
            throw .openFailed(device: device ?? "default", reason: "\(error)")
        }
        return try EnginePlayoutStream(module: self, device: device ?? "default", format: format)
    }

    func startEngine(device: String) throws(AudioDeviceError) {
        if engine.isRunning { return }
        engine.prepare()
        do { try engine.start() } catch { throw .openFailed(device: device, reason: "AVAudioEngine: \(error)") }
    }
}

/// Interleaved Int16 between the engine's render thread and our blocking audio thread.
final class PCMQueue: @unchecked Sendable {
    // @unchecked: behind `condition`.
    private let condition = NSCondition()
    private var samples: [Int16] = []
    private var closed = false

    var count: Int { condition.withLock { samples.count } }

    func push(_ more: UnsafeBufferPointer<Int16>, limit: Int) {
        condition.withLock {
            samples.append(contentsOf: more)
            if samples.count > limit { samples.removeFirst(samples.count - limit) }
            condition.broadcast()
        }
    }

    /// Up to `count` samples now (the render thread must not wait).
    func take(upTo count: Int) -> [Int16] {
        condition.withLock {
            let n = min(count, samples.count)
            defer { samples.removeFirst(n); condition.broadcast() }
            return Array(samples[0..<n])
        }
    }

    /// Waits until `predicate` holds or the queue closes; false when closed or after 1 s.
    func wait(until predicate: (Int) -> Bool) -> Bool {
        condition.withLock {
            let deadline = Date().addingTimeInterval(1)
            while !closed, !predicate(samples.count) {
                if !condition.wait(until: deadline) { return false }
            }
            return !closed
        }
    }

    func close() { condition.withLock { closed = true; condition.broadcast() } }
}

final class EngineCaptureStream: AudioCaptureStream, @unchecked Sendable {
    // @unchecked: the tap runs on the engine's thread and only touches `queue` and `converter`.
    let format: AudioStreamFormat
    private let module: AVAudioEngineDeviceModule
    private let device: String
    private let queue = PCMQueue()
    private let target: AVAudioFormat

    init(module: AVAudioEngineDeviceModule, device: String, format: AudioStreamFormat) throws(AudioDeviceError) {
        self.module = module
        self.device = device
        self.format = format
        guard let target = AVAudioFormat(commonFormat: .pcmFormatInt16, sampleRate: Double(format.sampleRate),
                                         channels: AVAudioChannelCount(format.channels), interleaved: true) else {
            throw .unsupportedFormat("\(format.sampleRate) Hz × \(format.channels)")
        }
        self.target = target
        let input = module.engine.inputNode
        let source = input.outputFormat(forBus: 0)
        guard let converter = AVAudioConverter(from: source, to: target) else {
            throw .openFailed(device: device, reason: "no converter from \(source) to \(target)")
        }
        let limit = format.samplesPer10ms * 50   // half a second: a reader that stalls loses the oldest
        // Locked by hand: NSLock.withLock rethrows untyped errors, and this init throws AudioDeviceError.
        module.lock.lock()
        defer { module.lock.unlock() }
        do {
            input.installTap(onBus: 0, bufferSize: AVAudioFrameCount(source.sampleRate / 100), format: source) { [queue] buffer, _ in
                let capacity = AVAudioFrameCount(Double(buffer.frameLength) * target.sampleRate / source.sampleRate) + 16
                guard let out = AVAudioPCMBuffer(pcmFormat: target, frameCapacity: capacity) else { return }
                var given = false
                var error: NSError?
                _ = converter.convert(to: out, error: &error) { _, status in
                    if given { status.pointee = .noDataNow; return nil }
                    given = true
                    status.pointee = .haveData
                    return buffer
                }
                guard error == nil, let data = out.int16ChannelData else { return }
                queue.push(UnsafeBufferPointer(start: data[0], count: Int(out.frameLength) * format.channels), limit: limit)
            }
            try module.startEngine(device: device)
        }
    }

    func read(into samples: inout [Int16]) throws(AudioDeviceError) {
        let count = format.samplesPer10ms
        guard queue.wait(until: { $0 >= count }) else { throw .ioFailed(device: device, reason: "no input for 1 s") }
        samples = queue.take(upTo: count)
    }

    func delayMs() -> Int {
        let s = AVAudioSession.sharedInstance()
        return Int((s.inputLatency + s.ioBufferDuration) * 1000) + queue.count * 1000 / max(format.sampleRate * format.channels, 1)
    }

    func close() {
        queue.close()
        module.lock.withLock { module.engine.inputNode.removeTap(onBus: 0) }
    }
}

final class EnginePlayoutStream: AudioPlayoutStream, @unchecked Sendable {
    // @unchecked: the source node's render block only touches `queue`.
    let format: AudioStreamFormat
    private let module: AVAudioEngineDeviceModule
    private let device: String
    private let queue = PCMQueue()
    private var node: AVAudioSourceNode?

    init(module: AVAudioEngineDeviceModule, device: String, format: AudioStreamFormat) throws(AudioDeviceError) {
        self.module = module
        self.device = device
        self.format = format
        guard let float = AVAudioFormat(standardFormatWithSampleRate: Double(format.sampleRate),
                                        channels: AVAudioChannelCount(format.channels)) else {
            throw .unsupportedFormat("\(format.sampleRate) Hz × \(format.channels)")
        }
        let channels = format.channels
        let node = AVAudioSourceNode(format: float) { [queue] _, _, frameCount, list -> OSStatus in
            let buffers = UnsafeMutableAudioBufferListPointer(list)
            let pcm = queue.take(upTo: Int(frameCount) * channels)   // short: the rest is silence
            for (c, buffer) in buffers.enumerated() {
                guard let out = buffer.mData?.assumingMemoryBound(to: Float.self) else { continue }
                for i in 0..<Int(frameCount) {
                    let index = i * channels + min(c, channels - 1)
                    out[i] = index < pcm.count ? Float(pcm[index]) / 32768 : 0
                }
            }
            return noErr
        }
        self.node = node
        module.lock.lock()
        defer { module.lock.unlock() }
        module.engine.attach(node)
        module.engine.connect(node, to: module.engine.mainMixerNode, format: float)
        try module.startEngine(device: device)
    }

    /// Blocks while 60 ms are queued: the engine's render clock paces the writer.
    func write(_ samples: [Int16]) throws(AudioDeviceError) {
        let high = format.samplesPer10ms * 6
        guard queue.wait(until: { $0 < high }) else { throw .ioFailed(device: device, reason: "output stalled for 1 s") }
        samples.withUnsafeBufferPointer { queue.push($0, limit: high * 4) }
    }

    func delayMs() -> Int {
        let s = AVAudioSession.sharedInstance()
        return Int((s.outputLatency + s.ioBufferDuration) * 1000) + queue.count * 1000 / max(format.sampleRate * format.channels, 1)
    }

    func close() {
        queue.close()
        guard let node else { return }
        self.node = nil
        module.lock.withLock {
            module.engine.disconnectNodeOutput(node)
            module.engine.detach(node)
        }
    }
}
#endif
