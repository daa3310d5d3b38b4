import CYUV

/// A rectangle of pixels inside a frame.
public struct PixelRect: Sendable, Hashable {
    public var x: Int
    public var y: Int
    public var width: Int
    public var height: Int
    public init(x: Int, y: Int, width: Int, height: Int) {
        self.x = x
        self.y = y
        self.width = width
        self.height = height
    }
}

extension VideoFrameBuffer {
    /// `rect` moved and shrunk to lie inside the picture, with an even origin so the chroma planes
    /// (half resolution) crop at the same place as luma. Never empty.
    public func clampedCropRect(_ rect: PixelRect) -> PixelRect {
        let x = min(max(rect.x, 0), width - 1) & ~1
        let y = min(max(rect.y, 0), height - 1) & ~1
        let w = min(max(rect.width, 1), width - x)
        let h = min(max(rect.height, 1), height - y)
        return PixelRect(x: x, y: y, width: w, height: h)
    }

    /// Crops `rect` (clamped, see `clampedCropRect`) and scales it to `width`×`height` in one pass
    /// (libyuv box filter), in the buffer's own format. Sizes are clamped to 1…`VideoFrameBuffer.maxDimension`.
    public func cropAndScale(_ rect: PixelRect, toWidth: Int, toHeight: Int, pool: VideoBufferPool? = nil) -> VideoFrameBuffer {
        let r = clampedCropRect(rect)
        let ow = clampSide(toWidth), oh = clampSide(toHeight)
        if r.x == 0, r.y == 0, r.width == width, r.height == height, ow == width, oh == height { return self }
        let dst = outputBuffer(format, ow, oh, pool: pool)
        let sw = i32(r.width), sh = i32(r.height), dw = i32(ow), dh = i32(oh)
        let cx = r.x / 2, cy = r.y / 2
        switch format {
        case .i420:
            _ = I420Scale(pl(0) + r.y * strides[0] + r.x, st(0),
                          pl(1) + cy * strides[1] + cx, st(1),
                          pl(2) + cy * strides[2] + cx, st(2), sw, sh,
                          dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), dst.pl(2), dst.st(2), dw, dh, kFilterBox)
        case .nv12VideoRange, .nv12FullRange:
            _ = NV12Scale(pl(0) + r.y * strides[0] + r.x, st(0),
                          pl(1) + cy * strides[1] + 2 * cx, st(1), sw, sh,
                          dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), dw, dh, kFilterBox)
        case .bgra:
            _ = ARGBScale(pl(0) + r.y * strides[0] + 4 * r.x, st(0), sw, sh,
                          dst.pl(0), dst.st(0), dw, dh, kFilterBox)
        }
        return dst
    }

    /// The picture scaled to `width`×`height` (box filter down, bilinear up; same format).
    public func scaled(width: Int, height: Int, pool: VideoBufferPool? = nil) -> VideoFrameBuffer {
        cropAndScale(PixelRect(x: 0, y: 0, width: self.width, height: self.height),
                     toWidth: width, toHeight: height, pool: pool)
    }

    /// The pixels of a rectangle (origin rounded down to even, clamped to the picture).
    public func cropped(x: Int, y: Int, width: Int, height: Int, pool: VideoBufferPool? = nil) -> VideoFrameBuffer {
        let r = clampedCropRect(PixelRect(x: x, y: y, width: width, height: height))
        return cropAndScale(r, toWidth: r.width, toHeight: r.height, pool: pool)
    }

    /// The picture turned clockwise by `rotation` (same format; 90/270 swap width and height).
    public func rotated(_ rotation: VideoRotation, pool: VideoBufferPool? = nil) -> VideoFrameBuffer {
        if rotation == .r0 { return self }
        let ow = rotation.swapsDimensions ? height : width
        let oh = rotation.swapsDimensions ? width : height
        let mode = RotationMode(rawValue: UInt32(rotation.rawValue))
        let dst = outputBuffer(format, ow, oh, pool: pool)
        let w = i32(width), h = i32(height)
        switch format {
        case .i420:
            _ = I420Rotate(pl(0), st(0), pl(1), st(1), pl(2), st(2),
                           dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), dst.pl(2), dst.st(2), w, h, mode)
        case .nv12VideoRange, .nv12FullRange:
            // libyuv rotates NV12 into I420: luma straight into the output, chroma through a
            // pooled scratch I420 of the output size, then interleaved again.
            let scratch = outputBuffer(.i420, ow, oh, pool: nil)
            _ = NV12ToI420Rotate(pl(0), st(0), pl(1), st(1),
                                 dst.pl(0), dst.st(0), scratch.pl(1), scratch.st(1), scratch.pl(2), scratch.st(2), w, h, mode)
            MergeUVPlane(scratch.pl(1), scratch.st(1), scratch.pl(2), scratch.st(2), dst.pl(1), dst.st(1),
                         i32((ow + 1) / 2), i32((oh + 1) / 2))
        case .bgra:
            _ = ARGBRotate(pl(0), st(0), dst.pl(0), dst.st(0), w, h, mode)
        }
        return dst
    }

    /// The picture flipped left to right (a selfie preview).
    public func mirrored(pool: VideoBufferPool? = nil) -> VideoFrameBuffer {
        let dst = outputBuffer(format, width, height, pool: pool)
        let w = i32(width), h = i32(height)
        switch format {
        case .i420:
            _ = I420Mirror(pl(0), st(0), pl(1), st(1), pl(2), st(2),
                           dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), dst.pl(2), dst.st(2), w, h)
        case .nv12VideoRange, .nv12FullRange:
            _ = NV12Mirror(pl(0), st(0), pl(1), st(1), dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), w, h)
        case .bgra:
            _ = ARGBMirror(pl(0), st(0), dst.pl(0), dst.st(0), w, h)
        }
        return dst
    }

    /// The picture flipped top to bottom (a copy with a negative height, as libyuv allows): a
    /// selfie mirror for frames that will be shown turned by 90° or 270°.
    public func flippedVertically(pool: VideoBufferPool? = nil) -> VideoFrameBuffer {
        let dst = outputBuffer(format, width, height, pool: pool)
        let w = i32(width), h = i32(height)
        switch format {
        case .i420:
            _ = I420Copy(pl(0), st(0), pl(1), st(1), pl(2), st(2),
                         dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), dst.pl(2), dst.st(2), w, -h)
        case .nv12VideoRange, .nv12FullRange:
            _ = NV12Copy(pl(0), st(0), pl(1), st(1), dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), w, -h)
        case .bgra:
            _ = ARGBCopy(pl(0), st(0), dst.pl(0), dst.st(0), w, -h)
        }
        return dst
    }

    /// A video-range I420 picture filled with one colour (black is Y 16, U = V 128).
    public static func filledI420(width: Int, height: Int, y: UInt8, u: UInt8, v: UInt8,
                                  pool: VideoBufferPool? = nil) -> VideoFrameBuffer {
        let w = clampSide(width), h = clampSide(height)
        let dst = outputBuffer(.i420, w, h, pool: pool)
        _ = I420Rect(dst.pl(0), dst.st(0), dst.pl(1), dst.st(1), dst.pl(2), dst.st(2), 0, 0, i32(w), i32(h),
                     Int32(y), Int32(u), Int32(v))
        return dst
    }
}

extension VideoFrame {
    /// The same frame with an I420 buffer (what encoders take); no copy when it already is one.
    public func toI420(pool: VideoBufferPool? = nil) -> VideoFrame {
        var frame = self
        frame.buffer = buffer.converted(to: .i420, pool: pool)
        return frame
    }

    /// The frame with its rotation turned into pixels, so it shows upright with rotation `.r0`.
    public func applyingRotation(pool: VideoBufferPool? = nil) -> VideoFrame {
        if rotation == .r0 { return self }
        // Faces are in upright coordinates already: they stay as they are.
        return VideoFrame(buffer: buffer.rotated(rotation, pool: pool), rotation: .r0, timestampNs: timestampNs, faces: faces)
    }
}
