import Foundation
import Media
import Testing
@testable import Render

@Suite struct PNGEncoderTests {
    /// Decodes `png` and checks the centre of each of the 8 vertical bars.
    func expectBars(_ png: [UInt8], width: Int, height: Int, tolerance: Int = 3) throws {
        let image = try PNGDecoder.decodeRGB(png)
        #expect(image.width == width && image.height == height)
        for bar in 0..<8 {
            let x = bar * width / 8 + width / 16
            for y in [0, height / 2, height - 1] {
                let got = rgbAt(image.rgb, width: width, x: x, y: y)
                #expect(close(got, ColorBars.rgb[bar], within: tolerance), "bar \(bar) at \(x),\(y): \(got)")
            }
        }
    }

    @Test func i420ColorBarsRoundTripWithin3() throws {
        try expectBars(PNGEncoder.encode(VideoFrame(buffer: ColorBars.i420(width: 128, height: 32), timestampNs: 0)),
                       width: 128, height: 32)
    }

    @Test func nv12AndBGRAColorBars() throws {
        try expectBars(PNGEncoder.encode(VideoFrame(buffer: ColorBars.nv12(width: 128, height: 32), timestampNs: 0)),
                       width: 128, height: 32)
        // BGRA needs no colour conversion: exact.
        try expectBars(PNGEncoder.encode(VideoFrame(buffer: ColorBars.bgra(width: 64, height: 8), timestampNs: 0)),
                       width: 64, height: 8, tolerance: 0)
    }

    @Test func rotationIsApplied() throws {
        // 90° clockwise turns the left-to-right bars into top-to-bottom bars (white on top).
        let png = PNGEncoder.encode(VideoFrame(buffer: ColorBars.bgra(width: 64, height: 16), rotation: .r90, timestampNs: 0))
        let image = try PNGDecoder.decodeRGB(png)
        #expect(image.width == 16 && image.height == 64)
        for bar in 0..<8 {
            #expect(close(rgbAt(image.rgb, width: 16, x: 8, y: bar * 8 + 4), ColorBars.rgb[bar], within: 0), "bar \(bar)")
        }
        let flipped = try PNGDecoder.decodeRGB(PNGEncoder.encode(
            VideoFrame(buffer: ColorBars.bgra(width: 64, height: 16), rotation: .r180, timestampNs: 0)))
        #expect(flipped.width == 64 && flipped.height == 16)
        #expect(close(rgbAt(flipped.rgb, width: 64, x: 4, y: 8), ColorBars.rgb[7], within: 0))
        #expect(close(rgbAt(flipped.rgb, width: 64, x: 60, y: 8), ColorBars.rgb[0], within: 0))
    }

    @Test func fileStructureChunksAndCRCs() throws {
        let png = PNGEncoder.encode(VideoFrame(buffer: ColorBars.i420(width: 32, height: 8), timestampNs: 0))
        #expect(Array(png[0..<8]) == [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
        var types: [String] = []
        var i = 8
        while i + 12 <= png.count {
            let len = Int(png.readBigEndian32(i))
            types.append(String(decoding: png[(i + 4)..<(i + 8)], as: UTF8.self))
            // Independent CRC-32 (bitwise, polynomial 0xEDB88320) over type + data.
            #expect(bitwiseCRC32(Array(png[(i + 4)..<(i + 8 + len)])) == png.readBigEndian32(i + 8 + len))
            i += 12 + len
        }
        #expect(i == png.count)
        #expect(types.first == "IHDR" && types.last == "IEND" && types.contains("IDAT"))
        // IHDR: 32x8, depth 8, RGB, no interlace.
        #expect(png.readBigEndian32(16) == 32 && png.readBigEndian32(20) == 8)
        #expect(Array(png[24..<29]) == [8, 2, 0, 0, 0])
    }

