import CZlib
import Media

/// What was wrong with a PNG file and at which byte offset.
public struct PNGError: Error, CustomStringConvertible, Sendable, Equatable {
    public var message: String
    public var offset: Int
    public init(_ message: String, offset: Int) {
        self.message = message
        self.offset = offset
    }
    public var description: String { "PNG: \(message) (at byte \(offset))" }
}

/// A small PNG reader for tests and for checking screenshots: 8-bit greyscale, RGB, palette,
/// grey+alpha and RGBA, non-interlaced, all five row filters. CRCs are checked and the image
/// data is inflated with zlib (which checks its Adler-32). Alpha is dropped.
public enum PNGDecoder {
    /// Most pixels a picture may have (keeps a forged IHDR from asking for gigabytes: 3 bytes a
    /// pixel); each side is at most `VideoFrameBuffer.maxDimension`, so a picture can become a frame.
    public static let maxPixels = 1 << 26

    public static func decodeRGB(_ bytes: [UInt8]) throws(PNGError) -> (width: Int, height: Int, rgb: [UInt8]) {
        let signature: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        guard bytes.count >= 8 else { throw PNGError("file too short for a PNG signature (\(bytes.count) bytes)", offset: 0) }
        guard Array(bytes[0..<8]) == signature else { throw PNGError("not a PNG file (bad signature)", offset: 0) }

        var header: Header?
        var palette: [UInt8] = []
        var idat: [UInt8] = []
        var sawIEND = false
        var idatOffset = -1
        var offset = 8
        while offset < bytes.count {
            guard bytes.count - offset >= 12 else {
                throw PNGError("truncated chunk header (\(bytes.count - offset) bytes left)", offset: offset)
            }
            let length = Int(bytes.readBigEndian32(offset))
            guard length <= 0x7FFF_FFFF, bytes.count - offset - 12 >= length else {
                throw PNGError("chunk length \(length) runs past the end of the file", offset: offset)
            }
            let typeBytes = Array(bytes[(offset + 4)..<(offset + 8)])
            let type = String(decoding: typeBytes, as: UTF8.self)
            let dataStart = offset + 8
            let data = Array(bytes[dataStart..<(dataStart + length)])
            let storedCRC = bytes.readBigEndian32(dataStart + length)
            let crc = PNGCRC.update(PNGCRC.update(0, typeBytes), data)
            guard crc == storedCRC else {
                throw PNGError("CRC mismatch in \(type) chunk (stored \(hex(storedCRC)), computed \(hex(crc)))", offset: offset)
            }
            if header == nil && type != "IHDR" {
                throw PNGError("first chunk is \(type), expected IHDR", offset: offset)
            }
            switch type {
            case "IHDR":
                guard header == nil else { throw PNGError("second IHDR chunk", offset: offset) }
                header = try Header(data, offset: offset)
            case "PLTE":
                guard length % 3 == 0, length > 0, length <= 768 else {
                    throw PNGError("PLTE length \(length) is not 3…768 bytes in steps of 3", offset: offset)
                }
                palette = data
            case "IDAT":
                if idatOffset < 0 { idatOffset = offset }
                idat += data
            case "IEND":
                sawIEND = true
            default:
                // Ancillary chunks (lower-case first letter) may be skipped; critical ones may not.
                if let first = typeBytes.first, first & 0x20 == 0 {
                    throw PNGError("unsupported critical chunk \(type)", offset: offset)
                }
            }
            offset = dataStart + length + 4
            if sawIEND { break }
        }
        guard let header else { throw PNGError("no IHDR chunk", offset: 8) }
        guard sawIEND else { throw PNGError("no IEND chunk (file truncated?)", offset: bytes.count) }
        guard !idat.isEmpty else { throw PNGError("no IDAT chunk", offset: bytes.count) }
        if header.colorType == 3 && palette.isEmpty { throw PNGError("palette image without PLTE", offset: bytes.count) }

        let channels = header.channels
        let rowBytes = header.width * channels
        var raw = try inflate(idat, expected: header.height * (rowBytes + 1), offset: idatOffset)
        try unfilter(&raw, rowBytes: rowBytes, height: header.height, bpp: channels, offset: idatOffset)
        return (header.width, header.height, toRGB(raw, header: header, palette: palette))
    }

    struct Header {
        var width: Int
        var height: Int
        var colorType: UInt8

