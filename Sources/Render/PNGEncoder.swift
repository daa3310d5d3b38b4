import CYUV
import CZlib
import Media

/// Encodes frames as PNG (8-bit RGB, non-interlaced): YUV → RGB with libyuv (BT.601, limited
/// range; full range for `nv12FullRange`), rotation applied, zlib for IDAT and the CRCs.
public enum PNGEncoder {
    /// The frame, upright, as a PNG file.
    public static func encode(_ frame: VideoFrame, compressionLevel: Int = 6) -> [UInt8] {
        let (width, height, rgb) = uprightRGB(frame)
        return encodeChecked(rgb: rgb, width: width, height: height, compressionLevel: compressionLevel)
    }

    /// The frame, upright, as packed 8-bit R,G,B rows (what `encode` compresses).
    public static func uprightRGB(_ frame: VideoFrame) -> (width: Int, height: Int, rgb: [UInt8]) {
        let b = frame.buffer
        let w = b.width, h = b.height
        // 1. To libyuv "ARGB" (B,G,R,A in memory), the format ARGBRotate works on.
        let argb: VideoFrameBuffer
        switch b.format {
        case .bgra:
            argb = b
        case .i420:
            argb = VideoFrameBuffer(format: .bgra, width: w, height: h)
            _ = I420ToARGB(b.planePointer(0), Int32(b.strides[0]), b.planePointer(1), Int32(b.strides[1]),
                           b.planePointer(2), Int32(b.strides[2]), argb.planePointer(0), Int32(argb.strides[0]),
                           Int32(w), Int32(h))
        case .nv12VideoRange:
            argb = VideoFrameBuffer(format: .bgra, width: w, height: h)
            _ = NV12ToARGB(b.planePointer(0), Int32(b.strides[0]), b.planePointer(1), Int32(b.strides[1]),
                           argb.planePointer(0), Int32(argb.strides[0]), Int32(w), Int32(h))
        case .nv12FullRange:
            argb = VideoFrameBuffer(format: .bgra, width: w, height: h)
            _ = cyuv_nv12_full_range_to_argb(b.planePointer(0), Int32(b.strides[0]), b.planePointer(1), Int32(b.strides[1]),
                                             argb.planePointer(0), Int32(argb.strides[0]), Int32(w), Int32(h))
        }
        // 2. Rotate upright.
        var upright = argb
        if frame.rotation != .r0 {
            let swap = frame.rotation.swapsDimensions
            let dst = VideoFrameBuffer(format: .bgra, width: swap ? h : w, height: swap ? w : h)
            let mode: RotationMode
            switch frame.rotation {
            case .r0: mode = kRotate0
            case .r90: mode = kRotate90
            case .r180: mode = kRotate180
            case .r270: mode = kRotate270
            }
            _ = ARGBRotate(argb.planePointer(0), Int32(argb.strides[0]), dst.planePointer(0), Int32(dst.strides[0]),
                           Int32(w), Int32(h), mode)
            upright = dst
        }
        // 3. To R,G,B bytes (libyuv calls that order "RAW").
        let ow = upright.width, oh = upright.height
        var rgb = [UInt8](repeating: 0, count: ow * oh * 3)
        rgb.withUnsafeMutableBufferPointer { out in
            guard let base = out.baseAddress else { return }
            _ = ARGBToRAW(upright.planePointer(0), Int32(upright.strides[0]), base, Int32(ow * 3), Int32(ow), Int32(oh))
        }
        return (ow, oh, rgb)
    }

    /// Packed 8-bit RGB rows (`width * height * 3` bytes) as a PNG file. Each row gets the
    /// filter that makes it smallest by the usual sum-of-absolute-differences guess.
    public static func encode(rgb: [UInt8], width: Int, height: Int, compressionLevel: Int = 6) throws(MediaError) -> [UInt8] {
        guard VideoFrameBuffer.isValidSize(width: width, height: height), rgb.count == width * height * 3 else {
            throw MediaError("PNGEncoder: \(rgb.count) bytes do not make a \(width)x\(height) RGB image")
        }
        return encodeChecked(rgb: rgb, width: width, height: height, compressionLevel: compressionLevel)
    }

