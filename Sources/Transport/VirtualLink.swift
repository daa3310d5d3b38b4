import SeededRandom

/// What a link does to the datagrams that cross it, in netem's order (interop/netem.py is the
/// same model on real sockets): loss → bottleneck (rate, bounded FIFO, tail drop) → delay ± jitter.
public struct LinkConditions: Sendable, Equatable {
    /// Fraction lost at random, 0...1.
    public var loss: Double
    public var delay: Duration
    /// Each datagram's delay is uniform in `delay ± jitter`, never below zero.
    public var jitter: Duration
    /// Whether a datagram given less delay may overtake one sent before it (netem's default);
    /// false: none leaves before the one ahead of it.
    public var reorder: Bool
    /// Bottleneck rate in bits per second; nil for none.
    public var rate: Int?
    /// The bottleneck's FIFO limit; what does not fit is dropped (tail drop).
    public var queue: QueueLimit

    public enum QueueLimit: Sendable, Equatable {
        /// That long at the current rate (netem.py's default: 200 ms).
        case time(Duration)
        case bytes(Int)
        case packets(Int)
    }

    public static let clean = LinkConditions()

    public init(loss: Double = 0, delay: Duration = .zero, jitter: Duration = .zero, reorder: Bool = true,
                rate: Int? = nil, queue: QueueLimit = .time(.milliseconds(200))) {
        self.loss = loss
        self.delay = delay
        self.jitter = jitter
        self.reorder = reorder
        self.rate = rate
        self.queue = queue
    }
}

/// What happened to the datagrams offered to a link.
public struct LinkCounters: Sendable, Equatable {
    public var offered = 0
    public var passed = 0
    public var bytesPassed = 0
    /// Random loss.
    public var lost = 0
    /// Tail drops at a full bottleneck FIFO.
    public var queueDrops = 0
    /// Dropped while the link was black-holed.
    public var blackHoled = 0
    /// The most bytes the FIFO has held.
    public var maxBacklog = 0

    public init() {}
}

/// One direction of an attachment's access link on a `VirtualNetwork`. Loop work only.
public final class VirtualLink {
    public let loop: EventLoop
    private var _conditions = LinkConditions.clean
    private var _counters = LinkCounters()
    private var random: SplitMix64
    private var blackHoledUntil: ContinuousClock.Instant?
    /// Datagrams in the bottleneck FIFO (the first is being serialised): when each has left it.
    private var fifo: [(departure: ContinuousClock.Instant, size: Int)] = []
    private var fifoHead = 0
    private var backlog = 0
    private var lastRelease: ContinuousClock.Instant?

    init(loop: EventLoop, seed: UInt64) {
        self.loop = loop
        random = SplitMix64(seed: seed)
    }

    public var conditions: LinkConditions {
        get { loop.preconditionInLoop(); return _conditions }
        set { loop.preconditionInLoop(); _conditions = newValue }
    }

    public var counters: LinkCounters {
        loop.preconditionInLoop()
        return _counters
    }

    /// Drops everything offered from now until `duration` has passed (an outage); datagrams
    /// already past the link still arrive.
    public func blackHole(for duration: Duration) {
        loop.preconditionInLoop()
        blackHoledUntil = loop.now + duration
    }

    /// Ends a black hole early.
    public func restore() {
        loop.preconditionInLoop()
        blackHoledUntil = nil
    }

    public var isBlackHoled: Bool {
        loop.preconditionInLoop()
        return blackHoledUntil.map { loop.now < $0 } ?? false
    }

    /// A datagram of `size` bytes offered at `now`: when it leaves the link, or nil if dropped.
    func pass(size: Int, at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        let c = _conditions
        _counters.offered += 1
        if let until = blackHoledUntil {
            if now < until {
                _counters.blackHoled += 1
                return nil
            }
            blackHoledUntil = nil
        }
        if c.loss > 0, random.chance(c.loss) {
            _counters.lost += 1
            return nil
        }
        var leaves = now
        if let rate = c.rate, rate > 0 {
            guard let departure = enqueue(size: size, rate: rate, limit: c.queue, at: now) else {
                _counters.queueDrops += 1
                return nil
            }
            leaves = departure
        }
        var delay = c.delay
        if c.jitter > .zero { delay = max(.zero, delay + c.jitter * (2 * random.unit() - 1)) }
        leaves += delay
        if !c.reorder, let last = lastRelease, leaves < last { leaves = last }
        lastRelease = max(lastRelease ?? leaves, leaves)
        _counters.passed += 1
        _counters.bytesPassed += size
        return leaves
    }

    /// Serialises a datagram behind the ones in the FIFO; nil when it does not fit.
    private func enqueue(size: Int, rate: Int, limit: LinkConditions.QueueLimit,
                         at now: ContinuousClock.Instant) -> ContinuousClock.Instant? {
        while fifoHead < fifo.count, fifo[fifoHead].departure <= now {
            backlog -= fifo[fifoHead].size
            fifoHead += 1
        }
        if fifoHead == fifo.count {
            fifo.removeAll(keepingCapacity: true)
            fifoHead = 0
        } else if fifoHead > 64, fifoHead * 2 > fifo.count {
            fifo.removeFirst(fifoHead)
            fifoHead = 0
        }
        let queued = fifo.count - fifoHead
        if queued > 0 {   // an empty FIFO takes any datagram, as netem's does
            let full: Bool
            switch limit {
            case .packets(let n): full = queued >= n
            case .bytes(let n): full = backlog + size > n
            case .time(let d):
                let (s, atto) = d.components
                full = Double(backlog + size) > Double(rate) / 8 * (Double(s) + Double(atto) / 1e18)
            }
            if full { return nil }
        }
        let start = queued > 0 ? fifo[fifo.count - 1].departure : now
        let departure = start + .nanoseconds(Int64(size) * 8_000_000_000 / Int64(rate))
        fifo.append((departure, size))
        backlog += size
        _counters.maxBacklog = max(_counters.maxBacklog, backlog)
        return departure
    }
}
