import Media
import SeededRandom
import Testing
@testable import Capture

@Suite struct TestPatternTests {
    static let sizes = [(1280, 720), (640, 360), (320, 240)]
    static let wall: UInt64 = 1_732_934_567_891   // a plausible epoch-ms value (> 2^32)

    func rendered(_ n: UInt32, _ w: Int, _ h: Int, wall: UInt64 = wall) -> VideoFrame {
        let b = VideoFrameBuffer(format: .i420, width: w, height: h)
        TestPattern.render(frameNumber: n, wallClockMs: wall, width: w, height: h, into: b)
        return VideoFrame(buffer: b, timestampNs: 0)
    }

    @Test(arguments: sizes)
    func roundTrip(size: (Int, Int)) throws {
        for n: UInt32 in [0, 1, 12345, 0xDEAD_BEEF, .max] {
            let r = try #require(TestPattern.read(rendered(n, size.0, size.1)))
            #expect(r.frameNumber == n)
            #expect(r.wallClockMs == UInt32(truncatingIfNeeded: Self.wall))
        }
    }

    @Test func bandLayoutFollowsTheSpec() {
        // 1280x720: cells 40x30; frame number 1 → only column 31 of row 0 is white.
        let f = rendered(1, 1280, 720, wall: 0)
        #expect(f.buffer.luma(x: 31 * 40 + 20, y: 15) == 235)
        #expect(f.buffer.luma(x: 30 * 40 + 20, y: 15) == 16)
        // Wall clock 0, so row 1 is all 16 and row 2 = ~(1 ^ 0) has every bit but the last set.
        #expect(f.buffer.luma(x: 20, y: 45) == 16)
        #expect(f.buffer.luma(x: 20, y: 75) == 235)
        #expect(f.buffer.luma(x: 31 * 40 + 20, y: 75) == 16)
        // Chroma of the band is neutral.
        let u = f.buffer.planePointer(1), v = f.buffer.planePointer(2)
        #expect(u[10 * f.buffer.strides[1] + 100] == 128)
        #expect(v[40 * f.buffer.strides[2] + 600] == 128)
    }

    @Test(arguments: sizes)
    func survivesConversionToNV12AndBGRA(size: (Int, Int)) throws {
        let f = rendered(424_242, size.0, size.1)
        for format in [PixelFormat.nv12VideoRange, .nv12FullRange, .bgra] {
            let converted = VideoFrame(buffer: f.buffer.converted(to: format), timestampNs: 0)
            #expect(converted.format == format)
            let r = try #require(TestPattern.read(converted), "unreadable after conversion to \(format)")
            #expect(r.frameNumber == 424_242)
            #expect(r.wallClockMs == UInt32(truncatingIfNeeded: Self.wall))
        }
    }

    @Test(arguments: sizes)
    func survivesDownscaleAndUpscale(size: (Int, Int)) throws {
        let f = rendered(987_654, size.0, size.1)
        let small = f.buffer.scaled(width: size.0 / 2, height: size.1 / 2)
        #expect(small.width == size.0 / 2)
        // Readable at half size too, and after scaling back up.
        #expect(TestPattern.read(VideoFrame(buffer: small, timestampNs: 0))?.frameNumber == 987_654)
        let back = small.scaled(width: size.0, height: size.1)
        let r = try #require(TestPattern.read(VideoFrame(buffer: back, timestampNs: 0)))
        #expect(r.frameNumber == 987_654)
        #expect(r.wallClockMs == UInt32(truncatingIfNeeded: Self.wall))
    }

    @Test(arguments: sizes)
    func survivesAdditiveNoise(size: (Int, Int)) throws {
        let f = rendered(55_555, size.0, size.1)
        var rng = SplitMix64(seed: 7)
        let b = f.buffer
        let y = b.planePointer(0)
        for row in 0..<b.height {
            for x in 0..<b.width {
                let i = row * b.strides[0] + x
                y[i] = UInt8(clamping: Int(y[i]) + Int.random(in: -20...20, using: &rng))
            }
        }
        let r = try #require(TestPattern.read(f))
        #expect(r.frameNumber == 55_555)
    }

    @Test func randomImagesAreRejected() {
        var rng = SplitMix64(seed: 42)
        for _ in 0..<20 {
            let b = makeI420(width: 320, height: 240) { _, _, _ in UInt8.random(in: 0...255, using: &rng) }
            #expect(TestPattern.read(VideoFrame(buffer: b, timestampNs: 0)) == nil)
        }
        // A flat grey or black picture fails the check word too.
        #expect(TestPattern.read(VideoFrame(buffer: makeI420(width: 320, height: 240) { _, _, _ in 16 }, timestampNs: 0)) == nil)
    }

    @Test func tooSmallFramesAreSafe() {
        let b = VideoFrameBuffer(format: .i420, width: 16, height: 8)
        TestPattern.render(frameNumber: 3, wallClockMs: 5, width: 16, height: 8, into: b)
        #expect(TestPattern.read(VideoFrame(buffer: b, timestampNs: 0)) == nil)
        // Odd sizes still round-trip.
        #expect(TestPattern.read(rendered(77, 641, 361))?.frameNumber == 77)
        #expect(TestPattern.read(rendered(78, 33, 25))?.frameNumber == 78)
    }

    @Test func backgroundMovesBetweenFrames() {
        let a = rendered(10, 320, 240), b = rendered(11, 320, 240)
        let band = 3 * (240 / 24)
        var differing = 0
        for y in band..<240 where a.buffer.luma(x: 100, y: y) != b.buffer.luma(x: 100, y: y) { differing += 1 }
        #expect(differing > 0)
        // The square (luma 210 with a ±14 checker texture) is somewhere below the band.
        var squarePixels = 0
        for y in band..<240 {
            for x in 0..<320 where [196, 224].contains(a.buffer.luma(x: x, y: y)) { squarePixels += 1 }
        }
        #expect(squarePixels >= (240 / 6 - 1) * (240 / 6 - 1))
    }
}