    @Test func everyFilterTypeRoundTrips() throws {
        var rgb: [UInt8] = []
        for y in 0..<10 { for x in 0..<7 { rgb += [UInt8(truncatingIfNeeded: x * 37 + y), UInt8(truncatingIfNeeded: y * 29 + 200), UInt8(truncatingIfNeeded: x * y * 11)] } }
        for filter in UInt8(0)...4 {
            let png = PNGEncoder.encodeChecked(rgb: rgb, width: 7, height: 10, compressionLevel: 9, filterForRow: { _ in filter })
            let image = try PNGDecoder.decodeRGB(png)
            #expect(image.rgb == rgb, "filter \(filter)")
        }
        // Mixed per row, and the adaptive choice.
        let mixed = PNGEncoder.encodeChecked(rgb: rgb, width: 7, height: 10, compressionLevel: 1, filterForRow: { UInt8($0 % 5) })
        #expect(try PNGDecoder.decodeRGB(mixed).rgb == rgb)
        #expect(try PNGDecoder.decodeRGB(try PNGEncoder.encode(rgb: rgb, width: 7, height: 10)).rgb == rgb)
    }

    @Test func hdFrameRoundTrips() throws {
        let frame = VideoFrame(buffer: ColorBars.i420(width: 1280, height: 720), timestampNs: 0)
        let rgb = PNGEncoder.uprightRGB(frame)
        let image = try PNGDecoder.decodeRGB(PNGEncoder.encode(frame))
        #expect(image.width == 1280 && image.height == 720)
        #expect(image.rgb == rgb.rgb)
    }

    @Test func encodeRejectsWrongByteCount() {
        #expect(throws: MediaError.self) { try PNGEncoder.encode(rgb: [1, 2, 3], width: 2, height: 2) }
    }
}

@Suite struct PNGDecoderTests {
    /// A PNG built by hand with stored (uncompressed) deflate blocks, so the decoder is checked
    /// against bytes our encoder and zlib's compressor did not make.
    func handmadePNG(width: Int, height: Int, colorType: UInt8, channels: Int,
                     rows: [[UInt8]], filters: [UInt8], plte: [UInt8]? = nil) -> [UInt8] {
        var raw: [UInt8] = []
        for (y, row) in rows.enumerated() {
            raw.append(filters[y])
            let prev = y > 0 ? rows[y - 1] : [UInt8](repeating: 0, count: row.count)
            for i in 0..<row.count {
                let a: UInt8 = i >= channels ? row[i - channels] : 0
                let b = prev[i]
                let c: UInt8 = i >= channels ? prev[i - channels] : 0
                switch filters[y] {
                case 0: raw.append(row[i])
                case 1: raw.append(row[i] &- a)
                case 2: raw.append(row[i] &- b)
                case 3: raw.append(row[i] &- UInt8((Int(a) + Int(b)) / 2))
                default:
                    let p = Int(a) + Int(b) - Int(c)
                    let pa = abs(p - Int(a)), pb = abs(p - Int(b)), pc = abs(p - Int(c))
                    raw.append(row[i] &- (pa <= pb && pa <= pc ? a : (pb <= pc ? b : c)))
                }
            }
        }
        // zlib stream: header, one final stored block, Adler-32.
        var z: [UInt8] = [0x78, 0x01, 0x01]
        let n = UInt16(raw.count)
        z += [UInt8(n & 0xFF), UInt8(n >> 8), UInt8(~n & 0xFF), UInt8(~n >> 8)]
        z += raw
        var s1: UInt32 = 1, s2: UInt32 = 0
        for byte in raw { s1 = (s1 + UInt32(byte)) % 65521; s2 = (s2 + s1) % 65521 }
        z.appendBigEndian(s2 << 16 | s1)

        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        func chunk(_ type: String, _ data: [UInt8]) {
            png.appendBigEndian(UInt32(data.count))
            let body = Array(type.utf8) + data
            png += body
            png.appendBigEndian(bitwiseCRC32(body))
        }
        var ihdr: [UInt8] = []
        ihdr.appendBigEndian(UInt32(width))
        ihdr.appendBigEndian(UInt32(height))
        ihdr += [8, colorType, 0, 0, 0]
        chunk("IHDR", ihdr)
        chunk("tEXt", Array("Comment\0ancillary chunks are skipped".utf8))
        if let plte { chunk("PLTE", plte) }
        // Split IDAT in two to check they are concatenated.
        let half = z.count / 2
        chunk("IDAT", Array(z[..<half]))
        chunk("IDAT", Array(z[half...]))
        chunk("IEND", [])
        return png
    }

