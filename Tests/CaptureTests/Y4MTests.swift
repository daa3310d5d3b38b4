import Foundation
import Media
import Testing
import TestSupport
@testable import Capture

/// Writes a Y4M file: `header` tags after the magic, then frames of raw planes.
func writeY4M(_ path: String, header: String, frames: [[UInt8]], frameHeader: String = "FRAME") throws {
    var data = Data("YUV4MPEG2 \(header)\n".utf8)
    for f in frames {
        data.append(contentsOf: Array("\(frameHeader)\n".utf8))
        data.append(contentsOf: f)
    }
    try data.write(to: URL(fileURLWithPath: path))
}

/// Tightly packed I420 planes of a distinct picture per frame index.
func i420Frame(_ w: Int, _ h: Int, index: Int) -> [UInt8] {
    let cw = (w + 1) / 2, ch = (h + 1) / 2
    var out: [UInt8] = []
    for y in 0..<h { for x in 0..<w { out.append(UInt8((x + 3 * y + 17 * index) & 0xFF)) } }
    for y in 0..<ch { for x in 0..<cw { out.append(UInt8((2 * x + y + 5 * index) & 0xFF)) } }
    for y in 0..<ch { for x in 0..<cw { out.append(UInt8((x + 2 * y + 9 * index) & 0xFF)) } }
    return out
}

