import Testing
@testable import Media

/// `VideoFrameBuffer.maxDimension` is the one frame size limit: the edges of it here, the
/// readers and decoders that apply it in CaptureTests and RenderTests.
@Suite struct FrameSizeLimitTests {
    @Test func validSizesAreOneToMaxDimensionASide() {
        let max = VideoFrameBuffer.maxDimension
        #expect(max == 16384)
        #expect(VideoFrameBuffer.isValidSize(width: 1, height: 1))
        #expect(VideoFrameBuffer.isValidSize(width: max, height: max))
        for (w, h) in [(0, 1), (1, 0), (-1, 5), (max + 1, 1), (1, max + 1), (Int.max, Int.max)] {
            #expect(!VideoFrameBuffer.isValidSize(width: w, height: h), "\(w)x\(h)")
        }
        #expect(VideoFrameBuffer.clampedDimension(max + 1) == max)
        #expect(VideoFrameBuffer.clampedDimension(-3) == 1)
        #expect(VideoFrameBuffer.clampedDimension(1, minimum: 2) == 2)
        #expect(clampSide(Int.max) == max)
    }

    /// A BGRA row `width` pixels wide, copied into a buffer.
    func copyRow(width: Int) throws -> VideoFrameBuffer {
        let pixels = [UInt8](repeating: 0, count: 4 * width)
        return try pixels.withUnsafeBufferPointer { p in
            guard let base = p.baseAddress else { throw MediaError("no pixels") }
            return try VideoFrameBuffer.copy(fromBGRA: base, stride: 4 * width, width: width, height: 1)
        }
    }

    @Test func aCopyOfAPictureOverTheLimitIsRefusedWithTheSize() throws {
        let error = #expect(throws: MediaError.self) { _ = try copyRow(width: VideoFrameBuffer.maxDimension + 1) }
        #expect(error?.description == "frame size 16385x1 out of range 1…16384")
        // The limit itself is a picture (one row keeps it small).
        #expect(try copyRow(width: VideoFrameBuffer.maxDimension).width == VideoFrameBuffer.maxDimension)
    }
}
