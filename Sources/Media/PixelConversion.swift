import CYUV

// Colour conventions (the ones libyuv and libwebrtc use):
// - `i420` and `nv12VideoRange` are BT.601 "video range" (luma 16…235, chroma 16…240 around 128),
//   what encoders and decoders expect. Converting between them only moves chroma samples
//   (libyuv I420ToNV12 / NV12ToI420).
// - `nv12FullRange` is BT.601 full range (JPEG, luma and chroma 0…255). Converting it to or from
//   a video-range format rescales every sample through a lookup table in the same pass that
//   (de)interleaves chroma: Y' = 16 + Y·219/255, C' = 128 + (C−128)·224/255 (and the inverse).
//   Video → full → video is exact; full → video → full loses less than one level.
// - `bgra` is B, G, R, A in memory, which libyuv calls "ARGB" (little-endian word order).
//   Full-range NV12 ↔ BGRA uses libyuv's JPEG matrix (ARGBToJ420, NV12ToARGBMatrix(kYuvJPEGConstants)).

enum RangeTables {
    /// Video-range luma → full-range luma.
    static let lumaToFull: [UInt8] = (0..<256).map { v in
        UInt8(clamping: Int(((Double(v) - 16) * 255 / 219).rounded()))
    }
    /// Video-range chroma → full-range chroma.
    static let chromaToFull: [UInt8] = (0..<256).map { v in
        UInt8(clamping: Int(((Double(v) - 128) * 255 / 224 + 128).rounded()))
    }
    /// Full-range luma → video-range luma.
    static let lumaToVideo: [UInt8] = (0..<256).map { v in
        UInt8(clamping: Int((Double(v) * 219 / 255 + 16).rounded()))
    }
    /// Full-range chroma → video-range chroma.
    static let chromaToVideo: [UInt8] = (0..<256).map { v in
        UInt8(clamping: Int(((Double(v) - 128) * 224 / 255 + 128).rounded()))
    }
}

/// Maps every byte of a `width`×`height` plane through `lut`.
func mapPlane(_ src: UnsafePointer<UInt8>, _ srcStride: Int, _ dst: UnsafeMutablePointer<UInt8>, _ dstStride: Int,
              width: Int, height: Int, lut: [UInt8]) {
    lut.withUnsafeBufferPointer { table in
        guard let t = table.baseAddress, table.count == 256 else { return }
        for row in 0..<height {
            let s = src + row * srcStride, d = dst + row * dstStride
            for x in 0..<width { d[x] = t[Int(s[x])] }
        }
    }
}

/// Splits an interleaved UV plane into U and V planes, mapping each sample through `lut`.
func splitUV(_ src: UnsafePointer<UInt8>, _ srcStride: Int,
             _ dstU: UnsafeMutablePointer<UInt8>, _ strideU: Int,
             _ dstV: UnsafeMutablePointer<UInt8>, _ strideV: Int,
             width: Int, height: Int, lut: [UInt8]) {
    lut.withUnsafeBufferPointer { table in
        guard let t = table.baseAddress, table.count == 256 else { return }
        for row in 0..<height {
            let s = src + row * srcStride, u = dstU + row * strideU, v = dstV + row * strideV
            for x in 0..<width {
                u[x] = t[Int(s[2 * x])]
                v[x] = t[Int(s[2 * x + 1])]
            }
        }
    }
}

/// Interleaves U and V planes into one UV plane, mapping each sample through `lut`.
func mergeUV(_ srcU: UnsafePointer<UInt8>, _ strideU: Int, _ srcV: UnsafePointer<UInt8>, _ strideV: Int,
             _ dst: UnsafeMutablePointer<UInt8>, _ dstStride: Int,
             width: Int, height: Int, lut: [UInt8]) {
    lut.withUnsafeBufferPointer { table in
        guard let t = table.baseAddress, table.count == 256 else { return }
        for row in 0..<height {
            let u = srcU + row * strideU, v = srcV + row * strideV, d = dst + row * dstStride
            for x in 0..<width {
                d[2 * x] = t[Int(u[x])]
                d[2 * x + 1] = t[Int(v[x])]
            }
        }
    }
}

extension VideoFrameBuffer {
    @inline(__always) func pl(_ i: Int) -> UnsafeMutablePointer<UInt8> { planePointer(i) }
    @inline(__always) func st(_ i: Int) -> Int32 { Int32(truncatingIfNeeded: strides[i]) }
    var chromaWidth: Int { (width + 1) / 2 }
    var chromaHeight: Int { (height + 1) / 2 }

    /// This picture in another pixel format, written into a buffer from `pool` (or from a shared
    /// pool of the right size when `pool` is nil or holds another format or size). Converting to
    /// the buffer's own format returns the buffer itself (buffers are immutable once shared).
    public func converted(to format: PixelFormat, pool: VideoBufferPool? = nil) -> VideoFrameBuffer {
        if format == self.format { return self }
        let w = width, h = height, cw = chromaWidth, ch = chromaHeight
        let wi = i32(w), hi = i32(h)
        let dst = outputBuffer(format, w, h, pool: pool)
        switch (self.format, format) {
        case (.i420, .nv12VideoRange):
            _ = I420ToNV12(pl(0), st(0), pl(1), st(1), pl(2), st(2), dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), wi, hi)
        case (.i420, .nv12FullRange):
            mapPlane(pl(0), strides[0], dst.pl(0), dst.strides[0], width: w, height: h, lut: RangeTables.lumaToFull)
            mergeUV(pl(1), strides[1], pl(2), strides[2], dst.pl(1), dst.strides[1], width: cw, height: ch,
                    lut: RangeTables.chromaToFull)
        case (.i420, .bgra):
            _ = I420ToARGB(pl(0), st(0), pl(1), st(1), pl(2), st(2), dst.pl(0), dst.st(0), wi, hi)

        case (.nv12VideoRange, .i420):
            _ = NV12ToI420(pl(0), st(0), pl(1), st(1), dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), dst.pl(2), dst.st(2), wi, hi)
        case (.nv12VideoRange, .nv12FullRange):
            mapPlane(pl(0), strides[0], dst.pl(0), dst.strides[0], width: w, height: h, lut: RangeTables.lumaToFull)
            mapPlane(pl(1), strides[1], dst.pl(1), dst.strides[1], width: 2 * cw, height: ch, lut: RangeTables.chromaToFull)
        case (.nv12VideoRange, .bgra):
            _ = NV12ToARGB(pl(0), st(0), pl(1), st(1), dst.pl(0), dst.st(0), wi, hi)