    @Test func rgbaWithAllFiveFilters() throws {
        let w = 5, h = 5
        var rows: [[UInt8]] = []
        for y in 0..<h {
            var row: [UInt8] = []
            for x in 0..<w { row += [UInt8(x * 50), UInt8(y * 60), UInt8((x + y) * 25), UInt8(255 - x)] }
            rows.append(row)
        }
        let png = handmadePNG(width: w, height: h, colorType: 6, channels: 4, rows: rows, filters: [0, 1, 2, 3, 4])
        let image = try PNGDecoder.decodeRGB(png)
        #expect(image.width == w && image.height == h)
        for y in 0..<h {
            for x in 0..<w {
                #expect(rgbAt(image.rgb, width: w, x: x, y: y) == (x * 50, y * 60, (x + y) * 25))
            }
        }
    }

    @Test func rgbPaletteAndGreyscale() throws {
        let rgbRows: [[UInt8]] = [[1, 2, 3, 4, 5, 6], [7, 8, 9, 250, 251, 252], [0, 0, 0, 255, 255, 255]]
        let rgb = try PNGDecoder.decodeRGB(handmadePNG(width: 2, height: 3, colorType: 2, channels: 3,
                                                        rows: rgbRows, filters: [4, 3, 1]))
        #expect(rgb.rgb == rgbRows.flatMap { $0 })

        let pal = try PNGDecoder.decodeRGB(handmadePNG(width: 3, height: 1, colorType: 3, channels: 1,
                                                        rows: [[2, 0, 1]], filters: [0], plte: [10, 20, 30, 40, 50, 60, 70, 80, 90]))
        #expect(pal.rgb == [70, 80, 90, 10, 20, 30, 40, 50, 60])

        let grey = try PNGDecoder.decodeRGB(handmadePNG(width: 2, height: 2, colorType: 0, channels: 1,
                                                         rows: [[0, 128], [255, 7]], filters: [2, 2]))
        #expect(grey.rgb == [0, 0, 0, 128, 128, 128, 255, 255, 255, 7, 7, 7])
    }

    @Test func corruptFilesGiveClearErrors() throws {
        let good = PNGEncoder.encode(VideoFrame(buffer: ColorBars.i420(width: 32, height: 8), timestampNs: 0))
        #expect(try PNGDecoder.decodeRGB(good).width == 32)

        func error(_ bytes: [UInt8]) -> PNGError? {
            do { _ = try PNGDecoder.decodeRGB(bytes); return nil } catch { return error }
        }
        // A flipped bit inside IDAT: the chunk CRC catches it.
        var flipped = good
        flipped[45] ^= 0x10
        let crcError = try #require(error(flipped))
        #expect(crcError.message.contains("CRC mismatch in IDAT"), "\(crcError)")
        #expect(crcError.offset == 33)

        // The same flip with a recomputed CRC: zlib's stream check catches it.
        var resealed = flipped
        let len = Int(resealed.readBigEndian32(33))
        let crc = bitwiseCRC32(Array(resealed[37..<(41 + len)]))
        resealed.replaceSubrange((41 + len)..<(45 + len), with: [UInt8(crc >> 24), UInt8((crc >> 16) & 0xFF), UInt8((crc >> 8) & 0xFF), UInt8(crc & 0xFF)])
        let zError = try #require(error(resealed))
        #expect(zError.message.contains("zlib") || zError.message.contains("inflates") || zError.message.contains("filter"), "\(zError)")

        #expect(error(Array(good.prefix(good.count - 6)))?.message.contains("truncated") == true)
        #expect(error(Array(good.prefix(7)))?.message.contains("too short") == true)
        #expect(error([UInt8](repeating: 0, count: 40))?.message.contains("signature") == true)
        #expect(error(Array(good.prefix(33)))?.message.contains("no IEND") == true)
    }
}

/// CRC-32 as PNG defines it, bit by bit (independent of zlib's table-driven one).
func bitwiseCRC32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for byte in bytes {
        crc ^= UInt32(byte)
        for _ in 0..<8 { crc = crc & 1 != 0 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
    }
    return ~crc
}
