import RTP

/// Where each recorded sample lands in the file (sans-I/O: times come in as arguments).
///
/// Audio and video are put on one clock the way lip sync does it: each stream's sender reports
/// map its RTP timestamps to the sender's wall clock (RFC 3550 §6.4.1), so samples captured
/// together get the same file time whatever the network did to them. The mapping follows the
/// newest report, so a sender whose audio clock drifts from its wall clock stays in sync.
/// Until every stream has a report the samples wait (at most `startupWindow`); a stream that
/// never sends one makes the whole file fall back to arrival times. The file starts at the
/// first video keyframe (audio before it is dropped) so it opens on a picture.
public struct RecordingTimeline: Sendable {
    public enum Track: Int, Sendable, CaseIterable {
        case video = 0, audio = 1
        var clockRate: Int { self == .video ? 90_000 : 48_000 }
    }

    /// A sample placed on the file's clock.
    public struct Sample: Sendable, Equatable {
        public var track: Track
        public var data: [UInt8]
        public var isKeyframe: Bool
        /// Microseconds from the start of the file.
        public var time: Int64
        /// Microseconds; 0 when unknown (video: until the next frame).
        public var duration: Int64
    }

    public struct Configuration: Sendable {
        /// How long (arrival time) samples wait for every stream's first sender report.
        public var startupWindow: Double = 2.5
        /// How long a video track with no keyframe holds up the start before the file starts
        /// without video.
        public var keyframeWindow: Double = 10
        /// Samples are held this long after arrival, so late (retransmitted, reordered) ones
        /// are still written in order.
        public var reorderDelay: Double = 0.2
        /// A sample this far behind its track's last one is stale (a retransmission after the
        /// fact) and is dropped rather than written out of order.
        public var maxBackstep: Double = 1.0
        /// Arrival minus capture changing by more than this means the RTP clock jumped rather
        /// than the network slowing down.
        public var maxClockJump: Double = 2.0
        public init() {}
    }

    public enum Clock: Sendable, Equatable {
        /// Still waiting for sender reports (or a keyframe).
        case undecided
        /// The senders' wall clocks from their reports (lip sync).
        case senderReports
        /// Arrival times: some stream never sent a report.
        case arrival
        /// Capture times given by the caller (recording what is sent).
        case capture
    }

    public struct Statistics: Sendable, Equatable {
        public var written = [0, 0]
        public var droppedBeforeStart = 0
        public var droppedStale = 0
        public var droppedUnmapped = 0
    }

    private struct Pending: Sendable {
        var track: Track
        var data: [UInt8]
        var isKeyframe: Bool
        var ssrc: UInt32
        var rtpTimestamp: UInt32
        /// Unwrapped RTP timestamp, for arrival clocks.
        var extended: Int64
        var arrival: Double
        var duration: Int64
        /// Seconds on the chosen clock once known.
        var capture: Double?
    }

    private struct TrackState: Sendable {
        var ssrc: UInt32?
        var lastRTP: UInt32 = 0
        var extended: Int64 = 0
        /// The newest sender report of the current SSRC: NTP seconds and RTP timestamp.
        var report: (seconds: Double, rtp: UInt32)?
        /// Arrival clock: capture = extended / rate + offset, fixed at the SSRC's first packet.
        var arrivalOffset: Double?
        /// Arrival minus capture of the last mapped sample, to place a new SSRC that has no
        /// report yet.
        var transit: Double?
        var firstPacketArrival: Double?
        var lastTime: Int64?
    }

