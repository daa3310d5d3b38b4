import Testing
@testable import Capture

@Suite struct PaceScheduleTests {
    let ms: Int64 = 1_000_000

    @Test func onTimeTicksFollowStartPlusNOverFps() {
        var s = PaceSchedule(intervalNs: 33 * ms, startNs: 1_000 * ms)
        for n in 0..<100 {
            #expect(s.dueNs == 1_000 * ms + Int64(n) * 33 * ms)
            s.fired(at: s.dueNs + 2 * ms)   // small jitter does not shift the grid
        }
        #expect(s.index == 100)
    }

    @Test func slightlyLateTickKeepsTheGrid() {
        var s = PaceSchedule(intervalNs: 10 * ms, startNs: 0)
        s.fired(at: 0)
        s.fired(at: 10 * ms + 9 * ms)      // 0.9 interval late
        #expect(s.dueNs == 20 * ms)         // next one is due 1 ms later: one quick tick, no more
    }

    @Test func stallDoesNotBurst() {
        var s = PaceSchedule(intervalNs: 10 * ms, startNs: 0)
        s.fired(at: 0)
        s.fired(at: 10 * ms)
        // Tick 2 (due 20 ms) fires 200 ms late: delivered once, the rest paced from there.
        s.fired(at: 220 * ms)
        #expect(s.index == 3)
        #expect(s.dueNs == 230 * ms)
        s.fired(at: 230 * ms)
        #expect(s.dueNs == 240 * ms)
    }
}
