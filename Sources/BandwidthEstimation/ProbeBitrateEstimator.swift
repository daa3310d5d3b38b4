/// Measures what a probe cluster got through (libwebrtc `ProbeBitrateEstimator`): the rate it
/// was sent at and the rate it arrived at. If it arrived clearly slower (< 90%), the path is
/// saturated and 95% of the receive rate is its capacity; otherwise the lower of the two.
struct ProbeBitrateEstimator: Sendable {
    static let minReceivedRatio = 0.8
    static let maxReceiveToSendRatio = 2.0
    static let saturatedRatio = 0.9
    static let targetUtilization = 0.95
    static let maxInterval = Duration.seconds(1)
    /// Clusters not heard of for this long are forgotten.
    static let clusterHistory = Duration.seconds(1)
    /// A packet with this much more one-way delay (µs) than a later one, that arrived within
    /// `batchSpacing` of the next (transport-cc's resolution), was held on the way.
    static let heldTolerance: Int64 = 2_000
    static let batchSpacing: Int64 = 250

    struct Aggregate: Sendable {
        var cluster: ProbeCluster
        var created: Moment
        /// The received packets: send time, arrival (µs, remote clock), size.
        var packets: [(sent: Moment, arrival: Int64, size: Int)] = []
        var totalBytes = 0
    }

    private var clusters: [Int: Aggregate] = [:]
    private var latest: Double?

    /// Registers a cluster the controller asked for; results for unknown ids are ignored.
    mutating func register(_ cluster: ProbeCluster, at now: Moment) {
        clusters = clusters.filter { now - $0.value.created <= Self.clusterHistory }
        clusters[cluster.id] = Aggregate(cluster: cluster, created: now)
    }

    mutating func onPacketResult(_ packet: PacketResult) {
        guard let id = packet.probeClusterID, let arrival = packet.arrivalMicroseconds,
              var a = clusters[id] else { return }
        a.packets.append((packet.sendTime, arrival, packet.size))
        a.totalBytes += packet.size
        clusters[id] = a
        if let rate = Self.estimate(a) { latest = rate }
    }

    /// The latest valid probe result (bps), once.
    mutating func takeEstimate() -> Double? {
        defer { latest = nil }
        return latest
    }

    static func estimate(_ a: Aggregate) -> Double? {
        let n = a.packets.count
        guard n >= 2, Double(n) >= minReceivedRatio * Double(a.cluster.minPackets),
              Double(a.totalBytes) >= minReceivedRatio * Double(a.cluster.minBytes) else { return nil }
        let bySend = a.packets.sorted { $0.sent < $1.sent }
        let start = measuredFrom(bySend)
        guard start < n - 1 else { return nil }
        let measured = bySend[start...]
        let sendInterval = (bySend[n - 1].sent - bySend[start].sent).inSeconds
        let arrivals = measured.map(\.arrival)
        let receiveInterval = Double(arrivals.max()! - arrivals.min()!) / 1e6
        let limit = maxInterval.inSeconds
        guard sendInterval > 0, sendInterval <= limit, receiveInterval > 0, receiveInterval <= limit else { return nil }
        // The first packet only marks the spans' start (libwebrtc drops the last sent and the first
        // received one; with a big media packet and small padding in one cluster that skews the
        // two rates apart), so both rates carry the same bytes and differ only by their spans.
        let bytes = Double(measured.dropFirst().reduce(0) { $0 + $1.size })
        let sendRate = bytes * 8 / sendInterval
        let receiveRate = bytes * 8 / receiveInterval
        guard receiveRate <= maxReceiveToSendRatio * sendRate else { return nil }
        if receiveRate < saturatedRatio * sendRate { return targetUtilization * receiveRate }
        return min(sendRate, receiveRate)
    }

    /// Where the measured part starts (index in send order): after the last batch of packets that
    /// were held on the way. A late-running emulator or receiver releases or stamps what waited at
    /// once: packets sent over 20 ms arrive within a tick, with more one-way delay than the ones
    /// after them, and a span from the first is too short. (A FIFO also lowers the delay when it
    /// drains, but it spaces its packets by their serialization.) Probing 900 kbit/s into
    /// 500 kbit/s that way measured 850 kbit/s (CI: 4% of the publisher's packets dropped at the FIFO). When only the last
    /// packet is left nothing about the link is known: no result (a spoiled start probe is repeated).
    static func measuredFrom(_ bySend: [(sent: Moment, arrival: Int64, size: Int)]) -> Int {
        let first = bySend[0].sent
        let delays = bySend.map { $0.arrival - Int64((($0.sent - first).inSeconds * 1e6).rounded()) }
        var leastAfter = Int64.max
        for i in stride(from: delays.count - 2, through: 0, by: -1) {
            leastAfter = min(leastAfter, delays[i + 1])
            guard delays[i] - leastAfter > heldTolerance, releasedTogether(bySend[i].arrival, bySend[i + 1].arrival) else { continue }
            // The rest of its batch is no better (a delay may just hide under the queue's growth).
            var end = i
            while end + 1 < bySend.count, releasedTogether(bySend[end].arrival, bySend[end + 1].arrival) { end += 1 }
            return end + 1
        }
        return 0
    }

    /// The packet sent next arrived with this one, not before it: a packet that overtook an
    /// earlier one (jitter that reorders) was not held with it.
    private static func releasedTogether(_ arrival: Int64, _ nextArrival: Int64) -> Bool {
        (0...batchSpacing).contains(nextArrival - arrival)
    }
}
