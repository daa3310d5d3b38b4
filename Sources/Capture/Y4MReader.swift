#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import CYUV
import Media

/// Reads YUV4MPEG2 (.y4m) files: a text header (`YUV4MPEG2 W.. H.. F..:.. [A..] [I.] [C...]`),
/// then frames each led by a `FRAME` line. 4:2:0 (all siting variants), 4:2:2, 4:4:4 and mono
/// are delivered as I420 buffers from a pool. Errors name the file, the frame and what was wrong.
public final class Y4MReader {
    public enum Colorspace: String, Sendable {
        case c420 = "420", c420jpeg = "420jpeg", c420paldv = "420paldv", c420mpeg2 = "420mpeg2"
        case c422 = "422", c444 = "444", mono = "mono"
    }

    public let path: String
    public let width: Int
    public let height: Int
    /// Frame rate as the F tag gives it (30:1 when the header has none).
    public let frameRateNumerator: Int
    public let frameRateDenominator: Int
    /// Pixel aspect ratio from the A tag (0:0 = unknown).
    public let pixelAspect: (Int, Int)
    /// Interlacing from the I tag (`p`, `t`, `b`, `m`, or `?`).
    public let interlace: Character
    public let colorspace: Colorspace
    /// Number of frames read since opening or the last rewind.
    public private(set) var framesRead = 0

    public var frameRate: Double { Double(frameRateNumerator) / Double(frameRateDenominator) }

    private let file: UnsafeMutablePointer<FILE>
    private let dataStart: Int64
    private let frameBytes: Int
    private let scratch: UnsafeMutableRawPointer
    private var pool: VideoBufferPool
    private var failed = false
    static let maxLine = 4096

    public init(path: String) throws {
        self.path = path
        guard let file = fopen(path, "rb") else {
            throw MediaError("\(path): cannot open: \(String(cString: strerror(errno)))")
        }
        var header: [UInt8]
        do {
            header = try Self.readLine(file, path: path, what: "header")
        } catch {
            fclose(file)
            throw error
        }
        func fail(_ message: String) -> MediaError {
            fclose(file)
            return MediaError("\(path): y4m: \(message)")
        }
        let magic = Array("YUV4MPEG2".utf8)
        guard header.count >= magic.count, Array(header[0..<magic.count]) == magic else {
            throw fail("not a YUV4MPEG2 file (header starts with \(Self.show(header.prefix(16))))")
        }
        var w: Int?, h: Int?, fnum = 30, fden = 1, aspect = (0, 0)
        var interlace: Character = "p", colorspace = Colorspace.c420jpeg
        let tags = header[magic.count...].split(separator: UInt8(ascii: " "))
        for tag in tags {
            guard let key = tag.first else { continue }
            let value = String(decoding: tag.dropFirst(), as: UTF8.self)
            switch key {
            case UInt8(ascii: "W"):
                guard let v = Int(value), (1...VideoFrameBuffer.maxDimension).contains(v) else {
                    throw fail("bad width tag 'W\(value)' (1…\(VideoFrameBuffer.maxDimension))")
                }
                w = v
            case UInt8(ascii: "H"):
                guard let v = Int(value), (1...VideoFrameBuffer.maxDimension).contains(v) else {
                    throw fail("bad height tag 'H\(value)' (1…\(VideoFrameBuffer.maxDimension))")
                }
                h = v
            case UInt8(ascii: "F"):
                guard let r = Self.ratio(value), r.0 > 0, r.1 > 0, Double(r.0) / Double(r.1) <= 1000 else {
                    throw fail("bad frame rate tag 'F\(value)' (want num:den, at most 1000 fps)")
                }
                (fnum, fden) = r
            case UInt8(ascii: "A"):
                guard let r = Self.ratio(value) else { throw fail("bad aspect tag 'A\(value)'") }
                aspect = r
            case UInt8(ascii: "I"):
                guard value.count == 1, let c = value.first, "ptbm?".contains(c) else {
                    throw fail("bad interlace tag 'I\(value)'")
                }
                interlace = c
            case UInt8(ascii: "C"):
                guard let c = Colorspace(rawValue: value) else {
                    throw fail("unsupported colourspace 'C\(value)' (supported: 420jpeg, 420paldv, 420mpeg2, 420, 422, 444, mono)")
                }
                colorspace = c
            case UInt8(ascii: "X"):
                continue   // application comments
            default:
                throw fail("unknown header tag '\(String(decoding: tag, as: UTF8.self))'")
            }
        }
        guard let w else { throw fail("header has no W (width) tag") }
        guard let h else { throw fail("header has no H (height) tag") }
        self.file = file
        self.width = w
        self.height = h
        self.frameRateNumerator = fnum
        self.frameRateDenominator = fden
        self.pixelAspect = aspect
        self.interlace = interlace
        self.colorspace = colorspace
        self.dataStart = Int64(ftello(file))
        let luma = w * h
        switch colorspace {
        case .c420, .c420jpeg, .c420paldv, .c420mpeg2: frameBytes = luma + 2 * ((w + 1) / 2) * ((h + 1) / 2)
        case .c422: frameBytes = luma + 2 * ((w + 1) / 2) * h
        case .c444: frameBytes = 3 * luma
        case .mono: frameBytes = luma
        }
        scratch = UnsafeMutableRawPointer.allocate(byteCount: frameBytes, alignment: 64)
        pool = VideoBufferPool(format: .i420, width: w, height: h)
    }

