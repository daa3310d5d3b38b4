import Foundation
import Media
import Testing
import TestSupport
@testable import Render

/// A YUV4MPEG2 file read back: the header's tags and each frame's bytes.
struct Y4MFile {
    var tags: [String]
    var width: Int
    var height: Int
    var frames: [[UInt8]]

    init(_ bytes: [UInt8]) throws {
        guard let nl = bytes.firstIndex(of: 0x0A) else { throw MediaError("Y4M: no header line") }
        let header = String(decoding: bytes[0..<nl], as: UTF8.self)
        tags = header.split(separator: " ").map(String.init)
        guard tags.first == "YUV4MPEG2" else { throw MediaError("Y4M: bad magic \(header)") }
        guard let w = tags.first(where: { $0.hasPrefix("W") }).flatMap({ Int($0.dropFirst()) }),
              let h = tags.first(where: { $0.hasPrefix("H") }).flatMap({ Int($0.dropFirst()) }) else {
            throw MediaError("Y4M: no size in \(header)")
        }
        width = w
        height = h
        let frameSize = w * h + 2 * ((w + 1) / 2) * ((h + 1) / 2)
        frames = []
        var i = nl + 1
        while i < bytes.count {
            guard let end = bytes[i...].firstIndex(of: 0x0A) else { throw MediaError("Y4M: truncated FRAME line at \(i)") }
            guard String(decoding: bytes[i..<end], as: UTF8.self).hasPrefix("FRAME") else {
                throw MediaError("Y4M: expected FRAME at \(i)")
            }
            let start = end + 1
            guard bytes.count - start >= frameSize else { throw MediaError("Y4M: truncated frame at \(start)") }
            frames.append(Array(bytes[start..<(start + frameSize)]))
            i = start + frameSize
        }
    }
}

