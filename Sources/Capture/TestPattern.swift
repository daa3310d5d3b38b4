#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Media

/// The SwiftRTC test pattern (see dev/TESTPATTERN.md): a band of 3 × 32 cells at the top carrying
/// the frame number, the capture wall clock (ms, mod 2^32) and a check word, readable after lossy
/// encoding and scaling; below it a scrolling colour gradient and a bouncing square so encoders
/// have real motion to code.
public enum TestPattern {
    public static let columns = 32
    public static let bandRows = 3
    public static let rowsOfCells = 24
    static let oneLuma: UInt8 = 235
    static let zeroLuma: UInt8 = 16
    /// Length in pixels of one cycle of the background gradient.
    static let gradientPeriod = 512
    /// Pixels the gradient scrolls per frame.
    static let gradientSpeed = 4

    /// Check word: bitwise NOT of (frame number XOR wall clock).
    public static func checkWord(frameNumber: UInt32, wallClockMs: UInt32) -> UInt32 {
        ~(frameNumber ^ wallClockMs)
    }

    /// Draws the pattern for `frameNumber` into `buffer` (I420; `width`/`height` must match the
    /// buffer — a mismatch draws into the buffer's own size). Other formats are left untouched.
    public static func render(frameNumber: UInt32, wallClockMs: UInt64, width: Int, height: Int,
                              into buffer: VideoFrameBuffer) {
        guard buffer.format == .i420 else { return }
        let w = min(width, buffer.width), h = min(height, buffer.height)
        guard w > 0, h > 0 else { return }
        let y = buffer.planePointer(0), u = buffer.planePointer(1), v = buffer.planePointer(2)
        let ys = buffer.strides[0], us = buffer.strides[1], vs = buffer.strides[2]
        let bandHeight = bandRows * (h / rowsOfCells)
        let chromaW = (w + 1) / 2, chromaH = (h + 1) / 2
        drawBand(frameNumber: frameNumber, wallClockMs: wallClockMs, width: w, height: h, into: buffer)
        let chromaBand = min(chromaH, (bandHeight + 1) / 2)

        // Background: one gradient line drawn, then copied to every row below the band.
        if bandHeight < h {
            let offset = Int((UInt64(frameNumber) &* UInt64(gradientSpeed)) % UInt64(gradientPeriod))
            let first = y + bandHeight * ys
            gradientLuma.withUnsafeBufferPointer { table in
                for x in 0..<w { first[x] = table[(x + offset) % gradientPeriod] }
            }
            for row in (bandHeight + 1)..<h { memcpy(y + row * ys, first, w) }
        }
        if chromaBand < chromaH {
            let offset = Int((UInt64(frameNumber) &* UInt64(gradientSpeed)) % UInt64(gradientPeriod))
            let firstU = u + chromaBand * us, firstV = v + chromaBand * vs
            gradientU.withUnsafeBufferPointer { tu in
                gradientV.withUnsafeBufferPointer { tv in
                    for x in 0..<chromaW {
                        let phase = (2 * x + offset) % gradientPeriod
                        firstU[x] = tu[phase]
                        firstV[x] = tv[phase]
                    }
                }
            }
            for row in (chromaBand + 1)..<chromaH {
                memcpy(u + row * us, firstU, chromaW)
                memcpy(v + row * vs, firstV, chromaW)
            }
        }

        // Bouncing square, 1/6 of the height, kept below the band; even-aligned for chroma.
        let side = (h / 6) & ~1
        let travelY = h - bandHeight - side
        let travelX = w - side
        guard side >= 2, travelX > 0, travelY > 0 else { return }
        let sx = bounce(UInt64(frameNumber) &* 7, range: travelX) & ~1
        let sy = (bandHeight + bounce(UInt64(frameNumber) &* 5, range: travelY) + 1) & ~1
        let bottom = min(h, sy + side)
        // The square carries a fine texture (a 4x4-pixel luma checker, 210 ± 14) so a smoothing
        // filter such as the beauty filter has small-amplitude detail to remove, as skin has.
        let textured = (0..<2).map { phase in
            (0..<side).map { x -> UInt8 in ((x / 4 + phase) & 1) == 1 ? 210 + 14 : 210 - 14 }
        }
        for row in sy..<bottom {
            textured[((row - sy) / 4) & 1].withUnsafeBufferPointer { if let base = $0.baseAddress { memcpy(y + row * ys + sx, base, side) } }
        }
        let cx = sx / 2, cSide = side / 2
        for row in (sy / 2)..<min(chromaH, (bottom + 1) / 2) {
            memset(u + row * us + cx, 60, min(cSide, chromaW - cx))
            memset(v + row * vs + cx, 200, min(cSide, chromaW - cx))
        }
    }

    /// Position moving `distance` pixels along 0…range and back (a triangle wave).
    private static func bounce(_ distance: UInt64, range: Int) -> Int {
        let period = UInt64(2 * range)
        let p = Int(distance % period)
        return p <= range ? p : 2 * range - p
    }