    deinit {
        fclose(file)
        scratch.deallocate()
    }

    /// Bytes of picture data per frame (without the FRAME line).
    public var bytesPerFrame: Int { frameBytes }

    /// The next frame as an I420 buffer, or nil at the end of the file. Throws for a damaged
    /// frame header or a truncated frame; after an error the reader stays at end of file.
    public func readFrame() throws -> VideoFrameBuffer? {
        if failed { return nil }
        let index = framesRead
        let line: [UInt8]
        do {
            line = try Self.readLine(file, path: path, what: "frame \(index) header")
        } catch {
            failed = true
            throw error
        }
        if line.isEmpty && feof(file) != 0 { return nil }   // clean end of file
        guard line.starts(with: Array("FRAME".utf8)) else {
            failed = true
            throw MediaError("\(path): y4m: frame \(index): expected a FRAME header at byte \(Int(ftello(file)) - line.count - 1), found \(Self.show(line.prefix(16)))")
        }
        let got = fread(scratch, 1, frameBytes, file)
        guard got == frameBytes else {
            failed = true
            throw MediaError("\(path): y4m: frame \(index) truncated (got \(got) of \(frameBytes) bytes)")
        }
        let buffer = pool.get()
        convert(into: buffer)
        framesRead += 1
        return buffer
    }

    /// Goes back to the first frame.
    public func rewind() throws {
        clearerr(file)
        guard fseeko(file, off_t(dataStart), SEEK_SET) == 0 else {
            throw MediaError("\(path): y4m: cannot seek back to the first frame: \(String(cString: strerror(errno)))")
        }
        framesRead = 0
        failed = false
    }

    private func convert(into buffer: VideoFrameBuffer) {
        let w = Int32(width), h = Int32(height)
        let src = scratch.assumingMemoryBound(to: UInt8.self)
        let y = src
        let dy = buffer.planePointer(0), du = buffer.planePointer(1), dv = buffer.planePointer(2)
        let sy = Int32(buffer.strides[0]), su = Int32(buffer.strides[1]), sv = Int32(buffer.strides[2])
        let cw = (width + 1) / 2
        switch colorspace {
        case .c420, .c420jpeg, .c420paldv, .c420mpeg2:
            let u = y + width * height, v = u + cw * ((height + 1) / 2)
            I420Copy(y, w, u, Int32(cw), v, Int32(cw), dy, sy, du, su, dv, sv, w, h)
        case .c422:
            let u = y + width * height, v = u + cw * height
            I422ToI420(y, w, u, Int32(cw), v, Int32(cw), dy, sy, du, su, dv, sv, w, h)
        case .c444:
            let u = y + width * height, v = u + width * height
            I444ToI420(y, w, u, w, v, w, dy, sy, du, su, dv, sv, w, h)
        case .mono:
            I400ToI420(y, w, dy, sy, du, su, dv, sv, w, h)
        }
    }

    /// Reads up to '\n' (not included). Empty at end of file; throws when a line is cut off by
    /// the end of the file or longer than `maxLine`.
    private static func readLine(_ file: UnsafeMutablePointer<FILE>, path: String, what: String) throws -> [UInt8] {
        var line: [UInt8] = []
        while true {
            let c = getc(file)
            if c == EOF {
                if line.isEmpty { return [] }
                throw MediaError("\(path): y4m: \(what) truncated (no newline after \(line.count) bytes)")
            }
            if c == 0x0A { return line }
            line.append(UInt8(truncatingIfNeeded: c))
            if line.count > maxLine {
                throw MediaError("\(path): y4m: \(what) longer than \(maxLine) bytes (not a Y4M file?)")
            }
        }
    }

    private static func ratio(_ s: String) -> (Int, Int)? {
        let parts = s.split(separator: ":", omittingEmptySubsequences: false)
        guard parts.count == 2, let a = Int(parts[0]), let b = Int(parts[1]), a >= 0, b >= 0 else { return nil }
        return (a, b)
    }

    /// Bytes shown for an error message: printable ASCII as is, others as \xNN.
    static func show<S: Sequence>(_ bytes: S) -> String where S.Element == UInt8 {
        var out = "'"
        for b in bytes {
            if b >= 0x20 && b < 0x7F { out.append(Character(Unicode.Scalar(b))) } else { out += "\\x" + String(b, radix: 16) }
        }
        return out + "'"
    }
}
