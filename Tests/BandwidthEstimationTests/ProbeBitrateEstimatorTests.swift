import Testing
@testable import BandwidthEstimation

/// One probe cluster's packets, fed straight in: what the estimator makes of their spans.
@Suite struct ProbeBitrateEstimatorTests {
    let t0 = Moment(.now)

    /// `packets`: (sent ms, arrival ms, bytes).
    func result(_ packets: [(Double, Double, Int)], bitrate: Int = 900_000) -> Double? {
        var e = ProbeBitrateEstimator()
        e.register(ProbeCluster(id: 1, bitrate: bitrate), at: t0)
        for (i, p) in packets.enumerated() {
            let sent: Moment = t0 + Duration.microseconds(Int64(p.0 * 1000))
            let arrival = Int64(p.1 * 1000) + 5_000_000
            e.onPacketResult(PacketResult(transportSequence: Int64(i), size: p.2, sendTime: sent,
                                          arrivalMicroseconds: arrival, probeClusterID: 1))
        }
        return e.takeEstimate()
    }

    /// 900 kbit/s (1200 bytes every 10.7 ms) into 500 kbit/s (19.2 ms each), 20 ms away.
    var throughTheLink: [(Double, Double, Int)] {
        (0..<6).map { i -> (Double, Double, Int) in
            let k = Double(i)
            return (k * 10.67, 20 + (k + 1) * 19.2, 1200)
        }
    }

    @Test func aSaturatedLinkReadsAsNinetyFivePercentOfItsRate() throws {
        let r = try #require(result(throughTheLink))
        #expect(abs(r - 0.95 * 500_000) < 5_000)
    }

    @Test func packetsStampedAsOneBatchAreNotTheStartOfTheSpan() throws {
        // The receiver read nothing until 70 ms: the first three are stamped then, as one batch.
        var late = throughTheLink
        for i in 0..<3 { late[i].1 = 70 }
        let r = try #require(result(late))
        #expect(abs(r - 0.95 * 500_000) < 5_000, "measured from the batch's end: \(r)")
        // Only the last packet after the batch: nothing known, no result.
        for i in 0..<5 { late[i].1 = 120 }
        #expect(result(late) == nil)
    }

    /// A FIFO that drains also lowers the delay, but spaces its packets: not a batch. Both rates
    /// count the bytes after the first packet (a mean-size count read this 1.25 Mbit/s as 1.31).
    @Test func aDrainingQueueIsMeasuredFromTheFirstPacket() throws {
        // Three media packets back to back into 2.5 Mbit/s (3.84 ms each), padding after a pause.
        let packets: [(Double, Double, Int)] = [(0, 3.84, 1200), (1, 7.68, 1200), (2, 11.52, 1200), (8, 12.5, 304),
                                                (25, 28.84, 1200)]
        let r = try #require(result(packets, bitrate: 1_500_000))
        let bytes = 1200.0 * 3 + 304
        #expect(abs(r - bytes * 8 / 0.025) < 1_000, "the send rate over the whole cluster: \(r)")
    }

    /// Jitter that reorders (the interop emulator's ±10 ms, as netem): a packet that arrives
    /// before one sent earlier was not held with it. Read as a held batch, the start moved past
    /// the reordered pair and left too little (the lossy test's start probes: no result in 9 of
    /// 14 legs, an additive ramp from 300 kbit/s and four resolution steps).
    @Test func reorderedPacketsAreNotAHeldBatch() throws {
        // 900 kbit/s on a clean path 25 ms away, each packet jittered by up to ±10 ms.
        let jitter: [Double] = [8, -6, 9, -9, 9, -5]
        let packets = (0..<6).map { i -> (Double, Double, Int) in
            let sent = Double(i) * 10.67
            return (sent, sent + 25 + jitter[i], 1200)
        }
        // Packets 1, 3 and 5 each arrive before the one sent just before them.
        let r = try #require(result(packets), "no result from a probe over an uncongested path")
        // Spans: sent 53.3 ms, received 47 ms (jitter only): the send rate, 900 kbit/s.
        #expect(abs(r - 1200 * 5 * 8 / 0.05335) < 10_000, "\(r)")
    }
}
