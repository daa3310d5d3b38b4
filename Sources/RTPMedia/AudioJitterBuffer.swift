import RTP

/// Receive side of one Opus SSRC: reorders packets by timestamp and hands out one slot per
/// frame duration (20 ms) on a playout clock that runs `targetDelay` behind the first arrival.
/// A slot without its packet comes out as lost, so the decoder conceals it (PLC, or FEC from
/// `nextPayload`). Adaptive: a packet that arrives after its slot was played raises the delay
/// by one frame (up to `maxDelay`) by inserting a concealed slot; when every packet of the last
/// `shrinkWindow` arrived more than two frames early the delay drops by one frame, never below
/// `minDelay`: two slots come out in one tick, the first marked `removeOneFrame`, and the
/// decoder drops the next quiet frame it decodes (no packet is thrown away here: a skipped slot
/// could be the one word or click that mattered).
public struct AudioJitterBuffer: Sendable {
    public typealias Instant = ContinuousClock.Instant

    public struct Configuration: Sendable {
        public var clockRate: Int = 48_000
        public var frameDuration: Duration = .milliseconds(20)
        public var targetDelay: Duration = .milliseconds(60)
        public var minDelay: Duration = .milliseconds(40)
        public var maxDelay: Duration = .milliseconds(300)
        public var adaptive = true
        public var shrinkWindow: Duration = .seconds(5)
        public var maxPackets = 100
        /// Timestamp jumps beyond this (either way) restart the playout clock.
        public var maxJump: Duration = .seconds(3)

        public init() {}
    }

    /// One playout slot.
    public struct Slot: Sendable, Equatable {
        /// RTP timestamp the slot stands for.
        public var timestamp: UInt32
        /// The packet for this slot; nil = lost, conceal.
        public var packet: RTPPacket?
        /// The next slot's payload if already here (Opus in-band FEC can rebuild a lost slot from it).
        public var nextPayload: [UInt8]?
        /// The playout delay just shrank by one frame: the decoder should drop one quiet frame,
        /// this one or a later one, to keep pace with the faster clock.
        public var removeOneFrame = false

        public var payload: [UInt8]? { packet?.payload }
        public var isLost: Bool { packet == nil }
    }

    public struct Statistics: Sendable, Equatable {
        public var packetsReceived = 0
        public var packetsDuplicated = 0
        /// Arrived after their slot was played.
        public var packetsLate = 0
        public var packetsDroppedOverflow = 0
        public var slotsPlayed = 0
        public var slotsConcealed = 0
        public var delayIncreases = 0
        public var delayDecreases = 0
        public var resets = 0
        public var targetDelay: Duration = .zero
    }

    public let configuration: Configuration
    public private(set) var targetDelay: Duration
    private var counters = Statistics()

    private var unwrapper = TimestampUnwrapper()
    private var buffer: [Int64: RTPPacket] = [:]
    /// Playout clock: slot `k` (counted from `startTick`) plays at `baseTime + k·frame`.
    private var baseTime: Instant?
    private var nextTick: Int64 = 0
    /// Timestamp of the next packet slot to play.
    private var nextTimestamp: Int64 = 0
    private var pendingStretch = 0
    private var pendingShrink = 0
    private var minEarliness: Duration?
    private var windowStart: Instant?

    public init(configuration: Configuration = Configuration()) {
        var configuration = configuration
        // A zero frame would make every slot due at once.
        if configuration.frameDuration < .milliseconds(1) { configuration.frameDuration = .milliseconds(20) }
        self.configuration = configuration
        self.targetDelay = configuration.targetDelay
    }

    public var statistics: Statistics {
        var s = counters
        s.targetDelay = targetDelay
        return s
    }

    private var samplesPerSlot: Int64 { max(configuration.frameDuration.rtpTicks(clockRate: configuration.clockRate), 1) }
    private var maxJumpTicks: Int64 { configuration.maxJump.rtpTicks(clockRate: configuration.clockRate) }

