import Testing
@testable import Media

@Suite("Pixel conversions")
struct ConversionTests {
    @Test func i420ToNV12VideoRangeAndBackIsExact() {
        let src = Pictures.gradient(width: 66, height: 38)
        let nv12 = src.converted(to: .nv12VideoRange)
        #expect(nv12.format == .nv12VideoRange)
        #expect(nv12.converted(to: .i420).samePixels(as: src))
    }

    @Test func videoToFullRangeAndBackIsExactForLegalValues() {
        let src = Pictures.i420(width: 40, height: 20, y: { x, y in 16 + (x * 7 + y) % 220 },
                                u: { x, _ in 16 + (x * 11) % 225 }, v: { _, y in 16 + (y * 13) % 225 })
        let full = src.converted(to: .nv12FullRange)
        #expect(full.converted(to: .i420).samePixels(as: src))
        #expect(full.converted(to: .nv12VideoRange).converted(to: .i420).samePixels(as: src))
        #expect(src.converted(to: .nv12VideoRange).converted(to: .nv12FullRange).samePixels(as: full))
    }

    @Test func fullRangeStretchesLumaAndChroma() {
        let black = Pictures.i420(width: 8, height: 8, y: { _, _ in 16 }, u: { _, _ in 16 }, v: { _, _ in 240 })
        let full = black.converted(to: .nv12FullRange)
        #expect(full.planePointer(0)[0] == 0)
        #expect(full.planePointer(1)[0] <= 1)     // U 16 → 0.5
        #expect(full.planePointer(1)[1] == 255)   // V 240 → 255
        let white = Pictures.i420(width: 8, height: 8, y: { _, _ in 235 })
        #expect(white.converted(to: .nv12FullRange).planePointer(0)[0] == 255)
        #expect(white.converted(to: .nv12FullRange).planePointer(1)[0] == 128)
    }

