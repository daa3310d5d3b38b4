import RTP

/// Receive side of transport-wide congestion control
/// (draft-holmer-rmcat-transport-wide-cc-extensions-01), sans-I/O: the transport sequence number
/// and arrival time of every packet in, `TransportCCFeedback` messages out every `interval`.
///
/// Shaped like libwebrtc's RemoteEstimatorProxy: arrivals live in a ring indexed by the unwrapped
/// sequence number, so memory is fixed whatever the sender does. Each feedback covers what
/// arrived since the previous one; a packet arriving late for numbers already reported moves the
/// next feedback's start back to it, so the sender learns it was not lost after all.
public struct TransportCCRecorder: Sendable {
    public typealias Instant = ContinuousClock.Instant

    public struct Configuration: Sendable, Equatable {
        public var interval: Duration = .milliseconds(50)
        /// Arrivals this much older than the newest are forgotten (libwebrtc's back window).
        public var history: Duration = .milliseconds(500)
        /// Sequence numbers tracked at most (16…32768): the ring's size, allocated once.
        public var maxTrackedPackets: Int = 8192
        /// Bytes one feedback's RTCP packet may take at most, header included (an upper bound
        /// is computed, so real packets may be smaller); more statuses go in another feedback.
        public var maxFeedbackSize: Int = 1200

        public init() {}
    }

    public struct Statistics: Sendable, Equatable {
        public var packetsRecorded = 0
        public var duplicates = 0
        /// Older than everything the ring still covers.
        public var tooOld = 0
        public var feedbacksBuilt = 0
    }

    public let configuration: Configuration
    public var senderSSRC: UInt32
    public var mediaSSRC: UInt32
    public private(set) var statistics = Statistics()

    /// Arrival in µs since `epoch`, or `Self.none`; slot of n is n mod capacity.
    private var arrivals: [Int64]
    private let capacity: Int64
    /// Extended sequence numbers held: begin..<end (empty when equal).
    private var begin: Int64 = 0
    private var end: Int64 = 0
    /// First sequence number the next feedback reports.
    private var windowStart: Int64?
    private var unwrapper = SequenceNumberUnwrapper()
    /// Time zero for the µs values: the first arrival. Only differences reach the sender.
    private var epoch: Instant?
    private var scheduled: Instant?
    private var feedbackCount: UInt8 = 0

    private static let none = Int64.min
    private static let tickMicros: Int64 = 250
    private static let referenceMicros: Int64 = 64_000

    public init(senderSSRC: UInt32 = 0, mediaSSRC: UInt32 = 0, configuration: Configuration = Configuration()) {
        self.configuration = configuration
        self.senderSSRC = senderSSRC
        self.mediaSSRC = mediaSSRC
        capacity = Int64(min(max(configuration.maxTrackedPackets, 16), 32_768))
        arrivals = [Int64](repeating: Self.none, count: Int(capacity))
    }

    /// Sequence numbers currently held (at most `maxTrackedPackets`).
    public var trackedPackets: Int { Int(end - begin) }

    /// When `poll` next has feedback to give; nil when nothing arrived since the last one.
    public var nextDeadline: Instant? {
        guard let start = windowStart, max(start, begin) < end else { return nil }
        return scheduled
    }

    // MARK: Input

    /// Notes one packet carrying the transport-cc extension.
    public mutating func record(transportSequence: UInt16, at arrival: Instant) {
        let t = micros(arrival)
        let n = unwrapper.peek(transportSequence)
        if scheduled == nil { scheduled = arrival + configuration.interval }
        if begin == end {
            begin = n
            end = n + 1
        } else if n >= end {
            makeRoom(upTo: n)
            end = n + 1
        } else if n < begin {
            guard end - n <= capacity else {
                statistics.tooOld += 1
                return
            }
            begin = n   // the slots below the old begin are empty: the ring keeps them cleared
        } else if arrivals[slot(n)] != Self.none {
            statistics.duplicates += 1
            return
        }
        // Keep the unwrapper on the newest number so stray old ones cannot drag it back.
        if n + 1 == end { _ = unwrapper.unwrap(transportSequence) }
        arrivals[slot(n)] = t
        statistics.packetsRecorded += 1
        windowStart = min(windowStart ?? n, n)
        // Clamped to ~12 days (the reference time's wrap), so the subtraction cannot overflow.
        dropOld(before: n, olderThan: t - min(max(micros(configuration.history), 0), Self.referenceMicros << 24))
    }

    // MARK: Output

    /// The feedback due at `now` (empty before `nextDeadline` or when nothing new arrived):
    /// usually one message, more when deltas or sizes do not fit in one.
    public mutating func poll(at now: Instant) -> [TransportCCFeedback] {
        guard let due = scheduled, now >= due else { return [] }
        scheduled = now + configuration.interval
        var out: [TransportCCFeedback] = []
        while let start = windowStart, max(start, begin) < end, let fb = buildFeedback(from: max(start, begin)) {
            out.append(fb)
        }
        return out
    }

