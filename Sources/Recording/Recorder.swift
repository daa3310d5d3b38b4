import Dispatch
import Locks
import Media
import RTP
import RTPMedia

/// Records a stream to an MP4, WebM or MKV file without re-encoding: H.264 or VP8 video and
/// Opus audio, in sync by their sender reports (`RecordingTimeline`).
///
/// Feed it what was received (RTP packets and sender reports, after SRTP: `attach` does that for
/// a peer connection's receivers; the relay feeds its publishers') or what is sent (encoded
/// frames and Opus packets with their capture times). Everything is thread-safe; the work runs
/// on the recorder's own queue so a slow disk never holds up the network.
public final class Recorder: @unchecked Sendable {
    // @unchecked: everything mutable lives on `queue` (the `state` lock is for readers).
    public struct Statistics: Sendable, Equatable {
        public var videoFrames = 0
        public var audioPackets = 0
        public var bytes: Int64 = 0
        /// File time of the last sample written, seconds.
        public var duration: Double = 0
        /// The file is open (its header written).
        public var started = false
        public var width = 0
        public var height = 0
        /// Samples not written: before the first keyframe, stale, or after a write error.
        public var dropped = 0
        /// Why writing stopped, if it did.
        public var error: String?
        public init() {}
    }

    public let path: String
    public let container: RecordingContainer
    /// Called (on the recorder's queue) when the file needs a keyframe it cannot make: at the
    /// start and after loss the jitter buffer could not repair. The relay asks its publisher.
    public var onKeyframeNeeded: (@Sendable () -> Void)? {
        get { callbacks.withLock { $0.keyframe } }
        set { callbacks.withLock { $0.keyframe = newValue } }
    }
    /// Called once, on the recorder's queue, when a write fails (disk full, file removed).
    public var onError: (@Sendable (String) -> Void)? {
        get { callbacks.withLock { $0.error } }
        set { callbacks.withLock { $0.error = newValue } }
    }

    private struct Callbacks {
        var keyframe: (@Sendable () -> Void)?
        var error: (@Sendable (String) -> Void)?
    }
    private let callbacks = Locked(Callbacks())
    private let queue = DispatchQueue(label: "swiftrtc.recorder", qos: .utility)
    private let state = Locked(Statistics())
    private let inline: Bool
    private let reference = ContinuousClock.now
    // queue state
    private var timeline: RecordingTimeline
    private var videoBuffer: VideoJitterBuffer?
    private var videoCodec: VideoCodecType?
    private var writer: ContainerWriter?
    private var held: [RecordingTimeline.Sample] = []
    private var closed = false
    private var stats = Statistics()

    /// Checks the name (`.mp4`, `.webm`, `.mkv`); the file is created when the first keyframe
    /// (or, audio only, the first packet) is ready.
    /// `inline`: the work runs on the caller's thread (one thread only: a simulated loop's, so
    /// tests on simulated time stay deterministic) instead of the recorder's queue.
    public init(path: String, configuration: RecordingTimeline.Configuration = .init(), inline: Bool = false) throws(MediaError) {
        self.inline = inline
        guard let container = RecordingContainer(path: path) else {
            throw MediaError("\(path): record to a .mp4, .webm or .mkv file")
        }
        self.path = path
        self.container = container
        timeline = RecordingTimeline(configuration: configuration)
    }

    public var statistics: Statistics { state.withLock { $0 } }

    // MARK: input (any thread)

    /// What arrives, queued in order and taken in batches every `batchInterval` (50 ms): one wake-up of
    /// the queue per batch, not one per packet (a wake-up costs more than recording a packet;
    /// the timeline holds samples 200 ms anyway).
    private enum Input {
        case video(RTPPacket, VideoCodecType, ContinuousClock.Instant)
        case audio(RTPPacket, ContinuousClock.Instant)
        case report(SenderReport, video: Bool)
        case sentVideo(EncodedFrame)
        case sentAudio([UInt8], Int64)
    }
    private let inbox = Locked<[Input]>([])
    static let batchInterval = 0.05

    private func enqueue(_ input: Input) {
        let first = inbox.withLock { box in
            box.append(input)
            return box.count == 1
        }
        if inline {
            takeInbox()
        } else if first {
            queue.asyncAfter(deadline: .now() + Self.batchInterval) { [self] in takeInbox() }
        }
    }

    /// A received video RTP packet (after SRTP and RTX unwrapping).
    public func video(_ packet: RTPPacket, codec: VideoCodecType, arrival: ContinuousClock.Instant = .now) {
        enqueue(.video(packet, codec, arrival))
    }

    /// A received Opus RTP packet.
    public func audio(_ packet: RTPPacket, arrival: ContinuousClock.Instant = .now) {
        guard !packet.payload.isEmpty else { return }
        enqueue(.audio(packet, arrival))
    }

    /// A sender report of a received stream.
    public func senderReport(_ report: SenderReport, video: Bool) {
        enqueue(.report(report, video: video))
    }

    /// An encoded frame as it leaves the encoder (its `captureTimeNs` is CLOCK_MONOTONIC).
    public func sent(_ frame: EncodedFrame) {
        enqueue(.sentVideo(frame))
    }

    /// An Opus packet as it leaves the encoder, with its capture time (CLOCK_MONOTONIC ns).
    public func sentAudio(_ opus: [UInt8], captureTimeNs: Int64) {
        guard !opus.isEmpty else { return }
        enqueue(.sentAudio(opus, captureTimeNs))
    }

    // MARK: queue

