import CVPX
import Media

/// VP8 decoder on libvpx. A frame libvpx rejects or marks corrupt throws; the decoder then
/// starts afresh at the next keyframe.
public final class VP8Decoder: VideoDecoder {
    public let codec = VideoCodecType.vp8
    private let context = UnsafeMutablePointer<vpx_codec_ctx_t>.allocate(capacity: 1)
    private var isOpen = false
    private let pool = DecodedFramePool()
    private var waitingForKeyframe = true
    private var needsReset = false

    public init() throws(MediaError) {
        context.initialize(to: vpx_codec_ctx_t())
        try open()
    }

    deinit {
        if isOpen { vpx_codec_destroy(context) }
        context.deallocate()
    }

    /// A VP8 keyframe: frame-type bit clear and the 9d 01 2a start code (RFC 6386 §9.1).
    public static func isKeyframe(_ data: [UInt8]) -> Bool {
        data.count >= 10 && data[0] & 1 == 0 && data[3] == 0x9d && data[4] == 0x01 && data[5] == 0x2a
    }

    public func decode(_ frame: EncodedFrame) throws(MediaError) -> VideoFrame? {
        guard frame.data.count >= 3 else {
            throw MediaError("VP8 decode: frame of \(frame.data.count) bytes is shorter than its 3-byte header")
        }
        let key = Self.isKeyframe(frame.data)
        if waitingForKeyframe {
            guard key else { return nil }
            if needsReset {
                vpx_codec_destroy(context)
                isOpen = false
                try open()
                needsReset = false
            }
        }
        let rc = frame.data.withUnsafeBufferPointer { vpx_codec_decode(context, $0.baseAddress, UInt32($0.count), nil, 0) }
        guard rc == VPX_CODEC_OK else {
            fail()
            throw MediaError("VP8 decode: \(vpxError(context, rc)) (\(frame.data.count) bytes, \(key ? "keyframe" : "delta frame")); waiting for a keyframe")
        }
        var corrupted: Int32 = 0
        if swiftrtc_vpx_control_int_ptr(context, Int32(VP8D_GET_FRAME_CORRUPTED.rawValue), &corrupted) == VPX_CODEC_OK, corrupted != 0 {
            fail()
            throw MediaError("VP8 decode: frame corrupt (\(frame.data.count) bytes); waiting for a keyframe")
        }
        var iterator: vpx_codec_iter_t? = nil
        var output: VideoFrame? = nil
        while let image = vpx_codec_get_frame(context, &iterator) {
            let img = image.pointee
            guard img.fmt == VPX_IMG_FMT_I420, let y = img.planes.0, let u = img.planes.1, let v = img.planes.2,
                  VideoFrameBuffer.isValidSize(width: Int(img.d_w), height: Int(img.d_h)) else {
                fail()
                throw MediaError("VP8 decode: unexpected picture \(img.d_w)x\(img.d_h) format \(img.fmt.rawValue)")
            }
            let buffer = pool.copyI420(y: y, strideY: Int(img.stride.0), u: u, strideU: Int(img.stride.1),
                                       v: v, strideV: Int(img.stride.2), width: Int(img.d_w), height: Int(img.d_h))
            output = VideoFrame(buffer: buffer, rotation: frame.rotation, timestampNs: frame.captureTimeNs)
        }
        if output != nil { waitingForKeyframe = false }
        return output
    }

    private func fail() {
        waitingForKeyframe = true
        needsReset = true
    }

    private func open() throws(MediaError) {
        let rc = swiftrtc_vpx_vp8_dec_init(context, 1)
        guard rc == VPX_CODEC_OK else { throw MediaError("VP8 decoder: init failed: \(vpxError(context, rc))") }
        isOpen = true
    }
}
