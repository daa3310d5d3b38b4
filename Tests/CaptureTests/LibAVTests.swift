import Foundation
import Media
import Testing
import TestSupport
@testable import Capture

/// Test files are made here with libavcodec (Debian ships no ffmpeg CLI on this machine; the
/// library encoders are always present): frames carry the test pattern.
func writePatternVideo(_ path: String, codec: String, frames: Int, width: Int = 320, height: Int = 240,
                       fps: Int = 25) throws -> [VideoFrameBuffer] {
    let writer = try VideoFileWriter(path: path, width: width, height: height, fps: fps, codec: codec, bitrate: 4_000_000)
    var sources: [VideoFrameBuffer] = []
    for n in 0..<frames {
        let b = VideoFrameBuffer(format: .i420, width: width, height: height)
        TestPattern.render(frameNumber: UInt32(n), wallClockMs: 123_456, width: width, height: height, into: b)
        try writer.write(VideoFrame(buffer: b, timestampNs: Int64(n)))
        sources.append(b)
    }
    try writer.finish()
    return sources
}

@Suite struct LibAVTests {
    @Test func decodesLossyMPEG4InMatroska() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("clip.mkv")
        _ = try writePatternVideo(path, codec: "mpeg4", frames: 12)
        let capturer = FileVideoCapturer(path: path)
        #expect(try capturer.frameRate() == 25)
        #expect(try capturer.size().width == 320)
        var numbers: [UInt32?] = []
        while let f = try capturer.readNextFrame() {
            #expect(f.width == 320 && f.height == 240 && f.format == .i420)
            numbers.append(TestPattern.read(f)?.frameNumber)
        }
        #expect(numbers == (0..<12).map { Optional(UInt32($0)) })
    }

    @Test func decodesLosslessFFV1Exactly() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("lossless.mkv")
        let sources = try writePatternVideo(path, codec: "ffv1", frames: 4, width: 176, height: 144, fps: 10)
        let reader = try LibAVVideoReader(path: path)
        #expect(reader.codecName == "ffv1")
        #expect(reader.frameRate == 10)
        for src in sources {
            let b = try #require(try reader.readFrame())
            #expect(planes(b) == planes(src))
        }
        #expect(try reader.readFrame() == nil)
    }

    @Test(arguments: ["mp4", "mkv", "avi"])
    func loopsBackToTheFirstFrame(container: String) throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("loop.\(container)")
        _ = try writePatternVideo(path, codec: "mpeg4", frames: 5, fps: 30)
        let capturer = FileVideoCapturer(path: path, loop: true)
        #expect(try capturer.frameRate() == 30)
        var numbers: [UInt32?] = []
        for _ in 0..<12 { numbers.append(TestPattern.read(try #require(try capturer.readNextFrame()))?.frameNumber) }
        #expect(numbers == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1])
    }

    @Test func threadedPlaybackOfAContainerFile() async throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("fast.mkv")
        _ = try writePatternVideo(path, codec: "mpeg4", frames: 6, width: 160, height: 120, fps: 200)
        let collector = FrameCollector(target: 6)
        let capturer = FileVideoCapturer(path: path, delegate: collector)
        try capturer.start()
        #expect(await firstEvent(capturer.events) == .ended)
        capturer.stop()
        #expect(collector.numbers == [0, 1, 2, 3, 4, 5])
    }

    @Test func unreadableFilesFailAtStartWithPathAndReason() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        func startError(_ path: String) -> String? {
            let capturer = FileVideoCapturer(path: path)
            do {
                try capturer.start()
                capturer.stop()
                return nil
            } catch let e as MediaError {
                return e.description
            } catch {
                return "\(error)"
            }
        }
        let missing = dir.path("missing.mp4")
        let m = try #require(startError(missing))
        #expect(m.hasPrefix(missing))
        #expect(m.contains("No such file or directory"))

        let text = dir.path("notes.txt")
        try Data("Shopping list\n- milk\n- eggs\n".utf8).write(to: URL(fileURLWithPath: text))
        let t = try #require(startError(text))
        #expect(t.hasPrefix(text))
        #expect(t.contains("not a video file"))

        // Text with ANSI escapes is "video" to libavformat's tty demuxer; still not a video file.
        let ansi = dir.path("art.txt")
        try Data("\u{1B}[0m\u{1B}[1;31mHello\u{1B}[0m world\r\n".utf8).write(to: URL(fileURLWithPath: ansi))
        let s = try #require(startError(ansi))
        #expect(s.hasPrefix(ansi))
        #expect(s.contains("not a video file"))

        let noExt = dir.path("readme")
        try Data(String(repeating: "plain words, not pictures. ", count: 200).utf8).write(to: URL(fileURLWithPath: noExt))
        let n = try #require(startError(noExt))
        #expect(n.hasPrefix(noExt))
        #expect(n.contains("not a video file"))

        let empty = dir.path("empty.mkv")
        try Data().write(to: URL(fileURLWithPath: empty))
        #expect(startError(empty) == "\(empty): file is empty")
        #expect(startError(dir.url.path) == "\(dir.url.path): is a directory, not a video file")

        // An audio-only file has no video stream.
        let wav = dir.path("tone.wav")
        let w = try WAVWriter(path: wav, sampleRate: 16000)
        try w.write(ToneCapturer(frequency: 440).nextFrame().int16Samples)
        try w.close()
        let a = try #require(startError(wav))
        #expect(a.contains("no video stream"))
    }

    @Test func truncatedContainerEndsOrReportsWithoutCrashing() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("cut.mkv")
        _ = try writePatternVideo(path, codec: "mpeg4", frames: 10)
        var data = try Data(contentsOf: URL(fileURLWithPath: path))
        data = data.prefix(data.count / 2)
        try data.write(to: URL(fileURLWithPath: path))
        let capturer = FileVideoCapturer(path: path)
        var frames = 0
        do {
            while try capturer.readNextFrame() != nil { frames += 1 }
        } catch let e as MediaError {
            #expect(e.description.hasPrefix(path))
        }
        #expect(frames < 10)
    }
}