@Suite struct Y4MTests {
    @Test func framesReadBackEqual() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("clip.y4m")
        let (w, h) = (66, 50)
        let frames = (0..<3).map { i420Frame(w, h, index: $0) }
        try writeY4M(path, header: "W\(w) H\(h) F30000:1001 Ip A1:1 C420mpeg2 XYSCSS=420MPEG2", frames: frames)
        let reader = try Y4MReader(path: path)
        #expect(reader.width == w && reader.height == h)
        #expect(abs(reader.frameRate - 29.97) < 0.01)
        #expect(reader.colorspace == .c420mpeg2)
        #expect(reader.interlace == "p")
        for i in 0..<3 {
            let b = try #require(try reader.readFrame())
            #expect(planes(b).flatMap { $0 } == frames[i])
        }
        #expect(try reader.readFrame() == nil)
        #expect(try reader.readFrame() == nil)
        try reader.rewind()
        #expect(planes(try #require(try reader.readFrame())).flatMap { $0 } == frames[0])
    }

    @Test func otherChromaLayoutsBecomeI420() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let (w, h) = (32, 16)
        let luma = [UInt8]((0..<(w * h)).map { UInt8($0 & 0xFF) })
        // 4:4:4 with flat chroma 100 / 200.
        try writeY4M(dir.path("a.y4m"), header: "W\(w) H\(h) F25:1 C444",
                     frames: [luma + [UInt8](repeating: 100, count: w * h) + [UInt8](repeating: 200, count: w * h)])
        let b444 = try #require(try Y4MReader(path: dir.path("a.y4m")).readFrame())
        #expect(planes(b444)[0] == luma)
        #expect(planes(b444)[1].allSatisfy { $0 == 100 })
        #expect(planes(b444)[2].allSatisfy { $0 == 200 })
        // 4:2:2.
        try writeY4M(dir.path("b.y4m"), header: "W\(w) H\(h) F25:1 C422",
                     frames: [luma + [UInt8](repeating: 90, count: w * h / 2) + [UInt8](repeating: 160, count: w * h / 2)])
        let b422 = try #require(try Y4MReader(path: dir.path("b.y4m")).readFrame())
        #expect(planes(b422)[1].allSatisfy { $0 == 90 })
        #expect(planes(b422)[2].allSatisfy { $0 == 160 })
        // Mono: neutral chroma.
        try writeY4M(dir.path("c.y4m"), header: "W\(w) H\(h) F25:1 Cmono", frames: [luma])
        let mono = try #require(try Y4MReader(path: dir.path("c.y4m")).readFrame())
        #expect(planes(mono)[0] == luma)
        #expect(planes(mono)[1].allSatisfy { $0 == 128 })
    }

    @Test func corruptHeadersGiveClearErrors() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        func error(_ header: String) throws -> String {
            let path = dir.path("h.y4m")
            try writeY4M(path, header: header, frames: [])
            do {
                _ = try Y4MReader(path: path)
                return "no error"
            } catch let e as MediaError {
                #expect(e.description.hasPrefix(path))
                return e.description
            }
        }
        #expect(try error("W64 Habc F30:1").contains("bad height tag 'Habc'"))
        #expect(try error("H48 F30:1").contains("no W (width) tag"))
        #expect(try error("W64 H48 F30:0").contains("bad frame rate tag 'F30:0'"))
        #expect(try error("W64 H48 F30:1 C420p10").contains("unsupported colourspace 'C420p10'"))
        #expect(try error("W99999 H48").contains("bad width tag"))
        #expect(try error("W64 H48 Q7").contains("unknown header tag 'Q7'"))
        // Not a Y4M file at all.
        let other = dir.path("x.y4m")
        try Data("RIFF....WAVEfmt ".utf8 + [0x0A]).write(to: URL(fileURLWithPath: other))
        #expect(throws: MediaError.self) { try Y4MReader(path: other) }
        do { _ = try Y4MReader(path: other) } catch let e as MediaError {
            #expect(e.description.contains("not a YUV4MPEG2 file"))
        }
        // A header cut off before its newline.
        try Data("YUV4MPEG2 W64 H4".utf8).write(to: URL(fileURLWithPath: other))
        do { _ = try Y4MReader(path: other); Issue.record("expected an error") } catch let e as MediaError {
            #expect(e.description.contains("header truncated"))
        }
    }

    @Test func truncatedFrameIsReportedWithSizes() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("t.y4m")
        let (w, h) = (64, 48)
        let full = i420Frame(w, h, index: 0)
        try writeY4M(path, header: "W\(w) H\(h) F30:1", frames: [full, full, Array(full.prefix(1000))])
        let reader = try Y4MReader(path: path)
        _ = try reader.readFrame()
        _ = try reader.readFrame()
        do {
            _ = try reader.readFrame()
            Issue.record("expected a truncation error")
        } catch let e as MediaError {
            #expect(e.description == "\(path): y4m: frame 2 truncated (got 1000 of \(w * h * 3 / 2) bytes)")
        }
        #expect(try reader.readFrame() == nil)   // stays at the end after an error
    }

    @Test func badFrameMarkerIsReported() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("m.y4m")
        try writeY4M(path, header: "W8 H8 F30:1", frames: [i420Frame(8, 8, index: 0)], frameHeader: "FRAMX")
        do {
            _ = try Y4MReader(path: path).readFrame()
            Issue.record("expected an error")
        } catch let e as MediaError {
            #expect(e.description.contains("frame 0: expected a FRAME header at byte"))
            #expect(e.description.contains("'FRAMX'"))
        }
    }

    @Test func fileCapturerReadsAndLoopsY4M() throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("loop.y4m")
        let frames = (0..<3).map { i420Frame(32, 24, index: $0) }
        try writeY4M(path, header: "W32 H24 F15:1", frames: frames)

        let once = FileVideoCapturer(path: path)
        #expect(try once.frameRate() == 15)
        #expect(try once.size().width == 32)
        #expect(try once.size().height == 24)
        for i in 0..<3 {
            let f = try #require(try once.readNextFrame(timestampNs: Int64(i)))
            #expect(f.timestampNs == Int64(i))
            #expect(planes(f.buffer).flatMap { $0 } == frames[i])
        }
        #expect(try once.readNextFrame() == nil)

        let looping = FileVideoCapturer(path: path, loop: true)
        var seen: [[UInt8]] = []
        for _ in 0..<7 { seen.append(planes(try #require(try looping.readNextFrame()).buffer).flatMap { $0 }) }
        #expect(seen == [frames[0], frames[1], frames[2], frames[0], frames[1], frames[2], frames[0]])
    }

    @Test func fileCapturerThreadDeliversThenEnds() async throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("run.y4m")
        // Frames carry the test pattern so the delegate can check order.
        var frames: [[UInt8]] = []
        for n in 0..<5 {
            let b = VideoFrameBuffer(format: .i420, width: 64, height: 48)
            TestPattern.render(frameNumber: UInt32(n), wallClockMs: 9, width: 64, height: 48, into: b)
            frames.append(planes(b).flatMap { $0 })
        }
        try writeY4M(path, header: "W64 H48 F200:1", frames: frames)
        let collector = FrameCollector(target: 5)
        var capturer: FileVideoCapturer? = FileVideoCapturer(path: path, delegate: collector)
        let events = try #require(capturer).events
        try capturer?.start()
        #expect(await firstEvent(events) == .ended)
        capturer?.stop()
        #expect(collector.numbers == [0, 1, 2, 3, 4])
        #expect(capturer?.isRunning == false)
        capturer = nil
        #expect(await remainingEvents(events) == [], "ended once")
    }

    @Test func fileCapturerReportsMidFileErrors() async throws {
        let dir = try TempDir(); defer { dir.cleanup() }
        let path = dir.path("bad.y4m")
        let full = i420Frame(16, 16, index: 1)
        try writeY4M(path, header: "W16 H16 F200:1", frames: [full, full, Array(full.prefix(10))])
        let collector = FrameCollector(target: 2)
        let capturer = FileVideoCapturer(path: path, loop: true, delegate: collector)
        try capturer.start()
        let failure = await firstEvent(capturer.events)
        capturer.stop()
        guard case .failed(let error)? = failure else { Issue.record("no failure: \(String(describing: failure))"); return }
        #expect(error.description.contains("frame 2 truncated (got 10 of 384 bytes)"), "\(error)")
        #expect(collector.numbers.count == 2)
    }
}
