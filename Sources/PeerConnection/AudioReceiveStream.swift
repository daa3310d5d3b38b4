import AudioCodecs
import Dispatch
import Media
import RTP
import RTPMedia
import Locks
import Transport

/// SRTP → playout buffer → Opus (with loss concealment and FEC) → the receiver's audio track.
/// The buffer and its 20 ms playout clock live on the connection's loop; decoding runs on the
/// stream's own queue.
final class AudioReceiveStream: @unchecked Sendable {
    // @unchecked: `buffer`, `timerID` on the loop thread; `decoder` on `queue`.
    let track: AudioTrack
    private let loop: EventLoop
    private var buffer = AudioJitterBuffer()
    private var timerID: Int?
    private let queue: CodecQueue
    private var decoder: OpusDecoder?
    /// The jitter buffer's delay cuts, taken from quiet frames (decode queue).
    private var removal = QuietFrameRemoval()
    private let counters = Locked(AudioReceiveCounters())
    private var closed = false
    /// Loss and jitter of the remote stream, for our reception reports (loop thread).
    private(set) var reception: ReceiverStatistics?
    /// Capture times from the sender's reports, for lip sync (loop thread).
    private(set) var timing = StreamTiming(clockRate: 48000)

    init(track: AudioTrack, loop: EventLoop, execution: CodecExecution) {
        queue = CodecQueue(label: "swiftrtc.audio-decode", qos: .userInteractive, execution: execution)
        self.track = track
        self.loop = loop
    }

    var stats: AudioReceiveCounters { counters.withLock { $0 } }

    func receive(_ packet: RTPPacket, now: ContinuousClock.Instant, arrivalNTP: UInt64) {
        guard !closed else { return }
        if reception?.ssrc != packet.ssrc { reception = ReceiverStatistics(ssrc: packet.ssrc, clockRate: 48000) }
        reception?.record(packet, arrival: now)
        timing.packet(rtpTimestamp: packet.timestamp, arrivalNTP: arrivalNTP)
        _ = buffer.insert(packet, arrival: now)
        if timerID == nil { play(now) }
    }

    var remoteSSRC: UInt32? { reception?.ssrc }

    func receiveSenderReport(_ sr: SenderReport, now: ContinuousClock.Instant) {
        reception?.recordSenderReport(sr, arrival: now)
        timing.senderReport(ntp: sr.ntpTimestamp, rtpTimestamp: sr.rtpTimestamp)
    }

    func receptionReport(now: ContinuousClock.Instant) -> ReceptionReport? {
        reception?.receptionReport(now: now)
    }

    func close() {
        closed = true
        if let timerID { loop.cancelTimer(timerID) }
    }

    /// Plays every slot that is due, then sleeps until the next one.
    private func play(_ now: ContinuousClock.Instant) {
        while let slot = buffer.pollFrame(now: now) {
            queue.async { [self] in decode(slot) }
        }
        timerID = nil
        guard let next = buffer.nextDeadline() else { return }
        timerID = loop.schedule(at: next) { [weak self] in
            guard let self, !self.closed else { return }
            self.play(self.loop.now)
        }
    }

    private func decode(_ slot: AudioJitterBuffer.Slot) {
        do {
            if decoder == nil { decoder = try OpusDecoder(channels: 1) }
            guard let decoder else { return }
            let frame: AudioFrame
            if let payload = slot.payload {
                frame = try decoder.decode(payload)
            } else if let next = slot.nextPayload {
                frame = try decoder.decode(next, fec: true)   // the next packet's FEC rebuilds this one
            } else {
                frame = try decoder.decode(nil)               // packet-loss concealment
            }
            let samples = frame.int16Samples
            let power = samples.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(max(samples.count, 1))
            let remove = removal.shouldRemove(requested: slot.removeOneFrame, power: power / (32768.0 * 32768.0))
            counters.withLock {
                if remove { $0.samplesRemoved += samples.count }
                $0.samplesDecoded += samples.count
                if slot.isLost { $0.samplesConcealed += samples.count }
                $0.packetsDecoded += 1
                $0.lastLevel = (power.squareRoot() / 32768)
                $0.totalPower += power / (32768.0 * 32768.0)
                $0.totalEnergy += power / (32768.0 * 32768.0) * Double(frame.samplesPerChannel) / Double(frame.sampleRate)
            }
            if remove { return }
            var out = frame
            out.timestampNs = MonotonicClock.nanoseconds()
            track.source.deliver(out)
        } catch {
            counters.withLock { $0.decodeErrors += 1 }
        }
    }
}

struct AudioReceiveCounters: Sendable {
    var samplesDecoded = 0, samplesConcealed = 0, packetsDecoded = 0, decodeErrors = 0
    /// Decoded but not played, to shorten the playout delay (W3C removedSamplesForAcceleration).
    var samplesRemoved = 0
    var lastLevel = 0.0
    /// Sum over decoded packets of mean square (full scale = 1).
    var totalPower = 0.0
    /// W3C totalAudioEnergy: Σ level² × duration (s).
    var totalEnergy = 0.0
}