    private func tickTime(_ tick: Int64) -> Instant? {
        baseTime.map { $0 + configuration.frameDuration * tick }
    }

    @discardableResult
    public mutating func insert(_ packet: RTPPacket, arrival: Instant) -> Bool {
        counters.packetsReceived += 1
        var ts = unwrapper.unwrap(packet.timestamp)
        if baseTime == nil || abs(ts - nextTimestamp) > maxJumpTicks {
            if baseTime != nil {
                counters.resets += 1
                unwrapper = TimestampUnwrapper()
                ts = unwrapper.unwrap(packet.timestamp)
            }
            reset(first: ts, arrival: arrival)
        }
        if ts < nextTimestamp {
            counters.packetsLate += 1
            if configuration.adaptive, targetDelay + configuration.frameDuration <= configuration.maxDelay {
                targetDelay += configuration.frameDuration
                pendingStretch += 1
                counters.delayIncreases += 1
                minEarliness = nil
                windowStart = arrival
            }
            return false
        }
        if buffer[ts] != nil {
            counters.packetsDuplicated += 1
            return false
        }
        buffer[ts] = packet
        if buffer.count > configuration.maxPackets, let oldest = buffer.keys.min() {
            buffer[oldest] = nil
            counters.packetsDroppedOverflow += 1
        }
        trackEarliness(ts, arrival: arrival)
        return true
    }

    private mutating func reset(first ts: Int64, arrival: Instant) {
        buffer.removeAll()
        baseTime = arrival + targetDelay
        nextTick = 0
        nextTimestamp = ts
        pendingStretch = 0
        pendingShrink = 0
        minEarliness = nil
        windowStart = arrival
    }

    /// How early this packet came relative to its slot; a window of comfortable margins
    /// lets the delay shrink by a frame.
    private mutating func trackEarliness(_ ts: Int64, arrival: Instant) {
        guard configuration.adaptive, let play = tickTime(nextTick + Int64(pendingStretch) + (ts - nextTimestamp) / samplesPerSlot) else { return }
        let early = play - arrival
        minEarliness = min(minEarliness ?? early, early)
        guard let start = windowStart, arrival - start >= configuration.shrinkWindow, let margin = minEarliness else { return }
        if margin > configuration.frameDuration * 2, targetDelay - configuration.frameDuration >= configuration.minDelay {
            targetDelay -= configuration.frameDuration
            pendingShrink += 1
            counters.delayDecreases += 1
        }
        minEarliness = nil
        windowStart = arrival
    }

    /// The slot due at `now`, if one is (call until nil each time the audio device wants data).
    public mutating func pollFrame(now: Instant) -> Slot? {
        guard let due = tickTime(nextTick), now >= due else { return nil }
        nextTick += 1
        if pendingStretch > 0 {
            pendingStretch -= 1
            counters.slotsConcealed += 1
            return Slot(timestamp: UInt32(truncatingIfNeeded: nextTimestamp), packet: nil,
                        nextPayload: buffer[nextTimestamp]?.payload)
        }
        var removeOneFrame = false
        if pendingShrink > 0 {
            // The next slot is due in this same tick: one frame of delay is gone once the decoder
            // drops a quiet frame.
            pendingShrink -= 1
            nextTick -= 1
            removeOneFrame = true
        }
        let ts = nextTimestamp
        nextTimestamp += samplesPerSlot
        let packet = buffer.removeValue(forKey: ts)
        // Drop anything that fell between slots (odd packet durations).
        if buffer.count > 0 {
            for key in buffer.keys where key < nextTimestamp { buffer[key] = nil }
        }
        counters.slotsPlayed += 1
        if packet == nil { counters.slotsConcealed += 1 }
        return Slot(timestamp: UInt32(truncatingIfNeeded: ts), packet: packet, nextPayload: buffer[nextTimestamp]?.payload,
                    removeOneFrame: removeOneFrame)
    }

    /// When the next slot is due (nil before the first packet).
    public func nextDeadline() -> Instant? { tickTime(nextTick) }
}
