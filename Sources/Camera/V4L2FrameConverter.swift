import CYUV
import Media

/// Turns the bytes of one V4L2 buffer into an I420 frame buffer from a pool: YUYV, NV12 and
/// YU12 with libyuv, MJPEG with libyuv's libjpeg-turbo decoder. nil for a short or corrupt
/// buffer (the caller drops the frame).
public struct V4L2FrameConverter: Sendable {
    let format: V4L2PixFormat
    let pool: VideoBufferPool

    public init(format: V4L2PixFormat) {
        self.format = format
        pool = VideoBufferPool(format: .i420, width: format.width, height: format.height, capacity: 8)
    }

    public func convert(_ bytes: UnsafeRawBufferPointer) -> VideoFrameBuffer? {
        guard let src = bytes.baseAddress?.assumingMemoryBound(to: UInt8.self) else { return nil }
        let w = format.width, h = format.height, cw = (w + 1) / 2, ch = (h + 1) / 2
        let dst = pool.get()
        let y = dst.planePointer(0), u = dst.planePointer(1), v = dst.planePointer(2)
        let sy = Int32(dst.strides[0]), su = Int32(dst.strides[1]), sv = Int32(dst.strides[2])
        switch format.fourcc {
        case V4L2FourCC.yuyv:
            let stride = max(format.bytesPerLine, 2 * w)
            guard bytes.count >= stride * (h - 1) + 2 * w else { return nil }
            _ = YUY2ToI420(src, Int32(stride), y, sy, u, su, v, sv, Int32(w), Int32(h))
        case V4L2FourCC.nv12:
            let stride = max(format.bytesPerLine, w)
            guard bytes.count >= stride * h + stride * (ch - 1) + 2 * cw else { return nil }
            _ = NV12ToI420(src, Int32(stride), src + stride * h, Int32(stride), y, sy, u, su, v, sv, Int32(w), Int32(h))
        case V4L2FourCC.yu12:
            let stride = max(format.bytesPerLine, w), cstride = (stride + 1) / 2
            guard bytes.count >= stride * h + cstride * ch * 2 else { return nil }
            let us = src + stride * h, vs = us + cstride * ch
            _ = I420Copy(src, Int32(stride), us, Int32(cstride), vs, Int32(cstride), y, sy, u, su, v, sv, Int32(w), Int32(h))
        case V4L2FourCC.mjpeg:
            var jw: Int32 = 0, jh: Int32 = 0
            guard bytes.count > 4, MJPGSize(src, bytes.count, &jw, &jh) == 0, Int(jw) == w, Int(jh) == h,
                  MJPGToI420(src, bytes.count, y, sy, u, su, v, sv, Int32(w), Int32(h), Int32(w), Int32(h)) == 0 else { return nil }
            // JFIF's YCbCr is full range; our I420 is BT.601 limited range like every other path.
            Self.toLimitedRange(dst)
        default:
            return nil
        }
        return dst
    }

    /// Full-range (0…255) Y, Cb, Cr to limited range (16…235, 16…240), in place.
    static func toLimitedRange(_ b: VideoFrameBuffer) {
        withUnsafePointer(to: lumaTable) { lt in
            withUnsafePointer(to: chromaTable) { ct in
                let luma = UnsafeRawPointer(lt).assumingMemoryBound(to: UInt8.self)
                let chroma = UnsafeRawPointer(ct).assumingMemoryBound(to: UInt8.self)
                for plane in 0..<3 {
                    let table = plane == 0 ? luma : chroma
                    let p = b.planePointer(plane), stride = b.strides[plane]
                    let w = b.planeWidth(plane)
                    for row in 0..<b.planeHeight(plane) {
                        let r = p + row * stride
                        for x in 0..<w { r[x] = table[Int(r[x])] }
                    }
                }
            }
        }
    }

    private typealias Table = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                               UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                               UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64,
                               UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)
    private static func table(_ f: (Int) -> Int) -> Table {
        var t: Table = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &t) { raw in
            for i in 0..<256 { raw[i] = UInt8(f(i)) }
        }
        return t
    }
    private static let lumaTable = table { 16 + ($0 * 219 + 127) / 255 }
    private static let chromaTable = table { 128 + (($0 - 128) * 224 + ($0 >= 128 ? 127 : -127)) / 255 }
}
