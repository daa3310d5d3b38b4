import RTP

/// The packets sent with a transport-wide sequence number, kept until feedback reports them
/// (or they age out), and the matching of `TransportCCFeedback` against them.
///
/// Feedback comes from the network, so nothing in it is trusted: sequence numbers never sent,
/// reported twice or long pruned are skipped, and receive deltas are clamped to what the wire
/// format can carry (±32768 ticks) before they are summed.
public struct SendHistory: Sendable {
    enum State: UInt8, Sendable { case gap, unreported, lost, received }

    /// 24 bytes (was 48 with `Int` and `Int?`): a relay keeps one history per player and
    /// writes one entry per forwarded packet, so its size is cache misses.
    struct Entry: Sendable {
        var sendTime: Moment
        /// Clamped to what one datagram can be.
        private var packedSize: UInt16
        var state: State
        /// -1: not a probe.
        private var packedCluster: Int32

        init(size: Int, sendTime: Moment, probeClusterID: Int?, state: State) {
            self.sendTime = sendTime
            packedSize = UInt16(clamping: size)
            self.state = state
            packedCluster = probeClusterID.map { Int32(clamping: $0) } ?? -1
        }

        var size: Int { Int(packedSize) }
        var probeClusterID: Int? { packedCluster < 0 ? nil : Int(packedCluster) }
    }

    /// Entries older than this are dropped: feedback normally comes within a few hundred ms,
    /// and delay information seconds old no longer describes the queue.
    public let maxAge: Duration
    /// At most this many entries; more than half the 16-bit space could not be told apart anyway.
    public let capacity: Int

    private var sequenceUnwrapper = SequenceNumberUnwrapper()
    private var lastReference: Int64?
    /// Entries from `head` on; `entries[head]` has sequence `firstSequence`.
    private var entries: [Entry] = []
    private var head = 0
    private var firstSequence: Int64 = 0

    public init(maxAge: Duration = .seconds(10), capacity: Int = 1 << 15) {
        self.maxAge = maxAge
        self.capacity = max(1, min(capacity, 1 << 15))
    }

    /// Packets currently remembered (including gaps left by skipped sequence numbers).
    public var count: Int { entries.count - head }

    /// Addresses the next `onPacketSent` touches, for a caller that sends to many histories in
    /// turn (a relay's fan-out) and prefetches the next one's while it works on this one: the
    /// entries' storage header (count, capacity: the 32 bytes before the first element on a
    /// 64-bit Swift array) and the slot after the last. Hints only, never dereferenced: stale
    /// after the storage grows or is compacted, and a prefetch of a stale address is harmless.
    public var prefetchAddresses: (header: UnsafeRawPointer?, tail: UnsafeRawPointer?) {
        entries.withUnsafeBufferPointer { buffer in
            guard let base = buffer.baseAddress else { return (nil, nil) }
            return (UnsafeRawPointer(base) - 32, UnsafeRawPointer(base + buffer.count))
        }
    }

    public mutating func onPacketSent(transportSequence: UInt16, size: Int, at now: Moment,
                                      probeClusterID: Int? = nil) {
        let sequence = sequenceUnwrapper.unwrap(transportSequence)
        let entry = Entry(size: max(0, size), sendTime: now, probeClusterID: probeClusterID, state: .unreported)
        let next = firstSequence + Int64(count)
        if count == 0 || sequence - next > Int64(capacity) || sequence < firstSequence - Int64(capacity) {
            // First packet, or a jump no gap filling could bridge: start over.
            entries.removeAll(keepingCapacity: true)
            head = 0
            firstSequence = sequence
            entries.append(entry)
        } else if sequence >= next {
            // Sequence numbers the sender skipped stay as gaps nobody can acknowledge.
            for _ in 0..<(sequence - next) {
                entries.append(Entry(size: 0, sendTime: now, probeClusterID: nil, state: .gap))
            }
            entries.append(entry)
        } else if sequence >= firstSequence {
            entries[head + Int(sequence - firstSequence)] = entry
        }
        // The age check reads the oldest entry, a cold cache line once per player per
        // forwarded packet in a relay: every 64th packet (and at each feedback) is enough.
        if count > capacity || sequence & 63 == 0 { prune(now: now) }
    }

    /// Matches feedback against the history: one result per packet the feedback newly reports,
    /// in sequence order. A packet reported lost and later received yields a second, received
    /// result; one reported received is never reported again.
    public mutating func onFeedback(_ feedback: TransportCCFeedback) -> [PacketResult] {
        if let newest = entries.last { prune(now: newest.sendTime) }
        // Past half the sequence space statuses would alias earlier ones.
        let statuses = feedback.packets.prefix(0x7FFF)
        let base = sequenceUnwrapper.peek(feedback.baseSequence)
        var arrival = unwrapReference(feedback.referenceTime) * 64_000
        var results: [PacketResult] = []
        results.reserveCapacity(statuses.count)
        for (offset, status) in statuses.enumerated() {
            var received: Int64?
            if let delta = status.receivedDelta {
                arrival += Int64(min(max(delta, -32768), 32767)) * 250
                received = arrival
            }
            let sequence = base + Int64(offset)
            guard sequence >= firstSequence, sequence < firstSequence + Int64(count) else { continue }
            let index = head + Int(sequence - firstSequence)
            let entry = entries[index]
            switch (entry.state, received) {
            case (.gap, _), (.received, _), (.lost, nil):
                continue
            case (_, nil):
                entries[index].state = .lost
            case (_, .some):
                entries[index].state = .received
            }
            results.append(PacketResult(transportSequence: sequence, size: entry.size, sendTime: entry.sendTime,
                                        arrivalMicroseconds: received, probeClusterID: entry.probeClusterID))
        }
        return results
    }

    /// The 24-bit reference time (64 ms units) extended the same way as sequence numbers.
    private mutating func unwrapReference(_ raw: UInt32) -> Int64 {
        let value = Int64(raw & 0xFF_FFFF)
        guard let last = lastReference else {
            lastReference = value
            return value
        }
        var delta = (value - (last & 0xFF_FFFF)) & 0xFF_FFFF
        if delta >= 0x80_0000 { delta -= 0x100_0000 }
        lastReference = last + delta
        return last + delta
    }

    private mutating func prune(now: Moment) {
        while count > capacity || (count > 0 && now - entries[head].sendTime > maxAge) {
            head += 1
            firstSequence += 1
        }
        // Compact now and then so the array does not grow without bound.
        if head >= 1024 && head * 2 >= entries.count {
            entries.removeFirst(head)
            head = 0
        }
    }
}
