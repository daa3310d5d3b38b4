import Foundation
import Locks
@testable import PeerConnection
import Relay
import RTP
import RTPMedia
import SessionSupport
import Testing
import Transport

/// A viewer whose link does not carry even a simulcast's smallest layer, on simulated time: a
/// two-layer VP8 simulcast with L1T3 on each layer (as Chromium sends `scalabilityMode: 'L1T3'`
/// per encoding): l ~300 kbit/s (TL0 ~120, up to TL1 ~180), h ~1.1 Mbit/s. A on a clean link;
/// B behind 200 kbit/s with a 25-packet FIFO. B goes to l and then, its link evidently full (it
/// delivers less than l and loses), to l's lower temporal layers: every frame of those, no
/// W3C freeze, where l whole into the 200 kbit/s queue lost a third of it. A keeps every frame
/// of h; when B's limit lifts it is back on h.
@Suite struct RelaySimulcastTemporalTests {
    struct Arrival { let second: Int; let at: ContinuousClock.Instant; let layer: UInt8; let tid: UInt8?; let marker: Bool; let sequence: UInt16 }

    @Test(arguments: [200_000, 260_000])
    func aViewerBelowTheSmallestLayerGetsItsLowerTemporalLayersWhole(rate: Int) async throws {
        let sim = Simulation(seed: 2)
        let switches = Locked<[String]>([])
        let relay = try sim.relay(log: { line in if line.contains(" layer ") { switches.withLock { $0.append(line) } } })
        let publisher = try await WrittenSimulcastPublisher(sim, relay: relay, stream: "thin", rids: ["l", "h"], codec: .vp8)
        let second = Locked(0)
        func run(seconds: Int) {
            for _ in 0..<seconds {
                for f in 0..<30 { publisher.vp8Frame(sim, packets: [[2, 1, 1], [6, 4, 4]], keyframes: f == 0 ? ["l", "h"] : []) }
                second.withLock { $0 += 1 }
            }
        }
        run(seconds: 2)

        let viewers = try await TwoViewers(sim, relay: relay, stream: "thin") { p, at in
            let tid = (try? VP8PayloadDescriptor.parse(p.payload))?.0.temporalLayerIndex
            return Arrival(second: second.value, at: at, layer: WrittenSimulcastPublisher.vp8Tag(p.payload), tid: tid,
                           marker: p.marker, sequence: p.sequenceNumber)
        }
        let views = viewers.views, link = viewers.bLink
        sim.loop.perform { link.downlink.conditions = LinkConditions(rate: rate, queue: .packets(25)) }
        let limited = second.value
        run(seconds: 20)
        sim.loop.perform { link.downlink.conditions = .clean }
        let lifted = second.value
        run(seconds: 15)

        /// The frames' last packets, each once (padding and resends repeat packets).
        func frames(_ view: Locked<[Arrival]>) -> [Arrival] {
            var seen = Set<UInt16>()
            return view.value.filter { $0.marker && seen.insert($0.sequence).inserted }
        }
        let log = switches.value.joined(separator: "\n")
        let a = frames(views[0]), b = frames(views[1])
        let aPerSecond = ((limited + 1)..<second.value).map { s in a.filter { $0.second == s && $0.layer == 2 }.count }
        #expect(aPerSecond.allSatisfy { $0 >= 29 }, "A's frames of h a second: \(aPerSecond)")

        // B, from 6 s after the limit to the lift: l's frames up to TL1 or TL0 only, all of them.
        let settled = (limited + 6)..<lifted
        let bSettled = b.filter { settled.contains($0.second) }
        let bPerSecond = settled.map { s in bSettled.filter { $0.second == s }.count }
        let layers = Set(bSettled.map { "\($0.layer)/T\($0.tid ?? 9)" })
        #expect(bSettled.allSatisfy { $0.layer == 1 && ($0.tid ?? 2) < 2 }, "B got \(layers.sorted()) while limited\n\(log)")
        var detector = FreezeDetector()
        for f in bSettled { detector.frameRendered(at: f.at) }
        #expect(detector.freezeCount == 0, "B froze \(detector.freezeCount) times (\(detector.totalFreezesDuration)): \(bPerSecond)\n\(log)")
        // Every base frame of l that went out in those seconds reached B (7.5 a second: a
        // second's count is 6–10 as B's queue moves frames across a second's edge).
        let bBase = bSettled.filter { $0.tid == 0 }.count
        #expect(bBase >= settled.count * 30 / 4 - 2, "B got \(bBase) base frames of l in \(settled.count) s")

        // Back on every frame of h within 10 s of the lift.
        let after = (lifted..<second.value).map { s in b.filter { $0.second == s && $0.layer == 2 }.count }
        let back = after.firstIndex { $0 >= 29 }
        print("thin viewer (\(rate / 1000) kbit/s): B while limited \(bPerSecond) (\(layers.sorted())), after the lift \(after)\n\(log)")
        #expect(back.map { $0 <= 10 } ?? false, "B after the lift: \(after)\n\(log)")
        let streams = String(decoding: await sim.request(relay, "GET", "/api/v1/streams/").body, as: UTF8.self)
        #expect(streams.contains("\"temporal_layer\""), "\(streams)")

        await viewers.close()
        await publisher.close()
        await relay.stop()
    }
}