    public let configuration: Configuration
    public private(set) var clock: Clock = .undecided
    public private(set) var statistics = Statistics()
    /// Seconds on the chosen clock at file time 0.
    public private(set) var origin: Double?
    /// The tracks the file has (decided with the clock).
    public private(set) var tracks: Set<Track> = []
    private var states = [TrackState(), TrackState()]
    private var pending: [Pending] = []
    private var firstArrival: Double?
    private var captureInput = false
    private var videoExpected = false

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
    }

    public var pendingCount: Int { pending.count }

    /// Video is on its way (its packets arrive, no frame is complete yet): the start waits for
    /// its keyframe (up to `keyframeWindow`) rather than starting an audio-only file.
    public mutating func expectVideo() { videoExpected = true }

    // MARK: input

    public mutating func senderReport(track: Track, ssrc: UInt32, ntp: UInt64, rtpTimestamp: UInt32) {
        var s = states[track.rawValue]
        if s.ssrc != ssrc && s.ssrc != nil { return }   // a report of a stream not (yet) recorded
        if s.ssrc == nil { s.ssrc = ssrc }
        s.report = (NTPTime.secondsSince1900(ntp), rtpTimestamp)
        states[track.rawValue] = s
    }

    /// A sample from RTP: its stream, timestamp and arrival time (seconds, monotonic).
    public mutating func add(track: Track, ssrc: UInt32, rtpTimestamp: UInt32, arrival: Double,
                             data: [UInt8], isKeyframe: Bool, duration: Int64 = 0) {
        if firstArrival == nil { firstArrival = arrival }
        var s = states[track.rawValue]
        if s.ssrc != ssrc || s.firstPacketArrival == nil {
            // A new stream (first, or the sender restarted): its RTP clock starts afresh.
            if s.ssrc != ssrc { s.report = nil }
            s.ssrc = ssrc
            s.lastRTP = rtpTimestamp
            s.extended = Int64(rtpTimestamp)
            s.arrivalOffset = arrival - Double(rtpTimestamp) / Double(track.clockRate)
            s.firstPacketArrival = arrival
        } else {
            s.extended += Int64(Int32(bitPattern: rtpTimestamp &- s.lastRTP))
            s.lastRTP = rtpTimestamp
        }
        let p = Pending(track: track, data: data, isKeyframe: isKeyframe, ssrc: ssrc, rtpTimestamp: rtpTimestamp,
                        extended: s.extended, arrival: arrival, duration: duration, capture: nil)
        states[track.rawValue] = s
        pending.append(p)
    }

    /// A sample whose capture time is known (seconds on the caller's clock): what is sent.
    public mutating func add(track: Track, captureTime: Double, data: [UInt8], isKeyframe: Bool, duration: Int64 = 0) {
        if firstArrival == nil { firstArrival = captureTime }
        captureInput = true
        pending.append(Pending(track: track, data: data, isKeyframe: isKeyframe, ssrc: 0, rtpTimestamp: 0,
                               extended: 0, arrival: captureTime, duration: duration, capture: captureTime))
    }

    // MARK: output

    /// The samples ready at `now` (same clock as the arrivals), in file order.
    public mutating func poll(now: Double) -> [Sample] {
        if clock == .undecided && !decide(now: now) { return [] }
        // Nothing has been held long enough yet: the common case, one packet after another.
        if let oldest = pending.lazy.map(\.arrival).min(), now - oldest < configuration.reorderDelay { return [] }
        var ready: [Pending] = []
        var kept: [Pending] = []
        for var p in pending {
            if p.capture == nil || clock != .capture { p.capture = map(p) }
            if p.capture == nil {
                // A new stream waiting for its first report; placed by the last transit when late.
                if now - p.arrival >= configuration.startupWindow, let t = states[p.track.rawValue].transit {
                    p.capture = p.arrival - t
                } else if now - p.arrival >= configuration.startupWindow {
                    statistics.droppedUnmapped += 1
                    continue
                } else {
                    kept.append(p)
                    continue
                }
            }
            if now - p.arrival >= configuration.reorderDelay { ready.append(p) } else { kept.append(p) }
        }
        pending = kept
        return place(ready)
    }

    /// Everything still held, placed as well as it can be (the recording is ending).
    public mutating func flush() -> [Sample] {
        if clock == .undecided && !decide(now: .infinity) { pending = []; return [] }
        var all: [Pending] = []
        for var p in pending {
            if clock != .capture { p.capture = map(p) }
            if p.capture == nil, let t = states[p.track.rawValue].transit { p.capture = p.arrival - t }
            if p.capture != nil { all.append(p) } else { statistics.droppedUnmapped += 1 }
        }
        pending = []
        return place(all)
    }

    // MARK: private

    /// Chooses the clock and the origin once every stream has a report or the window is over.
    private mutating func decide(now: Double) -> Bool {
        guard let firstArrival, !pending.isEmpty else { return false }
        let waited = now - firstArrival
        // Video before its first keyframe cannot be decoded: it never starts a file (`place`).
        let hasVideo = videoExpected || pending.contains { $0.track == .video }
        let hasKeyframe = pending.contains { $0.track == .video && $0.isKeyframe }
        if hasVideo && !hasKeyframe && waited < configuration.keyframeWindow { return false }
        let present = Set(pending.map(\.track)).filter { $0 != .video || hasKeyframe }
        // Both kinds there (and reported) starts at once; otherwise the other may be on its way.
        let complete = present.count == Track.allCases.count
        if captureInput {
            if !complete && waited < configuration.startupWindow { return false }
            clock = .capture
        } else {
            let reported = present.allSatisfy { states[$0.rawValue].report != nil }
            if !(reported && complete) && waited < configuration.startupWindow { return false }
            clock = reported ? .senderReports : .arrival
        }
        tracks = present
        for i in pending.indices where clock != .capture { pending[i].capture = map(pending[i]) }
        let startSample = present.contains(.video)
            ? pending.first { $0.track == .video && $0.isKeyframe }
            : pending.filter { $0.capture != nil }.min { $0.capture! < $1.capture! }
        guard let start = startSample?.capture else { clock = .undecided; return false }
        origin = start
        return true
    }

    /// Capture seconds of a sample on the chosen clock, nil when its stream has no mapping yet.
    private mutating func map(_ p: Pending) -> Double? {
        let s = states[p.track.rawValue]
        let rate = Double(p.track.clockRate)
        switch clock {
        case .capture: return p.capture
        case .undecided: return nil
        case .arrival:
            guard s.ssrc == p.ssrc, var offset = s.arrivalOffset else { return nil }
            var capture = Double(p.extended) / rate + offset
            if let t = s.transit, abs(p.arrival - capture - t) > configuration.maxClockJump {
                // The RTP clock jumped (a sender restarted under the same SSRC): re-anchored
                // at the transit seen so far.
                offset = p.arrival - t - Double(p.extended) / rate
                states[p.track.rawValue].arrivalOffset = offset
                capture = p.arrival - t
            }
            states[p.track.rawValue].transit = p.arrival - capture
            return capture
        case .senderReports:
            guard s.ssrc == p.ssrc, let report = s.report else { return nil }
            let capture = report.seconds + Double(Int32(bitPattern: p.rtpTimestamp &- report.rtp)) / rate
            // A report from before a jump of the RTP clock: the sample waits for the next one
            // (or, late, is placed by the transit so far).
            if let t = s.transit, abs(p.arrival - capture - t) > configuration.maxClockJump { return nil }
            states[p.track.rawValue].transit = p.arrival - capture
            return capture
        }
    }

    private mutating func place(_ samples: [Pending]) -> [Sample] {
        guard let origin else { return [] }
        var out: [Sample] = []
        for p in samples.sorted(by: { ($0.capture!, $0.track.rawValue) < ($1.capture!, $1.track.rawValue) }) {
            guard tracks.contains(p.track) else { statistics.droppedBeforeStart += 1; continue }
            var time = Int64(((p.capture! - origin) * 1_000_000).rounded())
            // Audio that ends before the first picture, and anything before the start, is cut.
            if time < 0 && time + p.duration <= 0 || time < -20_000 { statistics.droppedBeforeStart += 1; continue }
            time = max(time, 0)
            var s = states[p.track.rawValue]
            if let last = s.lastTime {
                if Double(last - time) / 1_000_000 > configuration.maxBackstep { statistics.droppedStale += 1; continue }
                if p.track == .audio && time < last + max(p.duration / 2, 1) {
                    // A duplicate or an overlap: the audio already written covers it.
                    statistics.droppedStale += 1
                    continue
                }
                if time <= last { time = last + 1 }
            } else if p.track == .video && !p.isKeyframe {
                statistics.droppedBeforeStart += 1
                continue
            }
            s.lastTime = time
            states[p.track.rawValue] = s
            statistics.written[p.track.rawValue] += 1
            out.append(Sample(track: p.track, data: p.data, isKeyframe: p.isKeyframe, time: time, duration: p.duration))
        }
        return out
    }
}