    @Test func pureRedHasBT601Values() throws {
        var bytes = [UInt8](repeating: 0, count: 16 * 16 * 4)
        for i in 0..<(16 * 16) { bytes[4 * i + 2] = 255; bytes[4 * i + 3] = 255 }
        let red = try bytes.withUnsafeBufferPointer { p in
            try VideoFrameBuffer.copy(fromBGRA: try #require(p.baseAddress), stride: 64, width: 16, height: 16)
        }
        let video = red.converted(to: .i420)
        #expect(abs(Int(video.luma(x: 3, y: 3)) - 82) <= 2)
        #expect(abs(video.chroma(x: 3, y: 3).u - 90) <= 2)
        #expect(abs(video.chroma(x: 3, y: 3).v - 240) <= 2)
        let full = red.converted(to: .nv12FullRange)
        #expect(abs(Int(full.luma(x: 3, y: 3)) - 76) <= 2)
        #expect(abs(Int(full.planePointer(1)[0]) - 85) <= 2)
        #expect(Int(full.planePointer(1)[1]) >= 250)
        // And back to red from both ranges.
        for yuv in [video, full, red.converted(to: .nv12VideoRange)] {
            let px = yuv.converted(to: .bgra).bgra(x: 5, y: 5)
            #expect(px.r >= 245 && px.g <= 10 && px.b <= 10, "\(yuv.format): \(px)")
        }
    }

    @Test func bgraThroughI420RoundTripsWithinTolerance() {
        let bgra = Pictures.gradient(width: 96, height: 64).converted(to: .bgra)
        for via in [PixelFormat.i420, .nv12VideoRange, .nv12FullRange] {
            let back = bgra.converted(to: via).converted(to: .bgra)
            var maxError = 0, total = 0
            for y in 0..<64 {
                for x in 0..<96 {
                    let a = bgra.bgra(x: x, y: y), b = back.bgra(x: x, y: y)
                    let e = max(abs(a.b - b.b), abs(a.g - b.g), abs(a.r - b.r))
                    maxError = max(maxError, e)
                    total += e
                }
            }
            #expect(maxError <= 8, "via \(via): max error \(maxError)")
            #expect(Double(total) / Double(96 * 64) <= 3, "via \(via): mean error")
        }
    }

    @Test(arguments: PixelFormat.allCases)
    func everyPairRoundTrips(from: PixelFormat) {
        let reference = Pictures.gradient(width: 50, height: 30)
        let start = reference.converted(to: from)
        for to in PixelFormat.allCases {
            let back = start.converted(to: to).converted(to: from).converted(to: .i420)
            var worst = 0
            for y in 0..<30 { for x in 0..<50 { worst = max(worst, abs(Int(back.luma(x: x, y: y)) - Int(reference.luma(x: x, y: y)))) } }
            // YUV ↔ YUV only moves or rescales samples; a trip through RGB costs a few levels.
            let tolerance = from == .bgra || to == .bgra ? 8 : 1
            #expect(worst <= tolerance, "\(from) → \(to) → \(from): luma off by \(worst)")
            let c0 = back.chroma(x: 20, y: 10), c1 = reference.chroma(x: 20, y: 10)
            #expect(abs(c0.u - c1.u) <= 6 && abs(c0.v - c1.v) <= 6, "\(from) → \(to): chroma \(c0) vs \(c1)")
        }
    }

    @Test func sameFormatReturnsTheSameBuffer() {
        let src = Pictures.marked()
        #expect(src.converted(to: .i420) === src)
    }

    @Test func copyFromStridedPlanes() throws {
        let w = 5, h = 3, sy = 8, sc = 4
        let y = (0..<(sy * h)).map { UInt8($0) }
        let u = (0..<(sc * 2)).map { UInt8(100 + $0) }
        let v = (0..<(sc * 2)).map { UInt8(200 + $0) }
        let b = try y.withUnsafeBufferPointer { py in
            try u.withUnsafeBufferPointer { pu in
                try v.withUnsafeBufferPointer { pv in
                    try VideoFrameBuffer.copy(fromI420: try #require(py.baseAddress), strideY: sy,
                                              u: try #require(pu.baseAddress), strideU: sc,
                                              v: try #require(pv.baseAddress), strideV: sc, width: w, height: h)
                }
            }
        }
        #expect(b.width == 5 && b.height == 3)
        #expect(b.luma(x: 4, y: 2) == 20)
        #expect(b.chroma(x: 4, y: 2).u == 106)
        #expect(b.chroma(x: 4, y: 2).v == 206)

        let bad = y.withUnsafeBufferPointer { py -> MediaError? in
            guard let base = py.baseAddress else { return nil }
            do {
                _ = try VideoFrameBuffer.copy(fromNV12: base, strideY: 2, uv: base, strideUV: 8, width: 5, height: 3)
                return nil
            } catch { return error as? MediaError }
        }
        #expect(bad?.description.contains("stride") == true)
        let tooBig = y.withUnsafeBufferPointer { py -> MediaError? in
            guard let base = py.baseAddress else { return nil }
            do {
                _ = try VideoFrameBuffer.copy(fromBGRA: base, stride: 80000, width: 20000, height: 2)
                return nil
            } catch { return error as? MediaError }
        }
        #expect(tooBig?.description.contains("20000x2") == true)
    }

    @Test func copyFromNV12KeepsRange() throws {
        let y = [UInt8](repeating: 77, count: 4 * 2), uv: [UInt8] = [10, 20, 30, 40]
        let b = try y.withUnsafeBufferPointer { py in
            try uv.withUnsafeBufferPointer { puv in
                try VideoFrameBuffer.copy(fromNV12: try #require(py.baseAddress), strideY: 4,
                                          uv: try #require(puv.baseAddress), strideUV: 4, width: 4, height: 2, fullRange: true)
            }
        }
        #expect(b.format == .nv12FullRange)
        #expect(b.luma(x: 3, y: 1) == 77)
        #expect(b.planePointer(1)[3] == 40)
    }
}

@Suite("Geometry")
struct GeometryTests {
    /// Where the bright block of `Pictures.marked` is after an operation, for every format.
    func check(_ op: (VideoFrameBuffer) -> VideoFrameBuffer, size: (Int, Int), brightAt: (Int, Int), greyAt: (Int, Int),
               sourceLocation: SourceLocation = #_sourceLocation) {
        for format in PixelFormat.allCases {
            let out = op(Pictures.marked().converted(to: format))
            #expect(out.format == format, sourceLocation: sourceLocation)
            #expect(out.width == size.0 && out.height == size.1, "\(format): \(out.width)x\(out.height)", sourceLocation: sourceLocation)
            let i420 = out.converted(to: .i420)
            #expect(abs(Int(i420.luma(x: brightAt.0, y: brightAt.1)) - 180) <= 4, "\(format): not bright", sourceLocation: sourceLocation)
            #expect(abs(Int(i420.luma(x: greyAt.0, y: greyAt.1)) - 50) <= 4, "\(format): not grey", sourceLocation: sourceLocation)
            if format != .bgra {   // RGB round trips shift chroma a little; YUV formats keep it
                let c = i420.chroma(x: brightAt.0, y: brightAt.1)
                #expect(abs(c.u - 150) <= 3 && abs(c.v - 100) <= 3, "\(format): chroma \(c)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func rotate90MovesTopLeftToTopRight() {
        // 64x48 → 48x64; the block at the top-left ends up at the top-right.
        check({ $0.rotated(.r90) }, size: (48, 64), brightAt: (48 - 8, 8), greyAt: (8, 8))
    }

    @Test func rotate180MovesTopLeftToBottomRight() {
        check({ $0.rotated(.r180) }, size: (64, 48), brightAt: (64 - 8, 48 - 8), greyAt: (8, 8))
    }

    @Test func rotate270MovesTopLeftToBottomLeft() {
        check({ $0.rotated(.r270) }, size: (48, 64), brightAt: (8, 64 - 8), greyAt: (8, 8))
    }

    @Test func rotate0IsTheSameBuffer() {
        let b = Pictures.marked()
        #expect(b.rotated(.r0) === b)
    }

    @Test func mirrorMovesTopLeftToTopRight() {
        check({ $0.mirrored() }, size: (64, 48), brightAt: (64 - 8, 8), greyAt: (8, 8))
    }

    @Test func scaleHalvesTheBlock() {
        check({ $0.scaled(width: 32, height: 24) }, size: (32, 24), brightAt: (3, 3), greyAt: (12, 12))
        check({ $0.scaled(width: 128, height: 96) }, size: (128, 96), brightAt: (28, 28), greyAt: (40, 40))
    }

    @Test func cropKeepsTheRectangle() {
        // Crop starting inside the block: the block's remainder sits at the crop's top-left.
        check({ $0.cropped(x: 8, y: 8, width: 40, height: 30) }, size: (40, 30), brightAt: (3, 3), greyAt: (10, 10))
        // Odd origin rounds down to even (chroma alignment).
        let odd = Pictures.marked().cropped(x: 15, y: 15, width: 20, height: 20)
        #expect(odd.width == 20 && odd.height == 20)
        #expect(odd.luma(x: 1, y: 1) == 180)   // x 14…15 of the source are still inside the block
        #expect(odd.luma(x: 2, y: 2) == 50)
    }

    @Test func cropIsClampedToThePicture() {
        let b = Pictures.marked()
        let r = b.clampedCropRect(PixelRect(x: -10, y: 40, width: 500, height: 500))
        #expect(r == PixelRect(x: 0, y: 40, width: 64, height: 8))
        let out = b.cropped(x: 60, y: 44, width: 100, height: 100)
        #expect(out.width == 4 && out.height == 4)
        let zero = b.scaled(width: 0, height: -3)
        #expect(zero.width == 1 && zero.height == 1)
    }

    @Test func cropAndScaleInOnePass() {
        let out = Pictures.marked().cropAndScale(PixelRect(x: 0, y: 0, width: 32, height: 24), toWidth: 64, toHeight: 48)
        #expect(out.width == 64 && out.height == 48)
        #expect(out.luma(x: 28, y: 28) == 180)   // block doubled: 0…31
        #expect(out.luma(x: 36, y: 36) == 50)
    }

    @Test func applyingRotationBakesPixels() {
        let frame = VideoFrame(buffer: Pictures.marked(), rotation: .r90, timestampNs: 42)
        let upright = frame.applyingRotation()
        #expect(upright.rotation == .r0)
        #expect(upright.timestampNs == 42)
        #expect(upright.width == 48 && upright.height == 64)
        #expect(upright.buffer.luma(x: 40, y: 8) == 180)
        let already = VideoFrame(buffer: Pictures.marked(), timestampNs: 1)
        #expect(already.applyingRotation().buffer === already.buffer)
    }

    @Test func toI420ConvertsAndKeepsMetadata() {
        let frame = VideoFrame(buffer: Pictures.marked().converted(to: .nv12FullRange), rotation: .r180, timestampNs: 7)
        let i420 = frame.toI420()
        #expect(i420.format == .i420 && i420.rotation == .r180 && i420.timestampNs == 7)
        #expect(abs(Int(i420.buffer.luma(x: 2, y: 2)) - 180) <= 1)
    }

    @Test func filledI420IsOneColour() {
        let black = VideoFrameBuffer.filledI420(width: 10, height: 6, y: 16, u: 128, v: 128)
        #expect(black.meanLuma() == 16)
        #expect(black.chroma(x: 9, y: 5).u == 128 && black.chroma(x: 9, y: 5).v == 128)
    }
}

@Suite("Buffer reuse")
struct PoolTests {
    @Test func explicitPoolStopsGrowing() {
        let src = Pictures.gradient(width: 64, height: 48)
        let pool = VideoBufferPool(format: .nv12VideoRange, width: 64, height: 48)
        var inFlight: [VideoFrameBuffer] = []   // three frames held downstream at any time
        var countAfterWarmUp = 0
        for i in 0..<100 {
            inFlight.append(src.converted(to: .nv12VideoRange, pool: pool))
            if inFlight.count > 3 { inFlight.removeFirst() }
            if i == 9 { countAfterWarmUp = pool.allocatedCount }
        }
        #expect(countAfterWarmUp == 4)
        #expect(pool.allocatedCount == countAfterWarmUp)
    }

    @Test func internalPoolsStopGrowing() {
        // A size no other test uses, so parallel tests do not share its pool.
        let src = Pictures.gradient(width: 202, height: 102)
        for _ in 0..<100 {
            _ = src.scaled(width: 98, height: 46)
            _ = src.rotated(.r90)
            _ = src.converted(to: .nv12FullRange).rotated(.r270)
        }
        #expect(BufferPoolCache.shared.allocatedCount(format: .i420, width: 98, height: 46) == 1)
        #expect(BufferPoolCache.shared.allocatedCount(format: .i420, width: 102, height: 202) <= 2)
        #expect(BufferPoolCache.shared.allocatedCount(format: .nv12FullRange, width: 102, height: 202) == 1)
    }

    @Test func mismatchedPoolFallsBackToTheCache() {
        let pool = VideoBufferPool(format: .bgra, width: 8, height: 8)
        let out = Pictures.marked().converted(to: .nv12VideoRange, pool: pool)
        #expect(out.format == .nv12VideoRange && out.width == 64)
        #expect(pool.allocatedCount == 0)
    }

    @Test func processorsReuseBuffers() {
        let frame = VideoFrame(buffer: Pictures.gradient(width: 206, height: 106), timestampNs: 0)
        let beauty = BeautyFilter(strength: 1)
        let color = ColorAdjust(brightness: 0.1)
        for _ in 0..<100 {
            _ = beauty.process(frame)
            _ = color.process(frame)
        }
        #expect(BufferPoolCache.shared.allocatedCount(format: .i420, width: 206, height: 106) <= 2)
    }
}