@Suite struct Y4MFileRendererTests {
    @Test func writesHeaderAndFramesEqualToInputPlanes() throws {
        let dir = try TempDir("render-y4m")
        defer { dir.cleanup() }
        let path = dir.path("out.y4m")
        let renderer = Y4MFileRenderer(path: path)
        let inputs = (0..<5).map { patternI420(width: 64, height: 36, seed: $0) }
        for (i, buf) in inputs.enumerated() {
            renderer.render(VideoFrame(buffer: buf, timestampNs: Int64(i) * 33_333_333))
        }
        renderer.close()
        #expect(renderer.lastError == nil)
        #expect(renderer.framesWritten == 5)
        #expect(renderer.framesDropped == 0)

        let file = try Y4MFile(readFile(path))
        #expect(file.tags == ["YUV4MPEG2", "W64", "H36", "F30:1", "Ip", "A1:1", "C420jpeg"])
        try #require(file.frames.count == 5)
        for i in 0..<5 { #expect(file.frames[i] == packedPlanes(inputs[i]), "frame \(i)") }
    }

    @Test func frameRateTagAndOddSizes() throws {
        let dir = try TempDir("render-y4m-odd")
        defer { dir.cleanup() }
        let path = dir.path("odd.y4m")
        let renderer = Y4MFileRenderer(path: path, frameRate: (30000, 1001))
        let input = patternI420(width: 33, height: 17, seed: 3)
        renderer.render(VideoFrame(buffer: input, timestampNs: 0))
        renderer.close()
        let file = try Y4MFile(readFile(path))
        #expect(file.tags.contains("F30000:1001"))
        #expect(file.width == 33 && file.height == 17)
        #expect(file.frames == [packedPlanes(input)])
    }

    @Test func appliesRotation() throws {
        let dir = try TempDir("render-y4m-rot")
        defer { dir.cleanup() }
        let path = dir.path("rot.y4m")
        let renderer = Y4MFileRenderer(path: path)
        let input = patternI420(width: 64, height: 32, seed: 1)
        renderer.render(VideoFrame(buffer: input, rotation: .r90, timestampNs: 0))
        renderer.close()
        let file = try Y4MFile(readFile(path))
        #expect(file.width == 32 && file.height == 64)
        let frame = try #require(file.frames.first)
        // Rotating 90° clockwise: output (x, y) comes from input (y, H-1-x).
        for (x, y) in [(0, 0), (31, 0), (0, 63), (5, 17), (31, 63)] {
            #expect(frame[y * 32 + x] == input.luma(x: y, y: 31 - x), "luma at \(x),\(y)")
        }
    }

    @Test func convertsNV12AndBGRA() throws {
        let dir = try TempDir("render-y4m-fmt")
        defer { dir.cleanup() }
        let path = dir.path("fmt.y4m")
        let renderer = Y4MFileRenderer(path: path)
        renderer.render(VideoFrame(buffer: ColorBars.nv12(width: 64, height: 16), timestampNs: 0))
        renderer.render(VideoFrame(buffer: ColorBars.bgra(width: 64, height: 16), timestampNs: 1))
        renderer.close()
        let file = try Y4MFile(readFile(path))
        try #require(file.frames.count == 2)
        // NV12 is only de-interleaved: exactly the I420 bars. BGRA goes through BT.601: ±2.
        let bars = packedPlanes(ColorBars.i420(width: 64, height: 16))
        #expect(file.frames[0] == bars)
        let diff = zip(file.frames[1], bars).map { abs(Int($0) - Int($1)) }.max() ?? 99
        #expect(diff <= 2, "BGRA→I420 differs by \(diff)")
    }

    @Test func scalesFramesOfAnotherSizeAndCountsThem() throws {
        let dir = try TempDir("render-y4m-scale")
        defer { dir.cleanup() }
        let path = dir.path("scale.y4m")
        let renderer = Y4MFileRenderer(path: path)
        renderer.render(VideoFrame(buffer: ColorBars.i420(width: 64, height: 32), timestampNs: 0))
        renderer.render(VideoFrame(buffer: ColorBars.i420(width: 128, height: 64), timestampNs: 1))
        renderer.close()
        #expect(renderer.framesScaled == 1)
        #expect(renderer.framesWritten == 2)
        let file = try Y4MFile(readFile(path))
        #expect(file.width == 64 && file.height == 32)
        try #require(file.frames.count == 2)
        // Box-filtered bars keep their centres.
        for bar in 0..<8 {
            let x = bar * 8 + 4
            #expect(abs(Int(file.frames[1][16 * 64 + x]) - Int(file.frames[0][16 * 64 + x])) <= 1)
        }
    }

    @Test func openFailureIsReportedNotTrapped() throws {
        let renderer = Y4MFileRenderer(path: "/nonexistent-dir-\(UUID().uuidString)/x.y4m")
        let error = try #require(renderer.lastError)
        #expect(error.description.contains("cannot open"))
        renderer.render(VideoFrame(buffer: patternI420(width: 16, height: 16, seed: 0), timestampNs: 0))
        renderer.close()
        #expect(renderer.framesWritten == 0)
    }

    @Test func writeFailureIsReported() throws {
        // /dev/full accepts the open and fails every write with ENOSPC.
        guard FileManager.default.fileExists(atPath: "/dev/full") else { return }
        let renderer = Y4MFileRenderer(path: "/dev/full")
        #expect(renderer.lastError == nil)
        renderer.render(VideoFrame(buffer: patternI420(width: 16, height: 16, seed: 0), timestampNs: 0))
        renderer.close()
        let error = try #require(renderer.lastError)
        #expect(error.description.contains("No space left"), "\(error)")
        #expect(renderer.framesWritten == 0)
    }

    @Test func boundedQueueDropsAndCounts() throws {
        let dir = try TempDir("render-y4m-queue")
        defer { dir.cleanup() }
        let path = dir.path("q.y4m")
        let renderer = Y4MFileRenderer(path: path, maxQueuedFrames: 1)
        let buf = patternI420(width: 320, height: 240, seed: 0)
        for i in 0..<50 { renderer.render(VideoFrame(buffer: buf, timestampNs: Int64(i))) }
        renderer.close()
        // How many fit depends on the disk; every frame is either written or counted as dropped.
        #expect(renderer.framesWritten + renderer.framesDropped == 50)
        #expect(renderer.framesWritten >= 1)
        let file = try Y4MFile(readFile(path))
        #expect(file.frames.count == renderer.framesWritten)
        // Closed: later frames are ignored.
        renderer.render(VideoFrame(buffer: buf, timestampNs: 99))
        #expect(renderer.framesWritten + renderer.framesDropped == 50)
    }
}
