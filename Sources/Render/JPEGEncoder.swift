import CJPEG
import Media

/// Encodes frames as baseline JPEG (4:2:0) with libjpeg-turbo: upright, exactly as PNGEncoder
/// turns the frame into RGB (rotation applied, BT.601 limited range).
public enum JPEGEncoder {
    /// The frame, upright, as a JPEG file; `quality` 1…100.
    public static func encode(_ frame: VideoFrame, quality: Int = 90) throws(MediaError) -> [UInt8] {
        let (width, height, rgb) = PNGEncoder.uprightRGB(frame)
        return try encode(rgb: rgb, width: width, height: height, quality: quality)
    }

    /// Packed 8-bit R,G,B rows (`width * height * 3` bytes) as a JPEG file.
    public static func encode(rgb: [UInt8], width: Int, height: Int, quality: Int = 90) throws(MediaError) -> [UInt8] {
        guard width > 0, height > 0, width <= 65500, height <= 65500, rgb.count == width * height * 3 else {
            throw MediaError("JPEGEncoder: \(rgb.count) bytes do not make a \(width)x\(height) RGB image")
        }
        var out: UnsafeMutablePointer<UInt8>?
        var size = 0
        var message = [CChar](repeating: 0, count: Int(CJPEG_ERROR_LENGTH))
        let status = rgb.withUnsafeBufferPointer { src in
            cjpeg_encode(src.baseAddress, Int32(width), Int32(height), Int32(width * 3), Int32(CJPEG_PIXELS_RGB),
                         Int32(max(1, min(100, quality))), &out, &size, &message)
        }
        guard status == 0, let out else {
            throw MediaError("JPEGEncoder: \(String(decoding: message.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self))")
        }
        defer { cjpeg_free(out) }
        return Array(UnsafeBufferPointer(start: out, count: size))
    }
}
