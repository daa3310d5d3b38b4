import BandwidthEstimation
import Locks
@testable import PeerConnection
import Relay
import RTP
import SessionSupport
import Testing
import Transport

/// A relay's players only forward (`stampForwarded`). Once their transport-cc feedback flows
/// their congestion controllers leave the loop's 25 ms ticker for the 250 ms one and run the
/// estimator's periodic work on that feedback: 480 players ticking every 25 ms were 5% of a
/// relay's CPU. Their estimates must still follow the link: B's narrows and it moves to `l`.
@Suite struct RelayPlayerTickTests {
    @Test func aRelaysPlayersTickSlowlyOnceTheirFeedbackFlowsAndStillFollowTheirLinks() async throws {
        let sim = Simulation(seed: 5)
        let relay = try sim.relay()
        let publisher = try await WrittenSimulcastPublisher(sim, relay: relay, stream: "ticks", rids: ["l", "h"], codec: .vp8)
        let seconds = Locked(0)
        func run(seconds count: Int) {
            for _ in 0..<count {
                for f in 0..<30 { publisher.vp8Frame(sim, packets: [[2, 1, 1], [6, 4, 4]], keyframes: f == 0 ? ["l", "h"] : []) }
                seconds.withLock { $0 += 1 }
            }
        }
        run(seconds: 1)
        let viewers = try await TwoViewers(sim, relay: relay, stream: "ticks") { p, _ in
            (second: seconds.value, layer: WrittenSimulcastPublisher.vp8Tag(p.payload), marker: p.marker)
        }
        func members(_ interval: Duration) -> Int { sim.loop.perform { sim.loop.ticker(every: interval).count } }
        run(seconds: 3)
        // The two players' controllers moved; the viewers, which send feedback about what they
        // receive, and the publisher's session stay on 25 ms.
        #expect(members(CongestionController.forwardingTickInterval) == 2)
        #expect(members(BandwidthEstimator.processInterval) >= 3)

        let limited = seconds.value
        sim.loop.perform { viewers.bLink.downlink.conditions = LinkConditions(rate: 600_000, queue: .packets(25)) }
        run(seconds: 8)
        let b = viewers.views[1].value.filter { $0.marker && $0.second >= limited + 4 }
        #expect(!b.isEmpty && b.allSatisfy { $0.layer == 1 }, "B's layers once limited: \(Set(b.map(\.layer)))")
        let a = viewers.views[0].value.filter { $0.marker && $0.second >= limited + 4 }
        #expect(!a.isEmpty && a.allSatisfy { $0.layer == 2 }, "A's layers: \(Set(a.map(\.layer)))")

        await viewers.close()
        await publisher.close()
        await relay.stop()
    }
}
