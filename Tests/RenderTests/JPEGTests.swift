import Media
import Testing
@testable import Render

@Suite struct JPEGTests {
    /// Mean of plane `plane` over the block [x0, x1)×[y0, y1) (plane coordinates).
    private func mean(_ b: VideoFrameBuffer, plane: Int, x0: Int, x1: Int, y0: Int, y1: Int) -> Double {
        var sum = 0, n = 0
        for y in y0..<y1 {
            for x in x0..<x1 {
                sum += Int(b.planePointer(plane)[y * b.strides[plane] + x]); n += 1
            }
        }
        return Double(sum) / Double(n)
    }

    @Test func colourBarsSurviveARoundTrip() throws {
        let w = 256, h = 64
        let source = ColorBars.i420(width: w, height: h)
        let jpeg = try JPEGEncoder.encode(VideoFrame(buffer: source, timestampNs: 0), quality: 90)
        #expect(jpeg.prefix(3) == [0xFF, 0xD8, 0xFF])
        #expect(jpeg.suffix(2) == [0xFF, 0xD9])
        let decoded = try JPEGDecoder.decode(jpeg)
        #expect(decoded.width == w && decoded.height == h && decoded.format == .i420)
        for bar in 0..<8 {
            // The middle of each bar, away from the edges JPEG's blocks blur.
            let x0 = bar * w / 8 + 8, x1 = (bar + 1) * w / 8 - 8
            let expected = ColorBars.yuv(ColorBars.rgb[bar])
            let y = mean(decoded.buffer, plane: 0, x0: x0, x1: x1, y0: 8, y1: h - 8)
            let u = mean(decoded.buffer, plane: 1, x0: x0 / 2, x1: x1 / 2, y0: 4, y1: h / 2 - 4)
            let v = mean(decoded.buffer, plane: 2, x0: x0 / 2, x1: x1 / 2, y0: 4, y1: h / 2 - 4)
            #expect(abs(y - Double(expected.y)) < 4, "bar \(bar) Y \(y) vs \(expected.y)")
            #expect(abs(u - Double(expected.u)) < 5, "bar \(bar) U \(u) vs \(expected.u)")
            #expect(abs(v - Double(expected.v)) < 5, "bar \(bar) V \(v) vs \(expected.v)")
        }
    }

    @Test func rotationIsAppliedLikePNG() throws {
        // 64x32 frame, left half white, right half black, rotated 90° clockwise: upright it is
        // 32x64 with white on top.
        let b = VideoFrameBuffer(format: .i420, width: 64, height: 32)
        for y in 0..<32 { for x in 0..<64 { b.planePointer(0)[y * b.strides[0] + x] = x < 32 ? 235 : 16 } }
        for y in 0..<16 { for x in 0..<32 { b.planePointer(1)[y * b.strides[1] + x] = 128; b.planePointer(2)[y * b.strides[2] + x] = 128 } }
        let jpeg = try JPEGEncoder.encode(VideoFrame(buffer: b, rotation: .r90, timestampNs: 0))
        let size = try JPEGDecoder.size(of: jpeg)
        #expect(size.width == 32 && size.height == 64)
        let decoded = try JPEGDecoder.decode(jpeg).buffer
        #expect(mean(decoded, plane: 0, x0: 4, x1: 28, y0: 4, y1: 28) > 225)
        #expect(mean(decoded, plane: 0, x0: 4, x1: 28, y0: 36, y1: 60) < 26)
    }

    @Test func bgraAndNV12FramesEncode() throws {
        for buffer in [ColorBars.bgra(width: 64, height: 16), ColorBars.nv12(width: 64, height: 16)] {
            let jpeg = try JPEGEncoder.encode(VideoFrame(buffer: buffer, timestampNs: 0), quality: 75)
            let decoded = try JPEGDecoder.decode(jpeg)
            #expect(decoded.width == 64 && decoded.height == 16)
            // White bar stays bright, black bar stays dark.
            #expect(mean(decoded.buffer, plane: 0, x0: 1, x1: 6, y0: 2, y1: 14) > 225)
            #expect(mean(decoded.buffer, plane: 0, x0: 58, x1: 63, y0: 2, y1: 14) < 26)
        }
    }

    @Test func garbageIsAnError() {
        let inputs: [[UInt8]] = [[], [0xFF], [0xFF, 0xD8], Array("definitely not a jpeg file".utf8),
                                 [UInt8](repeating: 0xFF, count: 100), (0..<1000).map { UInt8(truncatingIfNeeded: $0 &* 37) }]
        for input in inputs {
            #expect(throws: MediaError.self) { try JPEGDecoder.decode(input) }
        }
        do {
            _ = try JPEGDecoder.decode(Array("GIF89a not a jpeg".utf8))
            Issue.record("garbage decoded")
        } catch {
            #expect(error.description.contains("JPEGDecoder"))
            #expect(error.description.contains("Not a JPEG"))
        }
    }

    @Test func truncatedAndCorruptedFilesAreErrors() throws {
        let jpeg = try JPEGEncoder.encode(VideoFrame(buffer: ColorBars.i420(width: 128, height: 64), timestampNs: 0))
        // Cut at many places: the header, the tables, the middle of the scan, just before EOI.
        for cut in [2, 10, 100, jpeg.count / 2, jpeg.count - 40] {
            #expect(throws: MediaError.self, "cut at \(cut)") { try JPEGDecoder.decode(Array(jpeg.prefix(cut))) }
        }
        // A header claiming a huge picture is refused before anything is allocated.
        var huge = jpeg
        if let sof = (0..<(huge.count - 8)).first(where: { huge[$0] == 0xFF && huge[$0 + 1] == 0xC0 }) {
            huge[sof + 5] = 0xFF; huge[sof + 6] = 0xFF   // height 65535
            #expect(throws: MediaError.self) { try JPEGDecoder.decode(huge) }
        } else {
            Issue.record("no SOF0 marker in our own JPEG")
        }
    }

    @Test func encodeRejectsWrongByteCount() {
        #expect(throws: MediaError.self) { try JPEGEncoder.encode(rgb: [1, 2, 3], width: 2, height: 2) }
    }
}