    /// `filterForRow` forces a filter type per row (tests use it to cover all five).
    static func encodeChecked(rgb: [UInt8], width: Int, height: Int, compressionLevel: Int,
                              filterForRow: ((Int) -> UInt8)? = nil) -> [UInt8] {
        let rowBytes = width * 3
        var filtered = [UInt8](repeating: 0, count: height * (rowBytes + 1))
        let zeroRow = [UInt8](repeating: 0, count: rowBytes)
        filtered.withUnsafeMutableBufferPointer { out in
            rgb.withUnsafeBufferPointer { src in
                zeroRow.withUnsafeBufferPointer { zero in
                    guard let dst = out.baseAddress, let base = src.baseAddress, let zeros = zero.baseAddress else { return }
                    for y in 0..<height {
                        let cur = base + y * rowBytes
                        let up = y > 0 ? cur - rowBytes : zeros
                        var type: UInt8 = 0
                        if let filterForRow {
                            type = min(filterForRow(y), 4)
                        } else {
                            var bestScore = Int.max
                            for t in UInt8(0)...4 {
                                var score = 0
                                for i in 0..<rowBytes {
                                    score += Int(Int8(bitPattern: PNGFilter.apply(t, cur, up, i)).magnitude)
                                }
                                if score < bestScore { bestScore = score; type = t }
                            }
                        }
                        let row = dst + y * (rowBytes + 1)
                        row[0] = type
                        for i in 0..<rowBytes { row[1 + i] = PNGFilter.apply(type, cur, up, i) }
                    }
                }
            }
        }

        var png: [UInt8] = [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]
        var ihdr: [UInt8] = []
        ihdr.appendBigEndian(UInt32(width))
        ihdr.appendBigEndian(UInt32(height))
        ihdr += [8, 2, 0, 0, 0]   // bit depth 8, colour type RGB, deflate, adaptive filtering, no interlace
        appendChunk("IHDR", ihdr, to: &png)
        appendChunk("IDAT", deflate(filtered, level: compressionLevel), to: &png)
        appendChunk("IEND", [], to: &png)
        return png
    }

    private static func deflate(_ data: [UInt8], level: Int) -> [UInt8] {
        var destLen = compressBound(uLong(data.count))
        var out = [UInt8](repeating: 0, count: Int(destLen))
        let status = out.withUnsafeMutableBufferPointer { dst in
            data.withUnsafeBufferPointer { src in
                compress2(dst.baseAddress, &destLen, src.baseAddress, uLong(data.count), Int32(max(0, min(9, level))))
            }
        }
        // compress2 into a compressBound-sized buffer only fails when out of memory.
        precondition(status == Z_OK, "zlib compress2 failed with \(status)")
        out.removeSubrange(Int(destLen)...)
        return out
    }

    private static func appendChunk(_ type: String, _ data: [UInt8], to png: inout [UInt8]) {
        png.appendBigEndian(UInt32(data.count))
        let typeBytes = Array(type.utf8)
        png += typeBytes
        png += data
        var crc = PNGCRC.update(0, typeBytes)
        crc = PNGCRC.update(crc, data)
        png.appendBigEndian(crc)
    }
}

enum PNGFilter {
    /// Filter `type` applied to byte `i` of row `cur` (3 bytes per pixel), `up` the row above.
    @inline(__always)
    static func apply(_ type: UInt8, _ cur: UnsafePointer<UInt8>, _ up: UnsafePointer<UInt8>, _ i: Int) -> UInt8 {
        let x = cur[i], b = up[i]
        let a: UInt8 = i >= 3 ? cur[i - 3] : 0
        switch type {
        case 0: return x
        case 1: return x &- a
        case 2: return x &- b
        case 3: return x &- UInt8((Int(a) + Int(b)) / 2)
        default: return x &- paeth(a, b, i >= 3 ? up[i - 3] : 0)
        }
    }

    /// The Paeth predictor (PNG spec §9.4): whichever neighbour is closest to a + b − c.
    @inline(__always)
    static func paeth(_ a: UInt8, _ b: UInt8, _ c: UInt8) -> UInt8 {
        let p = Int(a) + Int(b) - Int(c)
        let pa = abs(p - Int(a)), pb = abs(p - Int(b)), pc = abs(p - Int(c))
        if pa <= pb && pa <= pc { return a }
        if pb <= pc { return b }
        return c
    }
}

enum PNGCRC {
    /// zlib's CRC-32 (the one PNG uses), continued from `crc`.
    static func update(_ crc: UInt32, _ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBufferPointer { p in
            UInt32(truncatingIfNeeded: crc32(uLong(crc), p.baseAddress, uInt(p.count)))
        }
    }
}

extension Array where Element == UInt8 {
    mutating func appendBigEndian(_ v: UInt32) {
        append(UInt8(v >> 24)); append(UInt8((v >> 16) & 0xFF)); append(UInt8((v >> 8) & 0xFF)); append(UInt8(v & 0xFF))
    }
}
