import RTP

/// The receiver's generic-NACK logic (RFC 4585 §6.2.1), sans-I/O, shared by the video jitter
/// buffer and the relay (which forwards without one): sequence numbers in, the ones to ask for
/// out. A gap is asked for at once (or after `delay`), again every RTT + slack while unanswered,
/// at most `maxRetries` times and while younger than `maxAge`, as libwebrtc's NackRequester does.
/// Gaps too wide to be worth asking for mean "give up, ask for a keyframe", and so does a gap of
/// `outageGap` or more that opens after the stream was silent for `maxAge`: the sender kept
/// sending while nothing came (an outage, not a pause, which leaves no gap; nor a slow stream
/// that lost the start of its next frame), and what went missing is too old to ask for.
///
/// Feed it either 16-bit sequence numbers (`received(_:at:)`, unwrapped here) or numbers the
/// caller already extended (`received(extended:at:)`), not both.
public struct NackGenerator: Sendable {
    public typealias Instant = ContinuousClock.Instant

    public struct Configuration: Sendable, Equatable {
        public var maxRetries: Int = 10
        /// A missing packet is not asked for once it has been missing this long.
        public var maxAge: Duration = .seconds(1)
        /// How long a gap must exist before the first NACK (0 = at once, as libwebrtc does);
        /// a few ms avoids asking for packets that are merely reordered.
        public var delay: Duration = .zero
        /// Added to the RTT before asking again for the same packet.
        public var slack: Duration = .milliseconds(20)
        /// A single gap wider than this is not NACKed: the list is cleared and a keyframe needed.
        public var maxGap: Int = 1000
        /// Missing packets tracked at most (bounds memory whatever the sender does); going over
        /// it clears the list and needs a keyframe too.
        public var maxListSize: Int = 1000
        /// A gap at least this wide after `maxAge` of silence is an outage's: a keyframe is needed.
        public var outageGap: Int = 10

        public init() {}
    }

    public struct Statistics: Sendable, Equatable {
        /// NACK messages `poll` produced (non-empty results).
        public var nacksSent = 0
        /// Sequence numbers in them (one asked for twice counts twice).
        public var nackedSequences = 0
        /// Arrivals of sequence numbers we had NACKed.
        public var retransmissionsReceived = 0
        /// Times a gap or the list was too large and the generator gave up.
        public var keyframesNeeded = 0
    }

    public enum Reception: Sendable, Equatable {
        /// The newest packet so far; any gap before it is now tracked.
        case newest
        /// Filled a tracked gap; `requested` when we had NACKed it (a retransmission).
        case recovered(requested: Bool)
        /// A duplicate, or older than anything tracked.
        case ignored
        /// The newest, but after too wide a gap: nothing is tracked, ask for a keyframe.
        case keyframeNeeded
    }

    struct Entry: Sendable {
        var sequence: Int64
        var created: Instant
        var lastSent: Instant?
        var retries = 0
    }

    public let configuration: Configuration
    /// Current round-trip estimate (from RTCP); spaces the retries.
    public var rtt: Duration
    /// How long a first request took to be answered (smoothed 1/8 per answer, as TCP's SRTT):
    /// the round trip as the retransmissions see it, for a receiver that has no other (an
    /// ICE-lite relay sends no checks and gets no report on its reports).
    public private(set) var turnaround: Duration?
    public private(set) var statistics = Statistics()
    /// Highest (extended) sequence number received, and when it arrived.
    public private(set) var highestReceived: Int64?
    private var highestArrival: Instant?
    /// Missing packets, ascending: gaps only open above the highest, so appending keeps order.
    private var entries: [Entry] = []
    private var unwrapper = SequenceNumberUnwrapper()

    public init(configuration: Configuration = Configuration(), rtt: Duration = .milliseconds(100)) {
        self.configuration = configuration
        self.rtt = rtt
    }

    /// Sequence numbers currently missing and tracked.
    public var missingCount: Int { entries.count }

    private var retryInterval: Duration { rtt + configuration.slack }

    // MARK: Input

    /// A packet arrived (first time, late, or a retransmission).
    @discardableResult
    public mutating func received(_ sequence: UInt16, at now: Instant) -> Reception {
        let result = received(extended: unwrapper.peek(sequence), at: now)
        // Keep the unwrapper on the highest packet, so stray old numbers cannot drag it back.
        if result == .newest || result == .keyframeNeeded { _ = unwrapper.unwrap(sequence) }
        return result
    }