    /// One feedback from `start` (its base, even if lost) up to where a delta or the size stops
    /// fitting; moves `windowStart` past what it covers. Trailing losses wait: they may be in flight.
    private mutating func buildFeedback(from start: Int64) -> TransportCCFeedback? {
        var first = start
        while first < end && arrivals[slot(first)] == Self.none { first += 1 }
        guard first < end else {
            windowStart = end
            return nil
        }
        let referenceUnits = floorDiv(arrivals[slot(first)], Self.referenceMicros)
        var last = referenceUnits * Self.referenceMicros
        var deltas: [Int?] = []
        var size = FeedbackSizeBound()
        var next = start
        var j = first
        while j < end {
            let t = arrivals[slot(j)]
            guard t != Self.none else { j += 1; continue }
            let ticks = roundDiv(t - last, Self.tickMicros)
            guard let delta = Int16(exactly: ticks) else { break }
            let losses = Int(j - next)
            var candidate = size
            candidate.add(losses: losses, delta: Int(delta))
            if !deltas.isEmpty, candidate.bytes > configuration.maxFeedbackSize || deltas.count + losses + 1 > 0xFFFF { break }
            size = candidate
            deltas.append(contentsOf: repeatElement(nil, count: losses))
            deltas.append(Int(delta))
            last += ticks * Self.tickMicros   // the rounded value, so rounding errors do not add up
            next = j + 1
            j += 1
        }
        windowStart = next
        statistics.feedbacksBuilt += 1
        let count = feedbackCount
        feedbackCount &+= 1
        return TransportCCFeedback(senderSSRC: senderSSRC, mediaSSRC: mediaSSRC,
                                   baseSequence: UInt16(truncatingIfNeeded: start), feedbackPacketCount: count,
                                   referenceTime: UInt32(truncatingIfNeeded: referenceUnits) & 0xFF_FFFF,
                                   receivedDeltas: deltas)
    }

    // MARK: Ring

    private func slot(_ n: Int64) -> Int {
        let r = n % capacity
        return Int(r < 0 ? r + capacity : r)
    }

    /// Advances `begin` so `n` fits in the ring, clearing what it passes. As libwebrtc, the ring
    /// then starts at a received packet: a jump past everything starts afresh at `n`, rather
    /// than reporting a ring full of losses.
    private mutating func makeRoom(upTo n: Int64) {
        let newBegin = n - capacity + 1
        guard newBegin > begin else { return }
        let clearTo = min(newBegin, end)
        var k = begin
        while k < clearTo { arrivals[slot(k)] = Self.none; k += 1 }
        begin = newBegin < end ? newBegin : n
        while begin < end && arrivals[slot(begin)] == Self.none { begin += 1 }
        if begin >= end { begin = n }
        if windowStart.map({ $0 < begin }) ?? false { windowStart = begin }
    }

    /// Forgets arrivals at the front older than `limit` (and the gaps among them), never `n` itself.
    private mutating func dropOld(before n: Int64, olderThan limit: Int64) {
        let stop = min(n, end)
        while begin < stop && arrivals[slot(begin)] <= limit {
            arrivals[slot(begin)] = Self.none
            begin += 1
        }
    }

    // MARK: Time

    private mutating func micros(_ t: Instant) -> Int64 {
        guard let e = epoch else {
            epoch = t
            return 0
        }
        return micros(t - e)
    }

    /// Saturates instead of trapping on durations beyond ±292,000 years.
    private func micros(_ d: Duration) -> Int64 {
        let c = d.components
        let (whole, overflow) = c.seconds.multipliedReportingOverflow(by: 1_000_000)
        if overflow { return c.seconds < 0 ? Int64.min / 2 : Int64.max / 2 }
        return whole + c.attoseconds / 1_000_000_000_000
    }

    private func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? a / b : -((-a + b - 1) / b)
    }

    /// Nearest integer, halves away from zero (as libwebrtc rounds deltas).
    private func roundDiv(_ a: Int64, _ b: Int64) -> Int64 {
        a >= 0 ? (a + b / 2) / b : -((-a + b / 2) / b)
    }
}

/// An upper bound on a feedback's wire size while statuses are added. Greedy chunking starts a
/// chunk at least every 7 statuses, and inside a run of equal statuses at most one per 8191 plus
/// one, so chunks ≤ ⌈statuses/7⌉ over mixed stretches + (⌈run/8191⌉ + 1) per long loss run.
struct FeedbackSizeBound {
    /// RTCP header 4, SSRCs 8, base and count 4, reference time and feedback count 4, padding ≤ 3.
    private var deltaBytes = 0
    private var closedChunks = 0
    private var openStatuses = 0

    var bytes: Int { 23 + deltaBytes + 2 * (closedChunks + (openStatuses + 6) / 7) }

    mutating func add(losses: Int, delta: Int) {
        if losses >= 14 {
            closedChunks += (openStatuses + 6) / 7 + (losses + 8190) / 8191 + 1
            openStatuses = 0
        } else {
            openStatuses += losses
        }
        openStatuses += 1
        deltaBytes += (0...255).contains(delta) ? 1 : 2
    }
}
