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

    struct Aggregate: Sendable {
        var cluster: ProbeCluster
        var created: ContinuousClock.Instant
        var firstSend: ContinuousClock.Instant?
        var lastSend: ContinuousClock.Instant?
        var firstArrival: Int64 = .max
        var lastArrival: Int64 = .min
        var totalBytes = 0
        var packets = 0
    }

    private var clusters: [Int: Aggregate] = [:]
    private var latest: Double?

    /// Registers a cluster the controller asked for; results for unknown ids are ignored.
    mutating func register(_ cluster: ProbeCluster, at now: ContinuousClock.Instant) {
        clusters = clusters.filter { now - $0.value.created <= Self.clusterHistory }
        clusters[cluster.id] = Aggregate(cluster: cluster, created: now)
    }

    mutating func onPacketResult(_ packet: PacketResult) {
        guard let id = packet.probeClusterID, let arrival = packet.arrivalMicroseconds,
              var a = clusters[id] else { return }
        if a.firstSend.map({ packet.sendTime < $0 }) ?? true { a.firstSend = packet.sendTime }
        if a.lastSend.map({ packet.sendTime >= $0 }) ?? true { a.lastSend = packet.sendTime }
        a.firstArrival = min(a.firstArrival, arrival)
        a.lastArrival = max(a.lastArrival, arrival)
        a.totalBytes += packet.size
        a.packets += 1
        clusters[id] = a
        if let rate = Self.estimate(a) { latest = rate }
    }

    /// The latest valid probe result (bps), once.
    mutating func takeEstimate() -> Double? {
        defer { latest = nil }
        return latest
    }

    static func estimate(_ a: Aggregate) -> Double? {
        guard a.packets >= 2, Double(a.packets) >= minReceivedRatio * Double(a.cluster.minPackets),
              Double(a.totalBytes) >= minReceivedRatio * Double(a.cluster.minBytes),
              let firstSend = a.firstSend, let lastSend = a.lastSend else { return nil }
        let sendInterval = (lastSend - firstSend).inSeconds
        let receiveInterval = Double(a.lastArrival - a.firstArrival) / 1e6
        let limit = maxInterval.inSeconds
        guard sendInterval > 0, sendInterval <= limit, receiveInterval > 0, receiveInterval <= limit else { return nil }
        // One packet's worth only marks the interval's start. libwebrtc drops the last sent and the
        // first received packet; with a big media packet and small padding in one cluster that
        // skews the two rates apart, so both use the same bytes and differ only by their spans.
        let bytes = Double(a.totalBytes) * Double(a.packets - 1) / Double(a.packets)
        let sendRate = bytes * 8 / sendInterval
        let receiveRate = bytes * 8 / receiveInterval
        guard receiveRate <= maxReceiveToSendRatio * sendRate else { return nil }
        if receiveRate < saturatedRatio * sendRate { return targetUtilization * receiveRate }
        return min(sendRate, receiveRate)
    }
}
