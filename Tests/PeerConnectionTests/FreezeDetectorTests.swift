import Testing
@testable import PeerConnection

@Suite struct FreezeDetectorTests {
    @Test func aLongGapAfterSteadyFramesIsOneFreezeOfThatLength() {
        var d = FreezeDetector()
        var t = ContinuousClock.now
        for _ in 0..<30 { d.frameRendered(at: t); t = t.advanced(by: .milliseconds(33)) }
        #expect(d.freezeCount == 0)
        t = t.advanced(by: .milliseconds(600))            // 633 ms after the last frame
        d.frameRendered(at: t)
        #expect(d.freezeCount == 1)
        #expect(d.totalFreezesDuration == .milliseconds(633))
        // 150 ms above a 33 ms average is not yet 3×: 180 ms is below max(99, 183).
        t = t.advanced(by: .milliseconds(180))
        d.frameRendered(at: t)
        #expect(d.freezeCount == 1)
    }

    @Test func slowButSteadyFramesAreNotFreezes() {
        var d = FreezeDetector()
        var t = ContinuousClock.now
        for _ in 0..<20 { d.frameRendered(at: t); t = t.advanced(by: .milliseconds(500)) }
        #expect(d.freezeCount == 0)
        #expect(d.totalInterFrameDelay == .milliseconds(500 * 19))
    }
}
