import CFFmpeg
import CYUV
import Media

/// H.264 decoder on libavcodec, the decoder libwebrtc ships: fastest here, every profile
/// (CABAC, high, 4:2:2), and it keeps going over damaged slices. A frame it had to conceal
/// throws, and the decoder then waits for the next IDR.
public final class FFmpegH264Decoder: VideoDecoder {
    public let codec = VideoCodecType.h264
    private var context: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var picture: UnsafeMutablePointer<AVFrame>?
    /// Input copy with the zero padding libavcodec's bit readers may overread into.
    private var input: [UInt8] = []
    private let pool = DecodedFramePool()
    private var waitingForKeyframe = true

    public init() throws(MediaError) {
        guard let decoderCodec = avcodec_find_decoder(AV_CODEC_ID_H264) else {
            throw MediaError("H.264 decoder: libavcodec has no H.264 decoder")
        }
        guard let ctx = avcodec_alloc_context3(decoderCodec) else { throw MediaError("H.264 decoder: out of memory") }
        context = ctx
        ctx.pointee.thread_count = 1             // one decode thread per stream, no frame delay
        ctx.pointee.flags |= Int32(AV_CODEC_FLAG_LOW_DELAY)
        ctx.pointee.flags2 |= Int32(AV_CODEC_FLAG2_FAST)
        ctx.pointee.err_recognition |= Int32(AV_EF_EXPLODE)
        // Damage is reported by throwing; keep libavcodec's per-macroblock complaints out of
        // stderr (errors become VERBOSE for this context only, not process-wide).
        ctx.pointee.log_level_offset = AV_LOG_VERBOSE - AV_LOG_ERROR
        let rc = avcodec_open2(ctx, decoderCodec, nil)
        guard rc >= 0 else { throw MediaError("H.264 decoder: avcodec_open2 failed: \(ffmpegErrorString(rc))") }
        packet = av_packet_alloc()
        picture = av_frame_alloc()
        guard packet != nil, picture != nil else { throw MediaError("H.264 decoder: out of memory") }
    }

    deinit {
        av_packet_free(&packet)
        av_frame_free(&picture)
        avcodec_free_context(&context)
    }

    public func decode(_ frame: EncodedFrame) throws(MediaError) -> VideoFrame? {
        let types = H264Bitstream.nalTypes(frame.data)
        guard !types.isEmpty else {
            throw MediaError("H.264 decode: no NAL unit in \(frame.data.count) bytes (no Annex-B start code)")
        }
        guard let ctx = context, let pkt = packet, let pic = picture else { throw MediaError("H.264 decode: decoder not open") }
        if waitingForKeyframe {
            guard types.contains(H264Bitstream.nalIDR) else { return nil }
        }
        let padding = Int(AV_INPUT_BUFFER_PADDING_SIZE)
        if input.count < frame.data.count + padding { input = [UInt8](repeating: 0, count: frame.data.count + padding) }
        let sendResult: Int32 = input.withUnsafeMutableBufferPointer { buf in
            guard let base = buf.baseAddress else { return swiftrtc_averror(EINVAL) }
            frame.data.withUnsafeBufferPointer { src in
                if let s = src.baseAddress { base.update(from: s, count: src.count) }
            }
            (base + frame.data.count).update(repeating: 0, count: padding)
            pkt.pointee.data = base
            pkt.pointee.size = Int32(frame.data.count)
            pkt.pointee.pts = Int64(frame.rtpTimestamp)
            defer { pkt.pointee.data = nil; pkt.pointee.size = 0 }
            return avcodec_send_packet(ctx, pkt)
        }
        if sendResult < 0 {
            fail(ctx)
            throw MediaError("H.264 decode: corrupt frame (\(ffmpegErrorString(sendResult)), \(frame.data.count) bytes, NAL types \(types)); waiting for a keyframe")
        }
        var output: VideoFrame? = nil
        while true {
            let rc = avcodec_receive_frame(ctx, pic)
            if rc == swiftrtc_averror(EAGAIN) || rc == swiftrtc_averror_eof() { break }
            if rc < 0 {
                fail(ctx)
                throw MediaError("H.264 decode: \(ffmpegErrorString(rc)); waiting for a keyframe")
            }
            defer { av_frame_unref(pic) }
            if pic.pointee.decode_error_flags != 0 || pic.pointee.flags & Int32(AV_FRAME_FLAG_CORRUPT) != 0 {
                fail(ctx)
                throw MediaError("H.264 decode: picture damaged (error flags 0x\(String(pic.pointee.decode_error_flags, radix: 16))); waiting for a keyframe")
            }
            output = try copyOut(pic, frame)
        }
        if output != nil { waitingForKeyframe = false }
        return output
    }

    private func fail(_ ctx: UnsafeMutablePointer<AVCodecContext>) {
        avcodec_flush_buffers(ctx)
        waitingForKeyframe = true
    }

    private func copyOut(_ pic: UnsafeMutablePointer<AVFrame>, _ frame: EncodedFrame) throws(MediaError) -> VideoFrame {
        let f = pic.pointee
        let width = Int(f.width), height = Int(f.height)
        guard VideoFrameBuffer.isValidSize(width: width, height: height) else {
            throw MediaError("H.264 decode: libavcodec returned a \(width)x\(height) picture (1…\(VideoFrameBuffer.maxDimension) a side)")
        }
        guard let y = f.data.0, let u = f.data.1, let v = f.data.2 else {
            throw MediaError("H.264 decode: libavcodec returned an empty \(width)x\(height) picture")
        }
        let format = AVPixelFormat(f.format)
        let buffer: VideoFrameBuffer
        switch format {
        case AV_PIX_FMT_YUV420P, AV_PIX_FMT_YUVJ420P:
            buffer = pool.copyI420(y: y, strideY: Int(f.linesize.0), u: u, strideU: Int(f.linesize.1),
                                   v: v, strideV: Int(f.linesize.2), width: width, height: height)
        case AV_PIX_FMT_YUV422P, AV_PIX_FMT_YUVJ422P, AV_PIX_FMT_YUV444P, AV_PIX_FMT_YUVJ444P:
            buffer = pool.buffer(width: width, height: height)
            let convert = (format == AV_PIX_FMT_YUV422P || format == AV_PIX_FMT_YUVJ422P) ? I422ToI420 : I444ToI420
            _ = convert(y, f.linesize.0, u, f.linesize.1, v, f.linesize.2,
                        buffer.planePointer(0), Int32(buffer.strides[0]), buffer.planePointer(1), Int32(buffer.strides[1]),
                        buffer.planePointer(2), Int32(buffer.strides[2]), Int32(width), Int32(height))
        default:
            let name = av_get_pix_fmt_name(format).map { String(cString: $0) } ?? "\(f.format)"
            throw MediaError("H.264 decode: unsupported decoded pixel format \(name)")
        }
        return VideoFrame(buffer: buffer, rotation: frame.rotation, timestampNs: frame.captureTimeNs)
    }
}

func ffmpegErrorString(_ code: Int32) -> String {
    var buf = [CChar](repeating: 0, count: 128)
    _ = av_strerror(code, &buf, buf.count)
    let text = buf.withUnsafeBufferPointer { p in p.baseAddress.map { String(cString: $0) } ?? "" }
    return "\(text) (\(code))"
}
