import Media
import Testing
@testable import Capture

@Suite struct TestPatternCapturerTests {
    @Test func manualModeNumbersFramesInOrder() throws {
        let collector = FrameCollector(target: 30)
        let capturer = TestPatternCapturer(delegate: collector)
        var readBack: [UInt32] = []
        for i in 0..<30 {
            let frame = capturer.captureFrame(at: Int64(i) * 33_333_333, width: 320, height: 240, wallClockMs: 1_000 + UInt64(i))
            let r = try #require(TestPattern.read(frame))
            #expect(r.wallClockMs == 1_000 + UInt32(i))
            readBack.append(r.frameNumber)
        }
        #expect(readBack == Array(0..<30))
        #expect(collector.numbers == (0..<30).map { Optional($0) })
        #expect(collector.timestamps == (0..<30).map { Int64($0) * 33_333_333 })
        #expect(capturer.nextFrameNumber == 30)
    }

    @Test func manualModeReusesPoolBuffers() {
        let capturer = TestPatternCapturer()
        for i in 0..<50 { _ = capturer.captureFrame(at: Int64(i), width: 160, height: 120) }
        // Frames are dropped right away, so one buffer keeps coming back.
        #expect(capturer.pooledBufferCount == 1)
        let held = capturer.captureFrame(at: 99, width: 160, height: 120)
        let next = capturer.captureFrame(at: 100, width: 160, height: 120)
        #expect(held.buffer !== next.buffer)   // a held buffer is never written again
        #expect(capturer.pooledBufferCount == 2)
    }

    @Test func threadDeliversPacedFramesUntilStopped() throws {
        let collector = FrameCollector(target: 10)
        let capturer = TestPatternCapturer(delegate: collector)
        try capturer.start(width: 128, height: 96, fps: 100)
        #expect(collector.waitForTarget())
        capturer.stop()
        capturer.stop()   // idempotent
        #expect(!capturer.isRunning)
        let numbers = collector.numbers
        let stamps = collector.timestamps
        #expect(numbers.count >= 10)
        #expect(numbers.prefix(10).map { $0 } == (0..<10).map { Optional(UInt32($0)) })
        #expect(zip(stamps, stamps.dropFirst()).allSatisfy { $0 < $1 })
        #expect(collector.sizes.allSatisfy { $0 == (128, 96) })
    }

    @Test func threadStampsTheWallClock() throws {
        let collector = FrameCollector(target: 1)
        let capturer = TestPatternCapturer(delegate: collector)
        let before = UInt32(truncatingIfNeeded: CaptureClock.realtimeMs())
        try capturer.start(width: 128, height: 96, fps: 100)
        #expect(collector.waitForTarget())
        capturer.stop()
        let after = UInt32(truncatingIfNeeded: CaptureClock.realtimeMs())
        let stamp = try #require(collector.stamps.first ?? nil)
        #expect(stamp &- before <= after &- before)
    }

    @Test func manualModeStampsTheFrameTimeSoReplaysMatch() throws {
        // Simulations feed frames on virtual time: the picture must not depend on when they run.
        let first = TestPatternCapturer(), second = TestPatternCapturer()
        for i in 0..<3 {
            let ns = Int64(i) * 33_333_333 + 5_000_000_000
            let a = first.captureFrame(at: ns, width: 64, height: 48)
            let b = second.captureFrame(at: ns, width: 64, height: 48)
            #expect(try #require(TestPattern.read(a)).wallClockMs == UInt32(ns / 1_000_000))
            #expect(planes(a.buffer) == planes(b.buffer))
        }
    }

    @Test func rejectsBadSettings() {
        let capturer = TestPatternCapturer()
        #expect(throws: MediaError.self) { try capturer.start(width: 0, height: 720, fps: 30) }
        #expect(throws: MediaError.self) { try capturer.start(width: 1280, height: 720, fps: 0) }
        #expect(throws: MediaError.self) { try capturer.start(width: 1280, height: 720, fps: .nan) }
        #expect(!capturer.isRunning)
    }
}
