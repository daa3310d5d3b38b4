import Testing
@testable import BandwidthEstimation

/// Periodic probing: every 5 s while the estimate is steady, every 2 s while the sender wants
/// more than it (an SFU viewer below the layer it asked for), so a link that widened is found
/// within about that.
@Suite struct ProbeControllerTests {
    /// When periodic probes start over 12 s at a steady 300 kbit/s estimate (after the start
    /// probes and their one retry): each at 2× the estimate.
    private func probeTimes(wanted: Double?) -> [Duration] {
        var controller = ProbeController(enabled: true, periodicInterval: .seconds(5))
        controller.wantedBitrate = wanted
        let t0 = Moment(.now)
        _ = controller.start(startBitrate: 300_000, maxBitrate: 5_000_000, at: t0)
        var times: [Duration] = []
        var t = Duration.zero
        while t < .seconds(12) {
            t += .milliseconds(25)
            let clusters = controller.process(estimate: 300_000, maxBitrate: 5_000_000, state: .normal, allowPeriodic: true, at: t0 + t)
            // The start probes' retry (3× and 6× again, a second in) is not periodic.
            if clusters.map(\.bitrate) == [600_000] { times.append(t) }
        }
        return times
    }

    private func gaps(_ times: [Duration]) -> [Duration] { zip(times.dropFirst(), times).map { $0 - $1 } }

    @Test func probesEveryTwoSecondsWhileMoreIsWanted() {
        let steady = probeTimes(wanted: nil)
        #expect(steady.count == 2 && gaps(steady).allSatisfy { $0 >= .seconds(5) && $0 < .milliseconds(5100) }, "\(steady)")
        let wanting = probeTimes(wanted: 1_800_000)
        #expect(wanting.count >= 5 && gaps(wanting).allSatisfy { $0 >= .seconds(2) && $0 < .milliseconds(2100) }, "\(wanting)")
        // Wanting no more than the estimate carries changes nothing.
        #expect(probeTimes(wanted: 250_000) == steady)
    }
}