    @discardableResult
    public mutating func received(extended n: Int64, at now: Instant) -> Reception {
        guard let h = highestReceived else {
            highestReceived = n
            highestArrival = now
            return .newest
        }
        if n > h {
            let silent = highestArrival.map { now - $0 >= configuration.maxAge } ?? false
            highestReceived = n
            highestArrival = now
            let gap = n - h - 1
            guard gap > 0 else { return .newest }
            let outage = silent && gap >= Int64(configuration.outageGap)
            // After an outage (3 s of Chromium's packets lost, say) NACKs cannot bring back the
            // start of the gap, and a jitter buffer waiting them out froze 0.6 s longer.
            if outage || gap > Int64(configuration.maxGap) || Int64(entries.count) + gap > Int64(configuration.maxListSize) {
                entries.removeAll(keepingCapacity: true)
                statistics.keyframesNeeded += 1
                return .keyframeNeeded
            }
            for m in (h + 1)..<n { entries.append(Entry(sequence: m, created: now)) }
            return .newest
        }
        guard let i = index(of: n) else { return .ignored }
        let entry = entries.remove(at: i)
        let requested = entry.lastSent != nil
        if requested { statistics.retransmissionsReceived += 1 }
        if entry.retries == 1, let sent = entry.lastSent {
            // Only a first request's answer is unambiguous.
            turnaround = turnaround.map { $0 * 0.875 + (now - sent) * 0.125 } ?? (now - sent)
        }
        return .recovered(requested: requested)
    }

    /// Stops asking for everything below `n` (e.g. the caller skipped to a keyframe there).
    public mutating func forget(below n: Int64) {
        let k = lowerBound(n)
        if k > 0 { entries.removeFirst(k) }
    }

    /// A new stream: forgets the sequence space and the list; statistics and RTT stay.
    public mutating func reset() {
        entries.removeAll(keepingCapacity: true)
        highestReceived = nil
        highestArrival = nil
        unwrapper = SequenceNumberUnwrapper()
    }

    // MARK: Queries

    public func isMissing(extended n: Int64) -> Bool { index(of: n) != nil }

    /// Whether `n` is missing and was NACKed at least once (its arrival is a retransmission).
    public func wasRequested(extended n: Int64) -> Bool {
        index(of: n).map { entries[$0].lastSent != nil } ?? false
    }

    public func wasRequested(_ sequence: UInt16) -> Bool { wasRequested(extended: unwrapper.peek(sequence)) }

    // MARK: Output

    /// Sequence numbers to NACK now, ascending (empty when none): gaps older than `delay` not
    /// asked for yet, and earlier requests unanswered for RTT + slack. Drops the ones past
    /// `maxRetries` or `maxAge`.
    public mutating func poll(at now: Instant) -> [UInt16] {
        let maxAge = configuration.maxAge, maxRetries = configuration.maxRetries
        entries.removeAll { now - $0.created >= maxAge || $0.retries >= maxRetries }
        var due: [UInt16] = []
        for i in entries.indices {
            if let last = entries[i].lastSent {
                if now - last < retryInterval { continue }
            } else if now - entries[i].created < configuration.delay {
                continue
            }
            entries[i].lastSent = now
            entries[i].retries += 1
            due.append(UInt16(truncatingIfNeeded: entries[i].sequence))
        }
        if !due.isEmpty {
            statistics.nacksSent += 1
            statistics.nackedSequences += due.count
        }
        return due
    }

    /// When `poll` next has something to send (nil: nothing pending).
    public func nextDeadline() -> Instant? {
        var best: Instant?
        for e in entries where e.retries < configuration.maxRetries {
            let t: Instant
            if let last = e.lastSent {
                t = last + retryInterval
                guard t < e.created + configuration.maxAge else { continue }
            } else {
                t = e.created + configuration.delay
            }
            if best.map({ t < $0 }) ?? true { best = t }
        }
        return best
    }

    // MARK: Search

    /// First position whose sequence is ≥ n.
    private func lowerBound(_ n: Int64) -> Int {
        var lo = 0, hi = entries.count
        while lo < hi {
            let mid = (lo + hi) / 2
            if entries[mid].sequence < n { lo = mid + 1 } else { hi = mid }
        }
        return lo
    }

    private func index(of n: Int64) -> Int? {
        let i = lowerBound(n)
        return i < entries.count && entries[i].sequence == n ? i : nil
    }
}
