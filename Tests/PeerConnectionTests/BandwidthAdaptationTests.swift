import Testing
@testable import PeerConnection

@Suite struct BandwidthAdaptationTests {
    /// 720p30 at 500 kbit/s is 0.018 bit per pixel: maintain-framerate halves the size in one
    /// jump (960x540 would still have only 0.032; one keyframe, not two) and keeps 30 fps; back
    /// at 2.5 Mbit/s (0.09 at 720p) it returns to 720p a step at a time.
    @Test func maintainFramerateLowersResolutionInStepsAndRecovers() {
        var a = BandwidthAdaptation()
        var t = ContinuousClock.now
        var out = a.adapt(width: 1280, height: 720, fps: 30, targetBitrate: 2_500_000, preference: .maintainFramerate, now: t)
        #expect(out == .init(scale: 1, fps: 30, limited: false))
        var scales: [Double] = []
        for _ in 0..<40 {   // 4 s at 500 kbit/s, one frame every 100 ms
            t = t.advanced(by: .milliseconds(100))
            out = a.adapt(width: 1280, height: 720, fps: 30, targetBitrate: 500_000, preference: .maintainFramerate, now: t)
            if scales.last != out.scale { scales.append(out.scale) }
        }
        #expect(scales == [2])                     // 640x360 (0.072: stays), not via 960x540
        #expect(out.fps == 30 && out.limited)
        var upAt: [Int] = []
        for i in 0..<100 {
            t = t.advanced(by: .milliseconds(100))
            let before = out.scale
            out = a.adapt(width: 1280, height: 720, fps: 30, targetBitrate: 2_500_000, preference: .maintainFramerate, now: t)
            if out.scale != before { upAt.append(i) }
        }
        #expect(out == .init(scale: 1, fps: 30, limited: false))
        #expect(upAt.count == 2 && (upAt.first ?? 99) <= 30, "first step up within 3 s: \(upAt)")
        #expect(a.resolutionChanges == 3)
    }

    /// Back up to 720p30 at 1.7 Mbit/s (0.061 bit per pixel), where libwebrtc's H.264 bandwidth
    /// scaler goes back too (from 1.5 Mbit/s); at 1.4 Mbit/s it stays at 540p.
    @Test(arguments: [(1_700_000, 1.0), (1_400_000, 4.0 / 3)])
    func stepsBackUpToTheSizeTheRateCarries(bitrate: Int, scale: Double) {
        var a = BandwidthAdaptation()
        var t = ContinuousClock.now
        _ = a.adapt(width: 1280, height: 720, fps: 30, targetBitrate: 700_000, preference: .maintainFramerate, now: t)
        var out = a.adapt(width: 1280, height: 720, fps: 30, targetBitrate: 700_000, preference: .maintainFramerate, now: t)
        #expect(out.scale == 4.0 / 3)   // 960x540 at 0.045
        for _ in 0..<100 {
            t = t.advanced(by: .milliseconds(100))
            out = a.adapt(width: 1280, height: 720, fps: 30, targetBitrate: bitrate, preference: .maintainFramerate, now: t)
        }
        #expect(out.scale == scale)
    }

    @Test func maintainResolutionLowersFrameRateOnly() {
        var a = BandwidthAdaptation()
        var t = ContinuousClock.now
        var out = a.adapt(width: 1280, height: 720, fps: 30, targetBitrate: 300_000, preference: .maintainResolution, now: t)
        for _ in 0..<100 {
            t = t.advanced(by: .milliseconds(100))
            out = a.adapt(width: 1280, height: 720, fps: 30, targetBitrate: 300_000, preference: .maintainResolution, now: t)
        }
        #expect(out.scale == 1 && out.limited)
        // 30 → 20 → 13.3 → 8.9 → 5.9 fps: the first rate with 0.04 bit per pixel at 300 kbit/s.
        #expect(abs(out.fps - 30.0 * 16 / 81) < 0.01)
        #expect(300_000 / (1280 * 720 * out.fps) >= 0.04)
        #expect(a.resolutionChanges == 0)
    }

    @Test func balancedHalvesTheSizeBeforeTheRate() {
        var a = BandwidthAdaptation()
        var t = ContinuousClock.now
        var seen: [BandwidthAdaptation.Output] = []
        for _ in 0..<60 {
            t = t.advanced(by: .milliseconds(100))
            let out = a.adapt(width: 1280, height: 720, fps: 30, targetBitrate: 200_000, preference: .balanced, now: t)
            if seen.last != out { seen.append(out) }
        }
        // Straight to half size (960x540 would have 0.013), then 20 fps (0.043 at 640x360): enough.
        #expect(seen.map(\.scale) == [2, 2])
        #expect(seen.map(\.fps) == [30, 20])
    }

    @Test func plentyOfBandwidthChangesNothing() {
        var a = BandwidthAdaptation()
        var t = ContinuousClock.now
        for _ in 0..<50 {
            t = t.advanced(by: .milliseconds(100))
            #expect(a.adapt(width: 640, height: 360, fps: 30, targetBitrate: 800_000, preference: .balanced, now: t)
                    == .init(scale: 1, fps: 30, limited: false))
        }
    }

    /// The start: 720p30 at the unconfirmed 300 kbit/s start is sized as the start carries it
    /// (480x270: 0.077 bit per pixel; 640x360 would have 0.043), the size only rises while the
    /// start probes confirm more, and once settled the usual steps follow without waiting.
    @Test func startSizesTheFirstFramesForTheStartEstimateAndOnlyRaisesThem() {
        var a = BandwidthAdaptation()
        var out = a.start(width: 1280, height: 720, fps: 30, targetBitrate: 300_000)
        #expect(out == .init(scale: 8.0 / 3, fps: 30, limited: true))
        #expect(a.resolutionChanges == 1)
        // A dip while unconfirmed does not cost a keyframe.
        out = a.start(width: 1280, height: 720, fps: 30, targetBitrate: 200_000)
        #expect(out.scale == 8.0 / 3)
        // The probes found 1.2 Mbit/s: 960x540 (0.077); 2.5 Mbit/s: 720p (0.09).
        out = a.start(width: 1280, height: 720, fps: 30, targetBitrate: 1_200_000)
        #expect(out.scale == 4.0 / 3)
        out = a.start(width: 1280, height: 720, fps: 30, targetBitrate: 2_500_000)
        #expect(out == .init(scale: 1, fps: 30, limited: false))
        #expect(a.resolutionChanges == 3)

        // A source that fits the start is left alone and counts no change.
        var small = BandwidthAdaptation()
        #expect(small.start(width: 320, height: 180, fps: 30, targetBitrate: 300_000) == .init(scale: 1, fps: 30, limited: false))
        #expect(small.resolutionChanges == 0)

        // Settled after a start at 480x270 on a 1.2 Mbit/s link: the step up comes at the first
        // frame (no upDelay from the start's changes).
        var b = BandwidthAdaptation()
        _ = b.start(width: 1280, height: 720, fps: 30, targetBitrate: 300_000)
        let settled = b.adapt(width: 1280, height: 720, fps: 30, targetBitrate: 1_200_000, preference: .maintainFramerate,
                              now: .now)
        #expect(settled.scale == 2)
    }
}
