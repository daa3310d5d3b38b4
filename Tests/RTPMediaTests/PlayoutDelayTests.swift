import SeededRandom
import Testing
@testable import RTPMedia

/// The playout delay on made-up arrivals: 30 fps frames, some completing a round trip late.
@Suite struct PlayoutDelayTests {
    let start = ContinuousClock.now

    /// Shows 30 fps frames whose completion is late by `late(i)` seconds; returns the gaps
    /// between consecutive show times (s) and the show delays after completion.
    func run(_ frames: Range<Int>, late: (Int) -> Double, delay: inout PlayoutDelay) -> (gaps: [Double], holds: [Double]) {
        var shown: [ContinuousClock.Instant] = []
        var holds: [Double] = []
        var completions: [(Int, ContinuousClock.Instant)] = []
        for i in frames {
            completions.append((i, start + .seconds(Double(i) / 30 + 0.02 + late(i))))
        }
        // The jitter buffer releases in order: a frame behind a late one completes with it.
        var latest = start
        for (i, at) in completions {
            latest = max(latest, at)
            let show = delay.frameComplete(rtpTimestamp: UInt32(truncatingIfNeeded: 1000 + i * 3000), now: latest)
            holds.append((show - latest) / .seconds(1))
            shown.append(show)
        }
        let gaps = zip(shown, shown.dropFirst()).map { ($1 - $0) / .seconds(1) }
        return (gaps, holds)
    }

    @Test func aCleanNetworkShowsFramesAtOnce() {
        var delay = PlayoutDelay()
        let r = run(0..<300, late: { _ in 0 }, delay: &delay)
        #expect(r.holds.allSatisfy { $0 < 0.001 })
        #expect(delay.target < .milliseconds(1))
    }

    /// One frame in five waits 120 ms for a retransmission (and holds the ones behind it): after
    /// the first few seconds no gap between shown frames is a W3C freeze (> mean + 150 ms, and
    /// none even over 50 ms), and the delay added stays near the round trip.
    @Test func retransmissionWaitsAreAbsorbed() {
        var delay = PlayoutDelay()
        var random = SplitMix64(seed: 7)
        let lateFrames = Set((0..<600).filter { _ in random.next() % 5 == 0 })
        let r = run(0..<600, late: { lateFrames.contains($0) ? 0.12 : 0 }, delay: &delay)
        let settled = r.gaps.dropFirst(90)
        #expect(settled.allSatisfy { $0 < 0.05 }, "largest gap \(settled.max() ?? 0) s")
        #expect(delay.target >= .milliseconds(100) && delay.target <= .milliseconds(130))
        // Without it, the same arrivals would have gaps of the full wait.
        var none = PlayoutDelay(configuration: { var c = PlayoutDelay.Configuration(); c.maxDelay = .zero; return c }())
        let raw = run(0..<600, late: { lateFrames.contains($0) ? 0.12 : 0 }, delay: &none)
        #expect((raw.gaps.dropFirst(90).max() ?? 0) > 0.12)
    }

    /// When loss stops, the window forgets it: the delay is back near zero within its length.
    @Test func theDelayShrinksWhenLossStops() {
        var delay = PlayoutDelay()
        _ = run(0..<300, late: { $0 % 4 == 0 ? 0.1 : 0 }, delay: &delay)
        #expect(delay.target >= .milliseconds(90))
        _ = run(300..<300 + 30 * 5, late: { _ in 0 }, delay: &delay)
        #expect(delay.target < .milliseconds(5))
    }

    /// Nothing is held longer than the cap, however late frames are.
    @Test func holdsAreCapped() {
        var delay = PlayoutDelay()
        let r = run(0..<300, late: { $0 % 30 == 0 ? 0.9 : 0 }, delay: &delay)
        #expect(r.holds.allSatisfy { $0 <= 0.401 })
        #expect(delay.target == .milliseconds(400))
    }

    /// A new stream (the sender's RTP clock jumps) is not held against the old one's base.
    @Test func aClockJumpStartsOver() {
        var delay = PlayoutDelay()
        _ = delay.frameComplete(rtpTimestamp: 0, now: start)
        _ = delay.frameComplete(rtpTimestamp: 3000, now: start + .milliseconds(33))
        let show = delay.frameComplete(rtpTimestamp: 0x8000_0000, now: start + .milliseconds(66))
        #expect(show - (start + .milliseconds(66)) < .milliseconds(1))
    }
}
