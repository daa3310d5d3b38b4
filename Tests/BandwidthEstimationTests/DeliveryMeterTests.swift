import Testing
@testable import BandwidthEstimation

/// The early "link is full" evidence a relay acts on before a player's estimate settles.
@Suite struct DeliveryMeterTests {
    let t0 = Moment(.now)

    /// Packets (sent ms, bytes) through a link of `rate` bit/s with a drop-tail FIFO of `queue`
    /// packets, `delay` ms away; each one's result as feedback would report it.
    func through(_ packets: [(Double, Int)], rate: Double, queue: Int = 25, delay: Double = 10) -> [PacketResult] {
        var busyUntil = 0.0
        var departures: [Double] = []
        return packets.enumerated().map { i, p in
            departures.removeAll { $0 <= p.0 }
            var arrival: Int64?
            if departures.count < queue {
                busyUntil = max(busyUntil, p.0) + Double(p.1 * 8) / rate * 1000
                departures.append(busyUntil)
                arrival = Int64((busyUntil + delay) * 1000) + 7_000_000
            }
            return PacketResult(transportSequence: Int64(i), size: p.1,
                                sendTime: t0 + .microseconds(Int64(p.0 * 1000)), arrivalMicroseconds: arrival)
        }
    }

    func ratio(_ results: [PacketResult]) -> Double? {
        var meter = DeliveryMeter()
        for r in results { meter.add(r) }
        return meter.ratio
    }

    /// `count` packets of `size` bytes at `bitrate` from `start` ms.
    func steady(from start: Double, bitrate: Double, size: Int, count: Int) -> [(Double, Int)] {
        let gap = Double(size * 8) / bitrate * 1000
        return (0..<count).map { (start + Double($0) * gap, size) }
    }

    @Test func aNarrowLinkSentFourTimesItsRateIsFullOnItsFirstTenPackets() throws {
        let sent = steady(from: 0, bitrate: 1_500_000, size: 1200, count: 60)
        let results = through(sent, rate: 400_000)
        // What feedback has reported by 300 ms: the packets arrived by then (and no loss yet).
        let reported = results.filter { ($0.arrivalMicroseconds ?? .max) - 7_000_000 <= 300_000 }
        let r = try #require(ratio(reported), "\(reported.count) packets reported by 300 ms")
        #expect(r < 0.35, "\(r)")
        // All of it, drops included: still the link's share.
        #expect(try #require(ratio(results)) < 0.35)
    }

    /// The shape that moved a clean player down in CI: a quiet join (small packets while the
    /// layer waits for its keyframe), then the keyframe and the layer at its rate, on loopback.
    @Test func aQuietJoinThenAKeyframeOnACleanLinkIsNotFull() throws {
        var sent = steady(from: 0, bitrate: 40_000, size: 200, count: 8)        // 320 ms of a trickle
        sent += steady(from: 330, bitrate: 8_000_000, size: 1200, count: 25)     // the keyframe, in a burst
        sent += steady(from: 370, bitrate: 200_000, size: 900, count: 20)
        let results = through(sent, rate: 1_000_000_000, delay: 0.2)
        for n in [10, 15, 20, 33, 40, results.count] {
            if let r = ratio(Array(results.prefix(n))) { #expect(r > 0.9, "after \(n) packets: \(r)") }
        }
        #expect(ratio(results) != nil)
    }

    /// A start probe at six times the link's need, through a link that carries it.
    @Test func aProbeThroughALinkThatCarriesItIsNotFull() throws {
        var sent = steady(from: 0, bitrate: 1_800_000, size: 1200, count: 20)
        sent += steady(from: sent.last!.0 + 5, bitrate: 300_000, size: 1000, count: 30)
        let r = try #require(ratio(through(sent, rate: 5_000_000)))
        #expect(r > 0.9, "\(r)")
    }

    @Test func tenPacketsInOneBurstAreNotEnough() {
        let results = through(steady(from: 0, bitrate: 8_000_000, size: 1200, count: 12), rate: 2_000_000)
        #expect(ratio(results) == nil, "12 packets over 58 ms of arrivals")
    }
}
