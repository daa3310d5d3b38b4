import CYUV
import Media

/// Turns whatever a capturer delivered into I420 for the encoders (NV12 from cameras, BGRA
/// from screens) with the Media target's libyuv conversions; I420 passes through untouched.
/// Converted buffers come from the encoder's own pool.
final class I420Converter {
    private var pool: VideoBufferPool?

    func i420(_ buffer: VideoFrameBuffer) -> VideoFrameBuffer {
        if buffer.format == .i420 { return buffer }
        if pool == nil || pool?.width != buffer.width || pool?.height != buffer.height {
            pool = VideoBufferPool(format: .i420, width: buffer.width, height: buffer.height, capacity: 3)
        }
        return buffer.converted(to: .i420, pool: pool)
    }
}

/// Where decoders put their pictures: pooled I420 buffers of the current size.
final class DecodedFramePool {
    private var pool: VideoBufferPool?

    func buffer(width: Int, height: Int) -> VideoFrameBuffer {
        if let pool, pool.width == width, pool.height == height { return pool.get() }
        // Renderers and the track may hold a few frames; more than 6 in flight just allocates.
        let pool = VideoBufferPool(format: .i420, width: width, height: height, capacity: 6)
        self.pool = pool
        return pool.get()
    }

    /// Copies an I420 picture held by a decoder into a pooled buffer.
    func copyI420(y: UnsafePointer<UInt8>, strideY: Int, u: UnsafePointer<UInt8>, strideU: Int,
                  v: UnsafePointer<UInt8>, strideV: Int, width: Int, height: Int) -> VideoFrameBuffer {
        let out = buffer(width: width, height: height)
        _ = I420Copy(y, Int32(strideY), u, Int32(strideU), v, Int32(strideV),
                     out.planePointer(0), Int32(out.strides[0]), out.planePointer(1), Int32(out.strides[1]),
                     out.planePointer(2), Int32(out.strides[2]), Int32(width), Int32(height))
        return out
    }
}

/// Encoder settings the codecs accept (a size of 0x0 means "from the first frame").
func validateEncoderSettings(_ s: VideoEncoderSettings, codec: String, requireEven: Bool, maxTemporalLayers: Int = 1) throws(MediaError) {
    guard (1...maxTemporalLayers).contains(s.temporalLayers) else {
        throw MediaError("\(codec) encoder: \(s.temporalLayers) temporal layers (it makes 1\(maxTemporalLayers > 1 ? "…\(maxTemporalLayers)" : ""))")
    }
    guard s.bitrate > 0 else { throw MediaError("\(codec) encoder: bitrate \(s.bitrate) must be > 0") }
    guard s.framerate > 0, s.framerate <= 240 else { throw MediaError("\(codec) encoder: framerate \(s.framerate) out of range") }
    guard s.keyframeInterval >= 0 else { throw MediaError("\(codec) encoder: negative keyframe interval") }
    if s.width != 0 || s.height != 0 { try validateFrameSize(s.width, s.height, codec: codec, requireEven: requireEven) }
}

/// Frame sizes the codecs accept.
func validateFrameSize(_ width: Int, _ height: Int, codec: String, requireEven: Bool) throws(MediaError) {
    guard width >= 16, height >= 16, width <= 4096, height <= 4096 else {
        throw MediaError("\(codec) encoder: frame size \(width)x\(height) outside 16…4096")
    }
    guard !requireEven || (width % 2 == 0 && height % 2 == 0) else {
        throw MediaError("\(codec) encoder: frame size \(width)x\(height) must be even (4:2:0 chroma)")
    }
}
