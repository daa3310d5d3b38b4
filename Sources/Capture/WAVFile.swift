#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Media

/// Reads RIFF WAVE files holding 16-bit PCM (format 1, or WAVE_FORMAT_EXTENSIBLE with the PCM
/// sub-format), mono or stereo, 8–48 kHz. Anything else is refused with a message saying what
/// the file holds.
public final class WAVReader {
    public let path: String
    public let sampleRate: Int
    public let channels: Int
    /// Sample frames (one sample per channel) in the data chunk.
    public let frameCount: Int
    /// Frames read since opening or the last rewind.
    public private(set) var framesRead = 0

    private let file: UnsafeMutablePointer<FILE>
    private let dataOffset: Int

    public init(path: String) throws {
        self.path = path
        guard let file = fopen(path, "rb") else {
            throw MediaError("\(path): cannot open: \(String(cString: strerror(errno)))")
        }
        func fail(_ message: String) -> MediaError {
            fclose(file)
            return MediaError("\(path): wav: \(message)")
        }
        var st = stat()
        let fileSize = fstat(fileno(file), &st) == 0 ? Int(st.st_size) : Int.max
        var riff = [UInt8](repeating: 0, count: 12)
        guard fread(&riff, 1, 12, file) == 12 else { throw fail("file too short for a RIFF header (\(max(0, fileSize)) bytes)") }
        guard riff[0..<4].elementsEqual("RIFF".utf8), riff[8..<12].elementsEqual("WAVE".utf8) else {
            throw fail("not a RIFF WAVE file (starts with \(Y4MReader.show(riff.prefix(12))))")
        }
        var format: (tag: Int, channels: Int, rate: Int, blockAlign: Int, bits: Int)?
        var offset = 12
        while true {
            var header = [UInt8](repeating: 0, count: 8)
            guard fread(&header, 1, 8, file) == 8 else {
                throw fail(format == nil ? "no fmt chunk" : "no data chunk")
            }
            let id = String(decoding: header[0..<4], as: UTF8.self)
            let size = Int(Self.le32(header, 4))
            offset += 8
            if id == "fmt " {
                guard size >= 16, size <= 4096 else { throw fail("fmt chunk at byte \(offset - 8) has bad size \(size)") }
                var body = [UInt8](repeating: 0, count: size)
                guard fread(&body, 1, size, file) == size else { throw fail("fmt chunk truncated") }
                var tag = Int(Self.le16(body, 0))
                if tag == 0xFFFE {
                    guard size >= 40 else { throw fail("WAVE_FORMAT_EXTENSIBLE fmt chunk too short (\(size) bytes)") }
                    tag = Int(Self.le16(body, 24))   // first two bytes of the sub-format GUID
                }
                format = (tag, Int(Self.le16(body, 2)), Int(Self.le32(body, 4)), Int(Self.le16(body, 12)), Int(Self.le16(body, 14)))
                if size % 2 == 1 { fseeko(file, 1, SEEK_CUR) }
                offset += size + size % 2
            } else if id == "data" {
                guard let format else { throw fail("data chunk at byte \(offset - 8) comes before the fmt chunk") }
                let names = [1: "PCM", 2: "MS ADPCM", 3: "IEEE float", 6: "A-law", 7: "µ-law", 0x11: "IMA ADPCM", 0x55: "MP3"]
                guard format.tag == 1 else {
                    throw fail("unsupported encoding \(format.tag) (\(names[format.tag] ?? "unknown")); only 16-bit PCM is supported")
                }
                guard format.bits == 16 else { throw fail("unsupported sample size \(format.bits) bits; only 16-bit PCM is supported") }
                guard format.channels == 1 || format.channels == 2 else {
                    throw fail("unsupported channel count \(format.channels) (mono or stereo only)")
                }
                guard (8000...48000).contains(format.rate) else {
                    throw fail("unsupported sample rate \(format.rate) Hz (8000–48000)")
                }
                guard format.blockAlign == 2 * format.channels else {
                    throw fail("block align \(format.blockAlign) does not match \(format.channels) channel(s) of 16 bits")
                }
                // Streamed files may leave the size at 0 or 0xFFFFFFFF: trust the file's length.
                let available = max(0, fileSize - offset)
                let bytes = (size == 0 || size == 0xFFFF_FFFF) ? available : min(size, available)
                self.file = file
                sampleRate = format.rate
                channels = format.channels
                frameCount = bytes / format.blockAlign
                dataOffset = offset
                return
            } else {
                // LIST, fact, cue…: skip (chunks are padded to even length).
                guard fseeko(file, off_t(size + size % 2), SEEK_CUR) == 0 else { throw fail("chunk '\(id)' runs past the end") }
                offset += size + size % 2
            }
            guard offset < fileSize else { throw fail(format == nil ? "no fmt chunk" : "no data chunk") }
        }
    }

    deinit { fclose(file) }

    public var durationSeconds: Double { Double(frameCount) / Double(sampleRate) }

