import CJPEG
import CYUV
import Media

/// Decodes JPEG files (baseline or progressive, any chroma subsampling, greyscale) to I420
/// frames with libjpeg-turbo. Corrupt or truncated files are errors, never a half-grey picture.
public enum JPEGDecoder {
    /// Width and height from the file's header, without decoding.
    public static func size(of bytes: [UInt8]) throws(MediaError) -> (width: Int, height: Int) {
        var w: Int32 = 0, h: Int32 = 0, components: Int32 = 0
        var message = [CChar](repeating: 0, count: Int(CJPEG_ERROR_LENGTH))
        let status = bytes.withUnsafeBufferPointer { src in
            cjpeg_read_header(src.baseAddress, src.count, &w, &h, &components, &message)
        }
        guard status == 0 else { throw MediaError("JPEGDecoder: not a JPEG header: \(text(message))") }
        return (Int(w), Int(h))
    }

    /// The picture as an I420 frame (timestamp 0, no rotation).
    public static func decode(_ bytes: [UInt8]) throws(MediaError) -> VideoFrame {
        let (w, h) = try size(of: bytes)
        guard VideoFrameBuffer.isValidSize(width: w, height: h) else {
            throw MediaError("JPEGDecoder: picture size \(w)x\(h) out of range 1…\(VideoFrameBuffer.maxDimension)")
        }
        let bgra = VideoFrameBuffer(format: .bgra, width: w, height: h)
        var message = [CChar](repeating: 0, count: Int(CJPEG_ERROR_LENGTH))
        let status = bytes.withUnsafeBufferPointer { src in
            cjpeg_decode(src.baseAddress, src.count, Int32(CJPEG_PIXELS_BGRA), bgra.planePointer(0),
                         Int32(bgra.strides[0]), Int32(w), Int32(h), &message)
        }
        guard status == 0 else { throw MediaError("JPEGDecoder: corrupt \(w)x\(h) JPEG (\(bytes.count) bytes): \(text(message))") }
        let i420 = VideoFrameBuffer(format: .i420, width: w, height: h)
        _ = ARGBToI420(bgra.planePointer(0), Int32(bgra.strides[0]), i420.planePointer(0), Int32(i420.strides[0]),
                       i420.planePointer(1), Int32(i420.strides[1]), i420.planePointer(2), Int32(i420.strides[2]),
                       Int32(w), Int32(h))
        return VideoFrame(buffer: i420, timestampNs: 0)
    }

    private static func text(_ message: [CChar]) -> String {
        let s = String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return s.isEmpty ? "unknown error" : s
    }
}