        init(_ d: [UInt8], offset: Int) throws(PNGError) {
            guard d.count == 13 else { throw PNGError("IHDR is \(d.count) bytes, expected 13", offset: offset) }
            width = Int(d.readBigEndian32(0))
            height = Int(d.readBigEndian32(4))
            colorType = d[9]
            guard VideoFrameBuffer.isValidSize(width: width, height: height), width * height <= PNGDecoder.maxPixels else {
                throw PNGError("image size \(width)x\(height) is zero or too large", offset: offset + 8)
            }
            guard [0, 2, 3, 4, 6].contains(colorType) else {
                throw PNGError("invalid colour type \(colorType)", offset: offset + 17)
            }
            guard d[8] == 8 else { throw PNGError("bit depth \(d[8]) not supported (only 8)", offset: offset + 16) }
            guard d[10] == 0 else { throw PNGError("unknown compression method \(d[10])", offset: offset + 18) }
            guard d[11] == 0 else { throw PNGError("unknown filter method \(d[11])", offset: offset + 19) }
            guard d[12] == 0 else { throw PNGError("interlaced images not supported", offset: offset + 20) }
        }

        var channels: Int {
            switch colorType {
            case 0, 3: return 1
            case 4: return 2
            case 2: return 3
            default: return 4
            }
        }
    }

    private static func inflate(_ data: [UInt8], expected: Int, offset: Int) throws(PNGError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: expected)
        var outLen = uLongf(expected)
        let status = out.withUnsafeMutableBufferPointer { dst in
            data.withUnsafeBufferPointer { src in
                uncompress(dst.baseAddress, &outLen, src.baseAddress, uLong(src.count))
            }
        }
        switch status {
        case Z_OK:
            guard Int(outLen) == expected else {
                throw PNGError("image data inflates to \(outLen) bytes, IHDR needs \(expected)", offset: offset)
            }
            return out
        case Z_BUF_ERROR:
            throw PNGError("image data inflates to more than the \(expected) bytes IHDR needs", offset: offset)
        case Z_DATA_ERROR:
            throw PNGError("image data is not a valid zlib stream (corrupt, truncated or bad Adler-32)", offset: offset)
        default:
            throw PNGError("zlib uncompress failed with status \(status)", offset: offset)
        }
    }

    private static func unfilter(_ raw: inout [UInt8], rowBytes: Int, height: Int, bpp: Int, offset: Int) throws(PNGError) {
        let stride = rowBytes + 1
        var badRow: (row: Int, type: UInt8)?
        raw.withUnsafeMutableBufferPointer { p in
            for y in 0..<height {
                let row = y * stride + 1, prev = row - stride
                let type = p[row - 1]
                switch type {
                case 0:
                    break
                case 1:
                    for i in bpp..<max(bpp, rowBytes) { p[row + i] = p[row + i] &+ p[row + i - bpp] }
                case 2:
                    if y > 0 { for i in 0..<rowBytes { p[row + i] = p[row + i] &+ p[prev + i] } }
                case 3:
                    for i in 0..<rowBytes {
                        let a = i >= bpp ? Int(p[row + i - bpp]) : 0
                        let b = y > 0 ? Int(p[prev + i]) : 0
                        p[row + i] = p[row + i] &+ UInt8((a + b) / 2)
                    }
                case 4:
                    for i in 0..<rowBytes {
                        let a = i >= bpp ? p[row + i - bpp] : 0
                        let b = y > 0 ? p[prev + i] : 0
                        let c = (i >= bpp && y > 0) ? p[prev + i - bpp] : 0
                        p[row + i] = p[row + i] &+ PNGFilter.paeth(a, b, c)
                    }
                default:
                    badRow = (y, type)
                    return
                }
            }
        }
        if let badRow { throw PNGError("row \(badRow.row) has unknown filter type \(badRow.type) (IDAT data starts at the chunk here)", offset: offset) }
    }

    private static func toRGB(_ raw: [UInt8], header: Header, palette: [UInt8]) -> [UInt8] {
        let w = header.width, h = header.height, ch = header.channels
        var rgb = [UInt8](repeating: 0, count: w * h * 3)
        let stride = w * ch + 1
        let entries = palette.count / 3
        for y in 0..<h {
            var s = y * stride + 1
            var d = y * w * 3
            for _ in 0..<w {
                switch header.colorType {
                case 0, 4:
                    rgb[d] = raw[s]; rgb[d + 1] = raw[s]; rgb[d + 2] = raw[s]
                case 3:
                    // An index past the palette is an error in the spec; show it as black.
                    let i = Int(raw[s])
                    if i < entries { rgb[d] = palette[3 * i]; rgb[d + 1] = palette[3 * i + 1]; rgb[d + 2] = palette[3 * i + 2] }
                default:
                    rgb[d] = raw[s]; rgb[d + 1] = raw[s + 1]; rgb[d + 2] = raw[s + 2]
                }
                s += ch
                d += 3
            }
        }
        return rgb
    }

    private static func hex(_ v: UInt32) -> String {
        let s = String(v, radix: 16)
        return "0x" + String(repeating: "0", count: 8 - s.count) + s
    }
}

extension Array where Element == UInt8 {
    func readBigEndian32(_ i: Int) -> UInt32 {
        UInt32(self[i]) << 24 | UInt32(self[i + 1]) << 16 | UInt32(self[i + 2]) << 8 | UInt32(self[i + 3])
    }
}
