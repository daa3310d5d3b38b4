import Codecs
import Dispatch
import Media
import RTP
import RTPMedia
import Locks
import Transport
#if canImport(Glibc)
import Glibc
#endif

/// SRTP → jitter buffer (reorder, assemble, NACK, PLI) → decoder → the receiver's track, for
/// one remote video stream. The jitter buffer lives on the connection's loop; decoding runs on
/// the stream's own queue.
final class VideoReceiveStream: @unchecked Sendable {
    // @unchecked: `buffer` and `timerID` on the loop thread; `decoder` on `queue`.
    let codec: VideoCodecType
    let track: VideoTrack
    private let feedbackSSRC: UInt32
    private let loop: EventLoop
    private weak var transport: MediaTransport?
    private var buffer: VideoJitterBuffer
    private var timerID: Int?
    private let queue: CodecQueue
    /// Decoding on the loop (`CodecExecution.inline`): frame times are the loop's clock.
    private let inline: Bool
    private var decoder: (any VideoDecoder)?
    private let counters = Locked(VideoReceiveCounters())
    private let factory = VideoDecoderFactory()
    private var closed = false
    /// Capture times from the sender's reports, for lip sync (loop thread).
    private(set) var timing = StreamTiming(clockRate: 90000)
    /// When each frame's first packet arrived, by RTP timestamp, until the frame leaves the
    /// jitter buffer (W3C jitterBufferDelay; loop thread, at most 256 frames).
    private var frameArrivals: [UInt32: ContinuousClock.Instant] = [:]
    /// When each frame is shown: late enough that frames waiting for a retransmission are
    /// still on time (loop thread).
    private var playout = PlayoutDelay()

    init(codec: VideoCodecType, track: VideoTrack, feedbackSSRC: UInt32, videoOrientationID: UInt8?,
         transport: MediaTransport, loop: EventLoop, execution: CodecExecution) {
        queue = CodecQueue(label: "swiftrtc.video-decode", qos: .userInitiated, execution: execution)
        inline = execution == .inline
        self.codec = codec
        self.track = track
        self.feedbackSSRC = feedbackSSRC
        self.transport = transport
        self.loop = loop
        var configuration = VideoJitterBuffer.Configuration(codec: codec)
        configuration.nackDelay = reorderTolerance
        self.buffer = VideoJitterBuffer(configuration: configuration)
        self.buffer.videoOrientationExtensionID = videoOrientationID
    }

    var stats: VideoReceiveCounters { counters.withLock { $0 } }

    // MARK: loop thread

    var jitterStatistics: VideoJitterBuffer.Statistics { buffer.statistics }
    var remoteSSRC: UInt32? { buffer.ssrc }

    func receive(_ packet: RTPPacket, now: ContinuousClock.Instant, arrivalNTP: UInt64) {
        loop.preconditionInLoop()
        guard !closed else { return }
        timing.packet(rtpTimestamp: packet.timestamp, arrivalNTP: arrivalNTP)
        if frameArrivals[packet.timestamp] == nil {
            if frameArrivals.count >= 256 { frameArrivals = frameArrivals.filter { now - $0.value < .seconds(2) } }
            if frameArrivals.count < 256 { frameArrivals[packet.timestamp] = now }
        }
        _ = buffer.insert(packet, arrival: now)
        pump(now)
    }

    func receiveSenderReport(_ sr: SenderReport, now: ContinuousClock.Instant) {
        buffer.recordSenderReport(sr, arrival: now)
        timing.senderReport(ntp: sr.ntpTimestamp, rtpTimestamp: sr.rtpTimestamp)
    }

    func receptionReport(now: ContinuousClock.Instant) -> ReceptionReport? {
        buffer.receptionReport(now: now)
    }

    /// From the receiver reports on a stream we send (nil: we send none).
    private var reportedRTT: Duration?

    func setRTT(_ rtt: Duration) {
        reportedRTT = rtt
        buffer.rtt = rtt
    }

    /// The RTT its NACK retries are paced by (loop thread).
    var nackPacingRTT: Duration { buffer.rtt }

    /// A renegotiation may move or drop the video-orientation extension.
    func setVideoOrientationID(_ id: UInt8?) { buffer.videoOrientationExtensionID = id }

    func close() {
        closed = true
        if let timerID { loop.cancelTimer(timerID) }
    }

