import AudioCodecs
import AudioProcessing
import Dispatch
import Media
import RTPMedia
import Locks

/// track → (echo cancellation, gain control, noise suppression) → Opus → RTP, for one audio
/// sender. Capture frames (10 or 20 ms) are gathered into 20 ms packets on the stream's queue.
final class AudioSendStream: AudioRenderer, @unchecked Sendable {
    // @unchecked: `encoder`, `processor`, `pending`, `samplesSent` are used on `queue` only.
    let sender: RtpSender
    let payloadType: UInt8
    private let queue: CodecQueue
    private var encoder: OpusEncoder?
    private var processor: AudioProcessor?
    private let processing: Locked<AudioProcessingOptions?>
    private var pending: [Int16] = []
    private var packetizer = OpusPacketizer()
    private let timestampBase = UInt32.random(in: 0...UInt32.max)
    private var samplesSent: UInt32 = 0
    private let counters = Locked(AudioSendCounters())

    init(sender: RtpSender, payloadType: UInt8, processing: AudioProcessingOptions?, execution: CodecExecution) {
        queue = CodecQueue(label: "swiftrtc.audio-encode", qos: .userInteractive, execution: execution)
        self.sender = sender
        self.payloadType = payloadType
        self.processing = Locked(processing)
    }

    /// The loss the peer reports: Opus spends in-band FEC bits in proportion (libwebrtc sets
    /// the encoder's expected loss the same way), so a lost packet is rebuilt from the next.
    func setReportedLoss(fraction: UInt8) {
        let percent = min(100, Int(fraction) * 100 / 256)
        queue.async { [self] in
            guard let encoder, encoder.settings.packetLossPercent != max(percent, 1) else { return }
            try? encoder.setInbandFEC(true, packetLossPercent: max(percent, 1))
        }
    }

    var stats: AudioSendCounters { counters.withLock { $0 } }

    /// Switches echo cancellation / gain control / noise suppression while running.
    func setProcessing(_ options: AudioProcessingOptions?) {
        processing.withLock { $0 = options }
    }

    func render(_ frame: AudioFrame) {
        queue.async { [self] in consume(frame) }
    }

    private func consume(_ input: AudioFrame) {
        var frame = input
        if frame.sampleRate != 48000 {
            counters.withLock { $0.droppedFrames += 1 }
            return
        }
        if frame.channels == 2 {   // mono on the wire, as Opus voice usually is
            let s = frame.int16Samples
            var mono = [Int16](repeating: 0, count: s.count / 2)
            for i in 0..<mono.count {
                let sum = Int(s[2 * i]) + Int(s[2 * i + 1])
                mono[i] = Int16(sum / 2)
            }
            frame = AudioFrame(samples: .int16(mono), sampleRate: 48000, channels: 1, timestampNs: frame.timestampNs)
        }
        if let options = processing.withLock({ $0 }) {
            do {
                if processor == nil { processor = try AudioProcessor(sampleRate: 48000, channels: 1, options: options) }
                processor?.update(options: options)
                if let processed = processor?.processCapture(frame) { frame = processed }
            } catch {
                counters.withLock { $0.processingErrors += 1 }
            }
        }
        pending.append(contentsOf: frame.int16Samples)
        while pending.count >= 960 {
            let chunk = Array(pending.prefix(960))
            pending.removeFirst(960)
            sendPacket(chunk, timestampNs: frame.timestampNs)
        }
    }

    private func sendPacket(_ samples: [Int16], timestampNs: Int64) {
        do {
            if encoder == nil { encoder = try OpusEncoder() }
            guard let encoder else { return }
            let packet = try encoder.encode(AudioFrame(samples: .int16(samples), sampleRate: 48000, channels: 1, timestampNs: timestampNs))
            let timestamp = timestampBase &+ samplesSent
            samplesSent &+= 960
            let energy = samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(samples.count)
            counters.withLock {
                $0.packetsEncoded += 1
                $0.totalSamplesSent += samples.count
                $0.totalEnergy += energy / (32768.0 * 32768.0) * 0.02
                $0.lastLevel = energy.squareRoot() / 32768
            }
            sender.onEncodedAudio?(packet, timestampNs)
            sender.sendPayloads([packetizer.packetize(packet)], payloadType: payloadType, timestamp: timestamp)
        } catch {
            counters.withLock { $0.encodeErrors += 1 }
        }
    }
}

struct AudioSendCounters: Sendable {
    var packetsEncoded = 0, totalSamplesSent = 0, droppedFrames = 0, encodeErrors = 0, processingErrors = 0
    /// W3C totalAudioEnergy: Σ level² × duration (s), level = RMS of a packet (full scale = 1).
    var totalEnergy = 0.0
    /// RMS of the last packet sent, 0…1 (W3C media-source audioLevel).
    var lastLevel = 0.0
}
