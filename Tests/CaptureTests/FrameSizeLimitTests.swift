import Media
import TestSupport
import Testing
@testable import Capture

/// File readers and the test pattern refuse a picture over `VideoFrameBuffer.maxDimension`
/// with an error naming the size and the limit; the limit itself is taken.
@Suite struct CaptureFrameSizeLimitTests {
    @Test func y4mHeadersOverTheLimitAreRefusedAndTheLimitIsRead() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let max = VideoFrameBuffer.maxDimension
        func open(_ header: String, frames: [[UInt8]] = []) throws -> Y4MReader {
            let path = dir.path("limit.y4m")
            try writeY4M(path, header: header, frames: frames)
            return try Y4MReader(path: path)
        }
        let wide = #expect(throws: MediaError.self) { _ = try open("W\(max + 1) H2 F30:1") }
        #expect(wide?.description.hasSuffix("bad width tag 'W16385' (1…16384)") == true, "\(wide?.description ?? "")")
        let tall = #expect(throws: MediaError.self) { _ = try open("W2 H\(max + 1) F30:1") }
        #expect(tall?.description.hasSuffix("bad height tag 'H16385' (1…16384)") == true, "\(tall?.description ?? "")")
        // A 16384×2 picture (one frame of 49,152 bytes) is read.
        let reader = try open("W\(max) H2 F30:1", frames: [[UInt8](repeating: 128, count: max * 2 * 3 / 2)])
        let frame = try #require(try reader.readFrame())
        #expect(frame.width == max && frame.height == 2)
    }

    @Test func theTestPatternRefusesSizesOverTheLimitAndClampsManualFrames() throws {
        let max = VideoFrameBuffer.maxDimension
        let capturer = TestPatternCapturer()
        let error = #expect(throws: MediaError.self) { try capturer.start(width: max + 1, height: 16, fps: 30) }
        #expect(error?.description == "test pattern: frame size 16385x16 out of range (2…16384)")
        let frame = capturer.captureFrame(at: 0, width: max + 1000, height: 1)
        #expect(frame.width == max && frame.height == 2)
    }
}
