/// Sans-I/O pacer: spreads packets out at `pacingFactor` × the target bitrate instead of
/// sending each encoded frame as one burst that would fill the bottleneck queue and read as
/// congestion (libwebrtc `PacingController`).
///
/// - Budget: a token bucket filled at the pacing rate, holding at most `maxBurst` worth of
///   bytes; a packet may leave while the bucket is not in debt, so the most that leaves at one
///   instant is `maxBurst` worth plus one packet.
/// - Priority: audio > retransmission > video > padding, FIFO within a kind. Audio skips the
///   budget altogether (as libwebrtc does unless audio pacing is on) but its bytes still count.
/// - Latency bound: if the queue would not drain before its oldest packet has waited
///   `maxQueueDelay`, the rate rises to what drains it in the time left. This trades bursts for
///   bounded delay: 2 s of queue is already more than interactive video can use.
/// - Probes: while a cluster is active every packet leaves on the cluster's schedule, tagged
///   with its id; with nothing queued, `paddingWanted(at:)` asks the caller for padding.
///   Padding is only ever sent for a probe: leftovers are discarded when none is active.
///
/// Drive it: after each `enqueue` and at `nextSendTime(after:)`, call `poll(at:)` until it
/// returns nil, then if `paddingWanted(at:)` asks for padding enqueue that much and poll again.
public struct Pacer: Sendable {
    public struct Configuration: Sendable, Equatable {
        public var pacingFactor: Double
        public var maxBurst: Duration
        public var maxQueueDelay: Duration
        public var initialTargetBitrate: Int
        public var paceAudio: Bool
        /// A probe cluster not completed this long after it became active is abandoned.
        public var probeTimeout: Duration

        public init(pacingFactor: Double = 2.5, maxBurst: Duration = .milliseconds(5),
                    maxQueueDelay: Duration = .seconds(2), initialTargetBitrate: Int = 300_000,
                    paceAudio: Bool = false, probeTimeout: Duration = .milliseconds(500)) {
            self.pacingFactor = pacingFactor
            self.maxBurst = maxBurst
            self.maxQueueDelay = maxQueueDelay
            self.initialTargetBitrate = initialTargetBitrate
            self.paceAudio = paceAudio
            self.probeTimeout = probeTimeout
        }
    }

    struct ActiveProbe: Sendable {
        var cluster: ProbeCluster
        var activated: Moment
        var started: Moment?
        var sentBytes = 0
        var sentPackets = 0

        var isComplete: Bool { sentBytes >= cluster.minBytes && sentPackets >= cluster.minPackets }

        /// When the next probe packet is due to keep the cluster at its bitrate.
        var due: Moment {
            guard let started else { return activated }
            return started + .secondsClamped(Double(sentBytes) * 8 / Double(cluster.bitrate))
        }
    }

    /// Never pace slower than this, whatever the target says: a zero rate would stall forever.
    static let minimumPacingBitrate = 10_000.0
    static let maxWaitingProbes = 8