    /// Up to `maxFrames` interleaved sample frames; empty at the end of the data.
    public func read(maxFrames: Int) throws -> [Int16] {
        let frames = min(max(0, maxFrames), frameCount - framesRead)
        guard frames > 0 else { return [] }
        var samples = [Int16](repeating: 0, count: frames * channels)
        let got = samples.withUnsafeMutableBytes { fread($0.baseAddress, 2 * channels, frames, file) }
        guard got == frames else {
            let at = framesRead + got
            framesRead = frameCount
            throw MediaError("\(path): wav: data truncated at sample frame \(at) of \(frameCount)")
        }
        framesRead += frames
        #if _endian(big)
        for i in samples.indices { samples[i] = Int16(littleEndian: samples[i]) }
        #endif
        return samples
    }

    /// Back to the first sample.
    public func rewind() throws {
        clearerr(file)
        guard fseeko(file, off_t(dataOffset), SEEK_SET) == 0 else {
            throw MediaError("\(path): wav: cannot seek back to the data: \(String(cString: strerror(errno)))")
        }
        framesRead = 0
    }

    static func le16(_ b: [UInt8], _ i: Int) -> UInt16 { UInt16(b[i]) | UInt16(b[i + 1]) << 8 }
    static func le32(_ b: [UInt8], _ i: Int) -> UInt32 {
        UInt32(b[i]) | UInt32(b[i + 1]) << 8 | UInt32(b[i + 2]) << 16 | UInt32(b[i + 3]) << 24
    }
}

/// Writes 16-bit PCM WAV files. The RIFF and data sizes are patched in by `close()` (or deinit).
public final class WAVWriter {
    public let path: String
    public let sampleRate: Int
    public let channels: Int
    public private(set) var framesWritten = 0
    private var file: UnsafeMutablePointer<FILE>?

    public init(path: String, sampleRate: Int = 48000, channels: Int = 1) throws {
        guard (1...384_000).contains(sampleRate), (1...8).contains(channels) else {
            throw MediaError("\(path): wav: cannot write \(channels) channel(s) at \(sampleRate) Hz")
        }
        self.path = path
        self.sampleRate = sampleRate
        self.channels = channels
        guard let file = fopen(path, "wb") else {
            throw MediaError("\(path): cannot create: \(String(cString: strerror(errno)))")
        }
        self.file = file
        try writeHeader(dataBytes: 0)
    }

    deinit { try? close() }

    /// Appends interleaved samples (a whole number of frames).
    public func write(_ samples: [Int16]) throws {
        guard let file else { throw MediaError("\(path): wav: writer is closed") }
        guard samples.count % channels == 0 else {
            throw MediaError("\(path): wav: \(samples.count) samples is not a whole number of \(channels)-channel frames")
        }
        guard UInt64(framesWritten + samples.count / channels) * UInt64(2 * channels) <= UInt64(UInt32.max) - 36 else {
            throw MediaError("\(path): wav: file would exceed the 4 GiB RIFF limit")
        }
        #if _endian(big)
        let data = samples.map { $0.littleEndian }
        #else
        let data = samples
        #endif
        let n = data.withUnsafeBytes { fwrite($0.baseAddress, 2, data.count, file) }
        guard n == data.count else { throw MediaError("\(path): wav: write failed: \(String(cString: strerror(errno)))") }
        framesWritten += samples.count / channels
    }

    /// Appends an audio frame (must match the writer's rate and channel count).
    public func write(_ frame: AudioFrame) throws {
        guard frame.sampleRate == sampleRate, frame.channels == channels else {
            throw MediaError("\(path): wav: frame is \(frame.channels) ch at \(frame.sampleRate) Hz, file is \(channels) ch at \(sampleRate) Hz")
        }
        try write(frame.int16Samples)
    }

    /// Patches the header sizes and closes the file. Idempotent.
    public func close() throws {
        guard let file else { return }
        defer { fclose(file); self.file = nil }
        guard fseeko(file, 0, SEEK_SET) == 0 else {
            throw MediaError("\(path): wav: cannot seek to patch the header")
        }
        try writeHeader(dataBytes: framesWritten * 2 * channels)
        guard fflush(file) == 0 else { throw MediaError("\(path): wav: flush failed: \(String(cString: strerror(errno)))") }
    }

    private func writeHeader(dataBytes: Int) throws {
        guard let file else { return }
        var h: [UInt8] = []
        func u32(_ v: Int) { let x = UInt32(truncatingIfNeeded: v); h += [UInt8(x & 0xFF), UInt8(x >> 8 & 0xFF), UInt8(x >> 16 & 0xFF), UInt8(x >> 24)] }
        func u16(_ v: Int) { h += [UInt8(v & 0xFF), UInt8(v >> 8 & 0xFF)] }
        h += Array("RIFF".utf8); u32(36 + dataBytes); h += Array("WAVE".utf8)
        h += Array("fmt ".utf8); u32(16); u16(1); u16(channels); u32(sampleRate)
        u32(sampleRate * channels * 2); u16(channels * 2); u16(16)
        h += Array("data".utf8); u32(dataBytes)
        guard fwrite(h, 1, h.count, file) == h.count else {
            throw MediaError("\(path): wav: writing the header failed: \(String(cString: strerror(errno)))")
        }
    }
}