    // Gradient tables, one cycle long: a smooth luma triangle and a hue circle in chroma.
    private static let gradientLuma: [UInt8] = (0..<gradientPeriod).map { i in
        let t = Double(i) / Double(gradientPeriod)
        let tri = t < 0.5 ? 2 * t : 2 - 2 * t
        return UInt8(40 + (170 * tri).rounded())
    }
    private static let gradientU: [UInt8] = (0..<gradientPeriod).map { i in
        UInt8(128 + (90 * cos(2 * Double.pi * Double(i) / Double(gradientPeriod))).rounded())
    }
    private static let gradientV: [UInt8] = (0..<gradientPeriod).map { i in
        UInt8(128 + (90 * sin(2 * Double.pi * Double(i) / Double(gradientPeriod))).rounded())
    }

    /// Reads the frame number and wall clock (ms mod 2^32) from an I420, NV12 or BGRA frame;
    /// nil when the frame is too small for the pattern or the check word does not match.
    public static func read(_ frame: VideoFrame) -> (frameNumber: UInt32, wallClockMs: UInt32)? {
        read(frame.buffer)
    }

    public static func read(_ buffer: VideoFrameBuffer) -> (frameNumber: UInt32, wallClockMs: UInt32)? {
        let w = buffer.width, h = buffer.height
        let cw = w / columns, chh = h / rowsOfCells
        guard cw >= 1, chh >= 1 else { return nil }
        var words: [UInt32] = [0, 0, 0]
        let base = buffer.planePointer(0)
        let stride = buffer.strides[0]
        let isBGRA = buffer.format == .bgra
        for row in 0..<bandRows {
            let cy = row * chh
            let y0 = cy + chh / 4, y1 = max(y0 + 1, cy + (3 * chh) / 4)
            var word: UInt32 = 0
            for col in 0..<columns {
                let cx = col * cw
                let x0 = cx + cw / 4, x1 = max(x0 + 1, cx + (3 * cw) / 4)
                var sum = 0
                for yy in y0..<y1 {
                    let line = base + yy * stride
                    if isBGRA {
                        for xx in x0..<x1 {
                            let p = line + 4 * xx
                            // 0.299 R + 0.587 G + 0.114 B in 1/1000ths.
                            sum += (299 * Int(p[2]) + 587 * Int(p[1]) + 114 * Int(p[0]))
                        }
                    } else {
                        for xx in x0..<x1 { sum += Int(line[xx]) * 1000 }
                    }
                }
                let count = (y1 - y0) * (x1 - x0)
                word = (word << 1) | (sum > 128 * 1000 * count ? 1 : 0)
            }
            words[row] = word
        }
        guard words[2] == checkWord(frameNumber: words[0], wallClockMs: words[1]) else { return nil }
        return (words[0], words[1])
    }
}

extension TestPattern {
    /// Draws only the band (frame number, wall clock, check word; neutral chroma) over the top
    /// 3/24 of an I420 `buffer`, leaving the rest of the picture as it is — a burned-in marker on
    /// any picture that `read` understands. Other formats are left untouched.
    public static func stampBand(frameNumber: UInt32, wallClockMs: UInt64, into buffer: VideoFrameBuffer) {
        guard buffer.format == .i420 else { return }
        drawBand(frameNumber: frameNumber, wallClockMs: wallClockMs, width: buffer.width, height: buffer.height, into: buffer)
    }

    /// The band over the top `bandRows` cells of a `w`×`h` area of an I420 buffer: the first line of
    /// each row of cells drawn, copied down the cell height; chroma rows touching it neutral.
    static func drawBand(frameNumber: UInt32, wallClockMs: UInt64, width w: Int, height h: Int, into buffer: VideoFrameBuffer) {
        let cw = w / columns, chh = h / rowsOfCells
        guard cw >= 1, chh >= 1 else { return }
        let y = buffer.planePointer(0), ys = buffer.strides[0]
        let clock = UInt32(truncatingIfNeeded: wallClockMs)
        let words = [frameNumber, clock, checkWord(frameNumber: frameNumber, wallClockMs: clock)]
        for (row, word) in words.enumerated() {
            let top = y + row * chh * ys
            for col in 0..<columns {
                let bit = (word >> UInt32(columns - 1 - col)) & 1
                memset(top + col * cw, Int32(bit == 1 ? oneLuma : zeroLuma), cw)
            }
            if columns * cw < w { memset(top + columns * cw, Int32(zeroLuma), w - columns * cw) }
            for line in 1..<chh { memcpy(top + line * ys, top, w) }
        }
        let chromaW = (w + 1) / 2
        for r in 0..<min((h + 1) / 2, (bandRows * chh + 1) / 2) {
            memset(buffer.planePointer(1) + r * buffer.strides[1], 128, chromaW)
            memset(buffer.planePointer(2) + r * buffer.strides[2], 128, chromaW)
        }
    }
}