    private func takeInbox() {
        let batch = inbox.withLock { box in
            defer { box.removeAll(keepingCapacity: true) }
            return box
        }
        guard !closed else { return }
        var now: Double?
        for input in batch {
            switch input {
            case .video(let packet, let codec, let arrival):
                receiveVideo(packet, codec: codec, arrival: arrival)
                now = seconds(arrival)
            case .audio(let packet, let arrival):
                let at = seconds(arrival)
                timeline.add(track: .audio, ssrc: packet.ssrc, rtpTimestamp: packet.timestamp, arrival: at,
                             data: packet.payload, isKeyframe: true, duration: SampleFormat.opusDuration(packet.payload))
                now = at
            case .report(let report, let video):
                timeline.senderReport(track: video ? .video : .audio, ssrc: report.ssrc, ntp: report.ntpTimestamp,
                                      rtpTimestamp: report.rtpTimestamp)
            case .sentVideo(let frame):
                videoCodec = frame.codec
                timeline.add(track: .video, captureTime: Double(frame.captureTimeNs) / 1e9, data: frame.data, isKeyframe: frame.isKeyframe)
                now = MonotonicClock.seconds()
            case .sentAudio(let opus, let captureNs):
                timeline.add(track: .audio, captureTime: Double(captureNs) / 1e9, data: opus, isKeyframe: true,
                             duration: SampleFormat.opusDuration(opus))
                now = MonotonicClock.seconds()
            }
        }
        if let now { drain(now: now) }
    }

    private func receiveVideo(_ packet: RTPPacket, codec: VideoCodecType, arrival: ContinuousClock.Instant) {
        if videoCodec != codec || videoBuffer == nil {
            videoCodec = codec
            videoBuffer = VideoJitterBuffer(codec: codec)
            timeline.expectVideo()
        }
        let at = seconds(arrival)
        if let d = videoBuffer!.nextDeadline(), d <= arrival { videoBuffer!.handleTimeout(now: arrival) }
        _ = videoBuffer!.insert(packet, arrival: arrival)
        while let frame = videoBuffer!.pollFrame() {
            timeline.add(track: .video, ssrc: packet.ssrc, rtpTimestamp: frame.rtpTimestamp, arrival: at,
                         data: frame.data, isKeyframe: frame.isKeyframe)
        }
        _ = videoBuffer!.pollNack(now: arrival)   // the receiver's own jitter buffer asks
        if videoBuffer!.pollKeyframeRequest(now: arrival) {   // at the start, and after loss it could not repair
            callbacks.withLock { $0.keyframe }?()
        }
    }

    // MARK: end

    /// Writes what is held and finishes the file (MP4 index, Matroska cues). Idempotent.
    @discardableResult
    public func close() -> Statistics {
        if inline { finish() } else { queue.sync { finish() } }
        return statistics
    }

    // The last reference may go inside one of the queue's own blocks: no `queue.sync` here.
    // Nothing else can run on the queue then (every block holds the recorder).
    deinit { finish() }

    private func finish() {
        guard !closed else { return }
        takeInbox()   // what was handed over before close is written
        closed = true
        write(timeline.flush(), final: true)
        if let writer {
            do { try writer.finish() } catch { fail(String(describing: error)) }
            stats.bytes = writer.bytesWritten
        }
        writer = nil
        publish()
    }

    private func seconds(_ instant: ContinuousClock.Instant) -> Double {
        let d = instant - reference
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }

    private func drain(now: Double) {
        let samples = timeline.poll(now: now)
        if !samples.isEmpty { write(samples, final: false) }
    }

    private func write(_ samples: [RecordingTimeline.Sample], final: Bool) {
        held += samples
        if writer == nil {
            guard stats.error == nil, !held.isEmpty else { return }
            // The header needs the picture's format: wait for the first video sample.
            let video = held.first { $0.track == .video }
            if timeline.tracks.contains(.video) && video == nil && !final { return }
            do {
                writer = try open(video: video)
            } catch {
                fail(error.description)
                return
            }
        }
        guard let writer else { stats.dropped += held.count; held = []; return }
        for sample in held {
            do {
                try writer.write(sample)
            } catch {
                fail(error.description)
                break
            }
            if sample.track == .video { stats.videoFrames += 1 } else { stats.audioPackets += 1 }
            stats.duration = max(stats.duration, Double(sample.time + sample.duration) / 1e6)
        }
        held = []
        stats.bytes = writer.bytesWritten
        stats.dropped = timeline.statistics.droppedBeforeStart + timeline.statistics.droppedStale + timeline.statistics.droppedUnmapped
        publish()
    }

    private func open(video: RecordingTimeline.Sample?) throws(MediaError) -> ContainerWriter {
        var format: ContainerWriter.VideoFormat?
        if let video, let codec = videoCodec {
            guard let size = KeyframeSize.of(video.data, codec: codec) else {
                throw MediaError("\(path): cannot read the picture size from the first \(codec.rawValue) keyframe")
            }
            format = .init(codec: codec, width: size.width, height: size.height,
                           extradata: codec == .h264 ? SampleFormat.parameterSets(video.data) : [])
            stats.width = size.width
            stats.height = size.height
        }
        let audio = timeline.tracks.contains(.audio) ? held.first { $0.track == .audio }.map { SampleFormat.opusChannels($0.data) } ?? 1 : nil
        let w = try ContainerWriter(path: path, container: container, video: format, audioChannels: audio)
        stats.started = true
        return w
    }

    private func fail(_ message: String) {
        guard stats.error == nil else { return }
        stats.error = message
        stats.dropped += held.count
        held = []
        writer = nil   // its deinit closes the file as far as it got
        publish()
        callbacks.withLock { $0.error }?(message)
    }

    private func publish() {
        let s = stats
        state.withLock { $0 = s }
    }
}