        case (.nv12FullRange, .i420):
            mapPlane(pl(0), strides[0], dst.pl(0), dst.strides[0], width: w, height: h, lut: RangeTables.lumaToVideo)
            splitUV(pl(1), strides[1], dst.pl(1), dst.strides[1], dst.pl(2), dst.strides[2], width: cw, height: ch,
                    lut: RangeTables.chromaToVideo)
        case (.nv12FullRange, .nv12VideoRange):
            mapPlane(pl(0), strides[0], dst.pl(0), dst.strides[0], width: w, height: h, lut: RangeTables.lumaToVideo)
            mapPlane(pl(1), strides[1], dst.pl(1), dst.strides[1], width: 2 * cw, height: ch, lut: RangeTables.chromaToVideo)
        case (.nv12FullRange, .bgra):
            _ = cyuv_nv12_full_range_to_argb(pl(0), st(0), pl(1), st(1), dst.pl(0), dst.st(0), wi, hi)

        case (.bgra, .i420):
            _ = ARGBToI420(pl(0), st(0), dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), dst.pl(2), dst.st(2), wi, hi)
        case (.bgra, .nv12VideoRange):
            _ = ARGBToNV12(pl(0), st(0), dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), wi, hi)
        case (.bgra, .nv12FullRange):
            // libyuv has no ARGB → full-range NV12: write J420 luma straight into the output and
            // chroma into a pooled scratch I420, then interleave.
            let scratch = outputBuffer(.i420, w, h, pool: nil)
            _ = ARGBToJ420(pl(0), st(0), dst.pl(0), dst.st(0), scratch.pl(1), scratch.st(1), scratch.pl(2), scratch.st(2), wi, hi)
            MergeUVPlane(scratch.pl(1), scratch.st(1), scratch.pl(2), scratch.st(2), dst.pl(1), dst.st(1), i32(cw), i32(ch))

        default:
            return self   // same format, handled above
        }
        return dst
    }

    /// A buffer holding a copy of I420 planes (what software decoders hand out). Throws when the
    /// size or strides cannot describe a picture.
    public static func copy(fromI420 y: UnsafePointer<UInt8>, strideY: Int,
                            u: UnsafePointer<UInt8>, strideU: Int,
                            v: UnsafePointer<UInt8>, strideV: Int,
                            width: Int, height: Int, pool: VideoBufferPool? = nil) throws(MediaError) -> VideoFrameBuffer {
        try validate(width: width, height: height)
        let cw = (width + 1) / 2
        guard strideY >= width, strideU >= cw, strideV >= cw else {
            throw MediaError("I420 strides \(strideY)/\(strideU)/\(strideV) too small for width \(width)")
        }
        let dst = outputBuffer(.i420, width, height, pool: pool)
        _ = I420Copy(y, i32(strideY), u, i32(strideU), v, i32(strideV),
                     dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), dst.pl(2), dst.st(2), i32(width), i32(height))
        return dst
    }

    /// A buffer holding a copy of NV12 planes (camera and hardware decoder output).
    public static func copy(fromNV12 y: UnsafePointer<UInt8>, strideY: Int,
                            uv: UnsafePointer<UInt8>, strideUV: Int,
                            width: Int, height: Int, fullRange: Bool = false,
                            pool: VideoBufferPool? = nil) throws(MediaError) -> VideoFrameBuffer {
        try validate(width: width, height: height)
        let cw = (width + 1) / 2
        guard strideY >= width, strideUV >= 2 * cw else {
            throw MediaError("NV12 strides \(strideY)/\(strideUV) too small for width \(width)")
        }
        let dst = outputBuffer(fullRange ? .nv12FullRange : .nv12VideoRange, width, height, pool: pool)
        CopyPlane(y, i32(strideY), dst.pl(0), dst.st(0), i32(width), i32(height))
        CopyPlane(uv, i32(strideUV), dst.pl(1), dst.st(1), i32(2 * cw), i32((height + 1) / 2))
        return dst
    }

    /// A buffer holding a copy of B, G, R, A pixels (screens, image files).
    public static func copy(fromBGRA pixels: UnsafePointer<UInt8>, stride: Int, width: Int, height: Int,
                            pool: VideoBufferPool? = nil) throws(MediaError) -> VideoFrameBuffer {
        try validate(width: width, height: height)
        guard stride >= 4 * width else {
            throw MediaError("BGRA stride \(stride) too small for width \(width)")
        }
        let dst = outputBuffer(.bgra, width, height, pool: pool)
        CopyPlane(pixels, i32(stride), dst.pl(0), dst.st(0), i32(4 * width), i32(height))
        return dst
    }

    static func validate(width: Int, height: Int) throws(MediaError) {
        guard VideoFrameBuffer.isValidSize(width: width, height: height) else {
            throw MediaError("frame size \(width)x\(height) out of range 1…\(VideoFrameBuffer.maxDimension)")
        }
    }
}
