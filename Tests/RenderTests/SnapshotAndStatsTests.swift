import Foundation
import Media
import Testing
import TestSupport
@testable import Render

@Suite struct PNGSnapshotRendererTests {
    @Test func savesTheFirstFrameAsAValidPNG() throws {
        let dir = try TempDir("render-snap")
        defer { dir.cleanup() }
        let path = dir.path("first.png")
        let renderer = PNGSnapshotRenderer(path: path)
        renderer.render(VideoFrame(buffer: ColorBars.i420(width: 64, height: 16), timestampNs: 0))
        for i in 1..<5 { renderer.render(VideoFrame(buffer: ColorBars.bgra(width: 32, height: 32), timestampNs: Int64(i))) }
        renderer.waitUntilIdle()
        #expect(renderer.savedCount == 1)
        #expect(renderer.lastError == nil)
        let image = try PNGDecoder.decodeRGB(readFile(path))
        #expect(image.width == 64 && image.height == 16)
        #expect(close(rgbAt(image.rgb, width: 64, x: 20, y: 8), ColorBars.rgb[2], within: 3))
        #expect(!FileManager.default.fileExists(atPath: path + ".tmp"))
    }

    @Test func everyNthFrameWithNumberedNames() throws {
        let dir = try TempDir("render-snap-every")
        defer { dir.cleanup() }
        let renderer = PNGSnapshotRenderer(path: dir.path("f-{n}.png"), every: 3)
        for i in 0..<7 {
            renderer.render(VideoFrame(buffer: patternI420(width: 16, height: 16, seed: i), timestampNs: Int64(i)))
            renderer.waitUntilIdle()   // one save at a time, so none is skipped
        }
        #expect(renderer.savedCount == 3)
        let names = try FileManager.default.contentsOfDirectory(atPath: dir.path).sorted()
        #expect(names == ["f-000000.png", "f-000003.png", "f-000006.png"])
        #expect(renderer.lastSavedPath == dir.path("f-000006.png"))
    }

    @Test func snapshotRequestSavesTheNextFrame() throws {
        let dir = try TempDir("render-snap-req")
        defer { dir.cleanup() }
        let path = dir.path("req.png")
        let renderer = PNGSnapshotRenderer(path: path)
        renderer.render(VideoFrame(buffer: ColorBars.i420(width: 32, height: 8), timestampNs: 0))
        renderer.waitUntilIdle()
        renderer.render(VideoFrame(buffer: ColorBars.i420(width: 32, height: 8), timestampNs: 1))
        renderer.waitUntilIdle()
        #expect(renderer.savedCount == 1)
        renderer.snapshot()
        renderer.render(VideoFrame(buffer: ColorBars.i420(width: 48, height: 16), rotation: .r270, timestampNs: 2))
        renderer.waitUntilIdle()
        #expect(renderer.savedCount == 2)
        let image = try PNGDecoder.decodeRGB(readFile(path))
        #expect(image.width == 16 && image.height == 48)
    }

    @Test func writeErrorIsReported() throws {
        let renderer = PNGSnapshotRenderer(path: "/nonexistent-\(UUID().uuidString)/x.png")
        renderer.render(VideoFrame(buffer: ColorBars.i420(width: 16, height: 16), timestampNs: 0))
        renderer.waitUntilIdle()
        #expect(renderer.savedCount == 0)
        #expect(renderer.lastError?.description.contains("cannot open") == true)
    }
}

@Suite struct StatsRendererTests {
    @Test func fpsFromTimestampsAndArrivalsOfA30fpsStream() {
        let start = ContinuousClock.now
        let stats = StatsRenderer(now: start)
        let buf = ColorBars.i420(width: 64, height: 32)
        var arrival = start.advanced(by: .milliseconds(250))
        for i in 0..<90 {
            stats.render(VideoFrame(buffer: buf, rotation: .r90, timestampNs: 5_000_000_000 + Int64(i) * 1_000_000_000 / 30),
                         arrival: arrival)
            // Arrivals jitter by ±5 ms around the 30 fps grid.
            arrival = start.advanced(by: .milliseconds(250)).advanced(by: .nanoseconds((i + 1) * 1_000_000_000 / 30 + (i % 2 == 0 ? 5_000_000 : -5_000_000)))
        }
        let s = stats.snapshot(now: arrival)
        #expect(s.framesRendered == 90)
        #expect(abs(s.fpsByTimestamp - 30) <= 0.5, "\(s.fpsByTimestamp)")
        #expect(abs(s.fpsByArrival - 30) <= 0.5, "\(s.fpsByArrival)")
        #expect(s.width == 64 && s.height == 32 && s.rotation == .r90 && s.format == .i420)
        #expect(s.timeToFirstFrame == .milliseconds(250))
        #expect(s.firstFrameTimestampNs == 5_000_000_000)
        #expect(s.sizeChanges == 0)

        // Frames stop: arrival fps decays to 0, the timestamp measure stays.
        let later = stats.snapshot(now: arrival.advanced(by: .seconds(2)))
        #expect(later.fpsByArrival == 0)
        #expect(abs(later.fpsByTimestamp - 30) <= 0.5)
    }

    @Test func halfRateAndSizeChangesAndTimestampReset() {
        let start = ContinuousClock.now
        let stats = StatsRenderer(now: start)
        for i in 0..<30 {
            let buf = ColorBars.i420(width: i < 20 ? 64 : 32, height: 16)
            stats.render(VideoFrame(buffer: buf, timestampNs: Int64(i) * 1_000_000_000 / 15),
                         arrival: start.advanced(by: .nanoseconds(i * 1_000_000_000 / 15)))
        }
        var s = stats.snapshot(now: start.advanced(by: .seconds(2)))
        #expect(abs(s.fpsByTimestamp - 15) <= 0.5)
        #expect(s.sizeChanges == 1 && s.width == 32)
        // A stream restart sends timestamps back to 0: the window restarts.
        stats.render(VideoFrame(buffer: ColorBars.i420(width: 32, height: 16), timestampNs: 0),
                     arrival: start.advanced(by: .seconds(2)))
        s = stats.snapshot(now: start.advanced(by: .seconds(2)))
        #expect(s.timestampResets == 1)
        #expect(s.fpsByTimestamp == 0)
        #expect(s.framesRendered == 31)
        stats.reset(now: start)
        #expect(stats.snapshot(now: start).framesRendered == 0)
    }

    @Test func highRateBeyondTheRingStillMeasures() {
        let start = ContinuousClock.now
        let stats = StatsRenderer(now: start)
        let buf = ColorBars.i420(width: 16, height: 16)
        for i in 0..<2000 {
            stats.render(VideoFrame(buffer: buf, timestampNs: Int64(i) * 1_000_000),
                         arrival: start.advanced(by: .milliseconds(i)))
        }
        let s = stats.snapshot(now: start.advanced(by: .milliseconds(1999)))
        #expect(abs(s.fpsByTimestamp - 1000) <= 1)
        #expect(abs(s.fpsByArrival - 1000) <= 1)
    }
}