    public let configuration: Configuration
    public private(set) var targetBitrate: Int
    public private(set) var queuedBytes = 0
    private var queues = [PacketFIFO](repeating: PacketFIFO(), count: PacedPacket.Kind.allCases.count)
    private var bytesPerKind = [Int](repeating: 0, count: PacedPacket.Kind.allCases.count)
    /// Bytes the bucket holds; negative is debt.
    private var tokens = 0.0
    private var lastRefill: Moment?
    private var probe: ActiveProbe?
    private var waitingProbes: [ProbeCluster] = []

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        targetBitrate = max(0, configuration.initialTargetBitrate)
    }

    // MARK: Inputs

    public mutating func setTargetBitrate(_ bitrate: Int) { targetBitrate = max(0, bitrate) }

    public mutating func enqueue(_ packet: PacedPacket, at now: Moment) {
        refill(now)
        var packet = packet
        packet.probeClusterID = nil
        queues[packet.kind.rawValue].append(.init(packet: packet, enqueued: now))
        queuedBytes += packet.size
        bytesPerKind[packet.kind.rawValue] += packet.size
    }

    /// Queues a probe cluster; clusters run one after another.
    public mutating func startProbe(_ cluster: ProbeCluster, at now: Moment) {
        guard waitingProbes.count < Self.maxWaitingProbes else { return }
        waitingProbes.append(cluster)
        updateProbe(now)
    }

    /// The next packet allowed to leave now, if any.
    public mutating func poll(at now: Moment) -> PacedPacket? {
        refill(now)
        updateProbe(now)
        if !configuration.paceAudio, let item = pop(.audio) {
            tokens -= Double(item.packet.size)
            return item.packet
        }
        if var active = probe {
            // Media the budget allows may go ahead of the schedule (and counts towards the
            // cluster); padding only on it. A relay's player paces no media, so its budget is
            // always full: padding let out by it left 3-4 at one instant, and a cluster whose
            // send times are a few bursts measures nothing (simulated weak viewer, 10 ms of
            // jitter: 27 s instead of 4 s back on its layer).
            let due = now >= active.due
            guard due || tokens >= -Self.tolerance, var item = popHighest(includingPadding: due) else { return nil }
            if !due { tokens -= Double(item.packet.size) }
            active.started = active.started ?? now
            active.sentBytes += item.packet.size
            active.sentPackets += 1
            item.packet.probeClusterID = active.cluster.id
            probe = active
            updateProbe(now)
            return item.packet
        }
        discardPadding()
        guard tokens >= -Self.tolerance, let item = popHighest(includingPadding: false) else { return nil }
        tokens -= Double(item.packet.size)
        return item.packet
    }

    // MARK: Outputs

    /// When `poll` may next return a packet: `now` if it may already, nil if nothing is queued.
    public func nextSendTime(after now: Moment) -> Moment? {
        if !configuration.paceAudio && !queues[PacedPacket.Kind.audio.rawValue].isEmpty { return now }
        let hasMedia = PacedPacket.Kind.allCases.contains { $0 != .padding && !queues[$0.rawValue].isEmpty }
        var earliest: Moment?
        if let active = currentProbe(at: now) {
            let due = max(now, active.due)
            // With nothing queued, wake at the due time only to ask for padding.
            if hasMedia || !queues[PacedPacket.Kind.padding.rawValue].isEmpty || due > now { earliest = due }
        }
        guard hasMedia else { return earliest }
        let rate = pacingRate(at: now)
        let debt = -tokens(at: now, rate: rate)
        let budgetTime = debt <= Self.tolerance ? now : now + .secondsClamped(debt * 8 / rate) + .nanoseconds(1)
        return min(earliest ?? budgetTime, budgetTime)
    }

    /// The padding the active probe cluster needs now (nil if none): enqueue `.padding` packets
    /// of at least `bytes` in total (each counts toward its packet minimum), none larger than
    /// `largestPacket`.
    public func paddingWanted(at now: Moment) -> PaddingRequest? {
        guard let active = currentProbe(at: now), now >= active.due,
              queues.allSatisfy({ $0.isEmpty }) else { return nil }
        let bytes = max(active.cluster.minBytes - active.sentBytes, active.sentPackets < active.cluster.minPackets ? 1 : 0)
        return bytes > 0 ? PaddingRequest(bytes: bytes, largestPacket: active.cluster.largestPaddingPacket) : nil
    }

    /// Whether something is queued or the active probe wants padding now. Mutating only so
    /// that an owner holding the pacer in a class passes it in place: a non-mutating call from
    /// another module copied the whole pacer (its queues retained) on every feedback and tick.
    public mutating func hasWork(at now: Moment) -> Bool {
        queuedBytes > 0 || paddingWanted(at: now) != nil
    }

    public var queuedPackets: Int { queues.reduce(0) { $0 + $1.count } }

    /// How long the oldest queued packet has waited; nil when the queue is empty.
    public func oldestQueueDelay(now: Moment) -> Duration? {
        queues.compactMap { $0.first?.enqueued }.min().map { now - $0 }
    }

    /// Pacing rate from the target alone (bits per second).
    public var pacingBitrate: Int { Int(basePacingRate) }

    /// The rate in force now, raised above `pacingBitrate` when the queue must drain faster.
    public func effectivePacingBitrate(at now: Moment) -> Int { Int(pacingRate(at: now)) }

    /// How long the queue takes to leave at the current pacing rate.
    public var expectedQueueTime: Duration { .secondsClamped(Double(queuedBytes) * 8 / basePacingRate) }

    /// Whether a probe cluster is active or waiting.
    public var isProbing: Bool { probe != nil || !waitingProbes.isEmpty }

    // MARK: Internals

    /// Rounding slack so a timer fired at exactly `nextSendTime` finds the bucket out of debt.
    static let tolerance = 0.01

    private var basePacingRate: Double {
        max(Double(targetBitrate), Self.minimumPacingBitrate) * max(configuration.pacingFactor, 0.01)
    }

    /// Bytes the budget governs: everything but padding, and audio only when paced.
    private var budgetedKinds: [PacedPacket.Kind] {
        configuration.paceAudio ? [.audio, .retransmission, .video] : [.retransmission, .video]
    }

    private func pacingRate(at now: Moment) -> Double {
        var bytes = 0
        var oldest: Moment?
        for kind in budgetedKinds {
            let queue = queues[kind.rawValue]
            guard let first = queue.first else { continue }
            oldest = min(oldest ?? first.enqueued, first.enqueued)
            bytes += bytesQueued(kind)
        }
        guard let oldest, bytes > 0 else { return basePacingRate }
        let left = max((configuration.maxQueueDelay - (now - oldest)).inSeconds, 0.001)
        return max(basePacingRate, Double(bytes) * 8 / left)
    }

    private func bytesQueued(_ kind: PacedPacket.Kind) -> Int { bytesPerKind[kind.rawValue] }

    private func tokens(at now: Moment, rate: Double) -> Double {
        guard let last = lastRefill, now > last else { return tokens }
        let cap = rate * configuration.maxBurst.inSeconds / 8
        return min(cap, tokens + (now - last).inSeconds * rate / 8)
    }

    private mutating func refill(_ now: Moment) {
        let rate = pacingRate(at: now)
        tokens = tokens(at: now, rate: rate)
        if lastRefill.map({ now > $0 }) ?? true { lastRefill = now }
    }

    private mutating func pop(_ kind: PacedPacket.Kind) -> PacketFIFO.Item? {
        guard let item = queues[kind.rawValue].popFirst() else { return nil }
        queuedBytes -= item.packet.size
        bytesPerKind[kind.rawValue] -= item.packet.size
        return item
    }

    private mutating func popHighest(includingPadding: Bool) -> PacketFIFO.Item? {
        for kind in PacedPacket.Kind.allCases where includingPadding || kind != .padding {
            if let item = pop(kind) { return item }
        }
        return nil
    }

    private mutating func discardPadding() {
        while pop(.padding) != nil {}
    }

    /// The probe that is (or would now be) active, after completion and timeout.
    private func currentProbe(at now: Moment) -> ActiveProbe? {
        if let active = probe, !active.isComplete, now - active.activated <= configuration.probeTimeout {
            return active
        }
        return waitingProbes.first.map { ActiveProbe(cluster: $0, activated: now) }
    }

    private mutating func updateProbe(_ now: Moment) {
        if let active = probe, active.isComplete || now - active.activated > configuration.probeTimeout {
            probe = nil
        }
        if probe == nil, !waitingProbes.isEmpty {
            probe = ActiveProbe(cluster: waitingProbes.removeFirst(), activated: now)
        }
    }
}
