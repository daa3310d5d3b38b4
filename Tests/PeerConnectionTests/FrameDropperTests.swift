import Testing
@testable import PeerConnection

@Suite struct FrameDropperTests {
    /// A 60 kB keyframe at 400 kbit/s is 1.2 s of budget: the frames behind it are dropped until
    /// the bucket has leaked below 0.4 s worth, then they flow again.
    @Test func anOvershootingKeyframeDropsTheFramesBehindItForAWhile() {
        var d = FrameDropper()
        var t = ContinuousClock.now
        let keyframeDropped = d.shouldDrop(now: t, targetBitrate: 400_000, queueDelay: .zero, bucket: true, keyframeWanted: true)
        #expect(!keyframeDropped)
        d.encoded(bytes: 60_000)
        var decisions: [Bool] = []
        for _ in 0..<40 {
            t = t.advanced(by: .milliseconds(33))
            let drop = d.shouldDrop(now: t, targetBitrate: 400_000, queueDelay: .zero, bucket: true, keyframeWanted: false)
            if !drop { d.encoded(bytes: 1_500) }
            decisions.append(drop)
        }
        // 480 kbit excess leaks at 400 kbit/s; below 160 kbit after 0.8 s, i.e. about 24 frames.
        let firstSent = decisions.firstIndex(of: false) ?? 99
        #expect((22...26).contains(firstSent), "first frame let through: \(firstSent)")
        #expect(decisions.suffix(10).allSatisfy { !$0 })
    }

    @Test func maintainFramerateOnlyDropsForAnOldQueue() {
        var d = FrameDropper()
        let t = ContinuousClock.now
        d.encoded(bytes: 1_000_000)
        let shortQueue = d.shouldDrop(now: t, targetBitrate: 300_000, queueDelay: .milliseconds(100), bucket: false, keyframeWanted: false)
        let oldQueue = d.shouldDrop(now: t, targetBitrate: 300_000, queueDelay: .milliseconds(400), bucket: false, keyframeWanted: false)
        let keyframe = d.shouldDrop(now: t, targetBitrate: 300_000, queueDelay: .milliseconds(400), bucket: false, keyframeWanted: true)
        #expect(!shortQueue && oldQueue && !keyframe)
        #expect(d.dropped == 1)
    }
}
