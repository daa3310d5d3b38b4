import Media
import Testing
@testable import Render

/// Image decoders refuse a picture over `VideoFrameBuffer.maxDimension` before they allocate,
/// with the size and the limit; the limit itself decodes.
@Suite struct RenderFrameSizeLimitTests {
    let max = VideoFrameBuffer.maxDimension

    @Test func jpegOverTheLimitIsRefusedBeforeDecoding() throws {
        // JPEG goes to 65500 a side: a real file one pixel wider than a frame may be.
        let wide = try JPEGEncoder.encode(rgb: [UInt8](repeating: 90, count: (max + 1) * 8 * 3), width: max + 1, height: 8)
        #expect(try JPEGDecoder.size(of: wide) == (max + 1, 8))
        let error = #expect(throws: MediaError.self) { _ = try JPEGDecoder.decode(wide) }
        #expect(error?.description == "JPEGDecoder: picture size 16385x8 out of range 1…16384")
        let atLimit = try JPEGEncoder.encode(rgb: [UInt8](repeating: 90, count: max * 8 * 3), width: max, height: 8)
        #expect(try JPEGDecoder.decode(atLimit).width == max)
    }

    @Test func pngOverTheLimitIsRefusedBothWays() throws {
        let rgb = [UInt8](repeating: 200, count: (max + 1) * 3)
        #expect(throws: MediaError.self) { _ = try PNGEncoder.encode(rgb: rgb, width: max + 1, height: 1) }
        // A file made anyway (the unchecked writer) is refused at its IHDR.
        let wide = PNGEncoder.encodeChecked(rgb: rgb, width: max + 1, height: 1, compressionLevel: 1)
        let error = #expect(throws: PNGError.self) { _ = try PNGDecoder.decodeRGB(wide) }
        #expect(error?.message == "image size 16385x1 is zero or too large")
        let atLimit = try PNGEncoder.encode(rgb: Array(rgb.dropLast(3)), width: max, height: 1)
        #expect(try PNGDecoder.decodeRGB(atLimit).width == max)
    }
}