    private func pump(_ now: ContinuousClock.Instant) {
        while let frame = buffer.pollFrame() {
            let renderAt = playout.frameComplete(rtpTimestamp: frame.rtpTimestamp, now: now)
            // W3C jitterBufferDelay: from the first packet to leaving the buffer, the hold for
            // playout included.
            let waited = frameArrivals.removeValue(forKey: frame.rtpTimestamp).map { renderAt - $0 }
            let target = playout.target
            counters.withLock {
                $0.framesAssembled += 1
                if let waited {
                    $0.jitterBufferDelay += waited
                    $0.jitterBufferTargetDelay += target
                    $0.jitterBufferEmittedCount += 1
                }
            }
            queue.async { [self] in decode(frame, showAt: renderAt) }
        }
        // Only while something is missing: the RTT paces retries, and this runs per packet.
        if reportedRTT == nil, buffer.awaitsRetransmissions, let rtt = transport?.nackRTT(turnaround: buffer.nackTurnaround) {
            buffer.rtt = rtt
        }
        if let lost = buffer.pollNack(now: now), let ssrc = buffer.ssrc {
            transport?.sendRTCP(RTCPPacket.serializeCompound([.nack(GenericNACK(senderSSRC: feedbackSSRC, mediaSSRC: ssrc, lostSequenceNumbers: lost))]))
            counters.withLock { $0.nackCount += 1 }
        }
        if buffer.pollKeyframeRequest(now: now), let ssrc = buffer.ssrc {
            transport?.sendRTCP(RTCPPacket.serializeCompound([.pli(senderSSRC: feedbackSSRC, mediaSSRC: ssrc)]))
            counters.withLock { $0.pliCount += 1 }
        }
        if let timerID { loop.cancelTimer(timerID) }
        timerID = nil
        if let deadline = buffer.nextDeadline() {
            timerID = loop.schedule(at: deadline) { [weak self] in
                guard let self, !self.closed else { return }
                self.timerID = nil
                let now = self.loop.now
                self.buffer.handleTimeout(now: now)
                self.pump(now)
            }
        }
    }

    // MARK: decode queue

    private func decode(_ encoded: EncodedFrame, showAt: ContinuousClock.Instant) {
        let started = ContinuousClock.now
        do {
            if decoder == nil { decoder = try factory.makeDecoder(codec) }
            guard let decoder, let frame = try decoder.decode(encoded) else { return }
            let decodeTime = ContinuousClock.now - started
            counters.withLock {
                $0.framesDecoded += 1
                if encoded.isKeyframe { $0.keyFramesDecoded += 1 }
                $0.frameWidth = frame.width
                $0.frameHeight = frame.height
                $0.totalDecodeTime += decodeTime
            }
            if inline {
                show(frame, at: showAt)
            } else {
                loop.execute { [weak self] in self?.show(frame, at: showAt) }
            }
        } catch {
            counters.withLock { $0.decodeErrors += 1 }
            loop.execute { [weak self] in
                guard let self, !self.closed else { return }
                self.buffer.decoderFailed()
                self.pump(self.loop.now)
            }
        }
    }
}

extension VideoReceiveStream {
    /// Loop thread: the frame goes to the track at its playout time (frames in order: their
    /// times increase and same-deadline timers fire in order).
    private func show(_ frame: VideoFrame, at time: ContinuousClock.Instant) {
        guard !closed else { return }
        loop.schedule(at: time) { [weak self] in
            guard let self, !self.closed else { return }
            var shown = frame
            shown.timestampNs = MonotonicClock.nanoseconds()
            self.counters.withLock { $0.freezes.frameRendered(at: self.inline ? self.loop.now : .now) }
            self.track.source.deliverCapturedFrame(shown)
        }
    }
}

struct VideoReceiveCounters: Sendable {
    var framesAssembled = 0, framesDecoded = 0, keyFramesDecoded = 0, frameWidth = 0, frameHeight = 0
    var decodeErrors = 0, nackCount = 0, pliCount = 0
    var totalDecodeTime: Duration = .zero
    var freezes = FreezeDetector()
    var jitterBufferDelay: Duration = .zero, jitterBufferTargetDelay: Duration = .zero, jitterBufferEmittedCount = 0
}

/// How long a gap may stay open before it is NACKed: packets of one frame leave within a few
/// ms, so jitter reorders them, and NACKing at once asked for (and got) about five copies per
/// real loss at 25±10 ms of jitter. Recovery waits this much longer (libwebrtc waits for a
/// reordering estimate instead).
let reorderTolerance = Duration.milliseconds(15)
