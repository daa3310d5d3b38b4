import AudioDevice
import Testing

/// The playout buffer on a fake clock: 20 ms frames in, 10 ms frames out.
struct PlayoutBufferTests {
    static let ms: Int64 = 1_000_000

    static func frame(_ value: Int16, ms: Int = 20) -> [Int16] { [Int16](repeating: value, count: ms * 48) }

    @Test func startsOnceTheTargetIsBufferedThenPlaysInOrder() {
        var b = PlayoutBuffer()
        #expect(b.targetMs == 40)
        b.push(Self.frame(1), nowNs: 0)
        #expect(b.pull(480, nowNs: 0) == [Int16](repeating: 0, count: 480))   // 20 ms < 40 ms target
        b.push(Self.frame(2), nowNs: 20 * Self.ms)
        #expect(b.pull(480, nowNs: 20 * Self.ms).allSatisfy { $0 == 1 })
        #expect(b.isPlaying)
        #expect(b.pull(480, nowNs: 30 * Self.ms).allSatisfy { $0 == 1 })
        #expect(b.pull(480, nowNs: 40 * Self.ms).allSatisfy { $0 == 2 })
        #expect(b.stats.samplesSilent == 480 && b.stats.underruns == 0)
    }

    /// Steady 20 ms arrivals against a 10 ms device clock: no underrun, no drop, for a minute.
    @Test func steadyStreamNeverUnderrunsOrDrops() {
        var b = PlayoutBuffer()
        var pushed = 0
        for tick in 0..<6000 {   // 10 ms ticks
            let now = Int64(tick) * 10 * Self.ms
            if tick % 2 == 0 { b.push(Self.frame(Int16(pushed % 100 + 1)), nowNs: now); pushed += 1 }
            _ = b.pull(480, nowNs: now)
        }
        #expect(b.stats.underruns == 0)
        #expect(b.stats.samplesDropped == 0)
        #expect(b.levelMs <= 60)
    }

    /// A 100 ms stall underruns once, raises the target by 20 ms, and the buffer refills to it;
    /// after 5 s without trouble the target comes back down by 10 ms.
    @Test func stallRaisesTargetThenItShrinksBack() {
        var b = PlayoutBuffer()
        var now: Int64 = 0
        func run(ticks: Int, pushEvery: Int = 2) {
            for tick in 0..<ticks {
                if tick % pushEvery == 0 { b.push(Self.frame(7), nowNs: now) }
                _ = b.pull(480, nowNs: now)
                now += 10 * Self.ms
            }
        }
        run(ticks: 100)
        #expect(b.targetMs == 40)
        for _ in 0..<10 { _ = b.pull(480, nowNs: now); now += 10 * Self.ms }   // nothing arrives
        #expect(b.stats.underruns == 1)
        #expect(b.targetMs == 60)
        #expect(!b.isPlaying)
        // The late frames arrive in a burst, then the stream is steady again.
        for _ in 0..<5 { b.push(Self.frame(7), nowNs: now) }
        run(ticks: 490)
        #expect(b.stats.underruns == 1)
        #expect(b.targetMs == 60)
        run(ticks: 20)
        #expect(b.targetMs == 50)
    }

    /// A burst far above the target is cut back to the target, dropping the oldest audio.
    @Test func burstAboveTheTargetIsDropped() {
        var b = PlayoutBuffer()
        for i in 0..<10 { b.push(Self.frame(Int16(i + 1)), nowNs: 0) }   // 200 ms at once
        #expect(b.levelMs == 40)
        #expect(b.stats.samplesDropped == 160 * 48)
        #expect(b.pull(480, nowNs: 0).allSatisfy { $0 == 9 })
    }

    @Test func targetStaysWithinItsBounds() {
        var b = PlayoutBuffer()
        var now: Int64 = 0
        for _ in 0..<20 {   // an underrun each round
            b.push(Self.frame(1, ms: 10), nowNs: now)
            for _ in 0..<30 { _ = b.pull(480, nowNs: now); now += 10 * Self.ms }
            b.push(Self.frame(1, ms: 400), nowNs: now)
            _ = b.pull(480, nowNs: now)
            for _ in 0..<50 { _ = b.pull(480, nowNs: now); now += 10 * Self.ms }
        }
        #expect(b.targetMs == 200)
    }
}
