import CFFmpeg
import Media

/// Encodes I420 frames into a container file with libavcodec/libavformat (container from the
/// file extension: .mkv, .mp4, .avi, .webm…). For recordings and for making test files; the
/// codec is any libavcodec encoder by name ("mpeg4", "ffv1", "mjpeg", "libvpx"…).
public final class VideoFileWriter {
    public let path: String
    public let width: Int
    public let height: Int
    public private(set) var framesWritten = 0

    private var output: UnsafeMutablePointer<AVFormatContext>?
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var stream: UnsafeMutablePointer<AVStream>?
    private var finished = false

    public init(path: String, width: Int, height: Int, fps: Int, codec codecName: String = "mpeg4",
                bitrate: Int = 2_000_000) throws {
        self.path = path
        self.width = width
        self.height = height
        guard VideoFrameBuffer.isValidSize(width: width, height: height), width % 2 == 0, height % 2 == 0 else {
            throw MediaError("\(path): cannot write \(width)x\(height) video (even sizes 2…\(VideoFrameBuffer.maxDimension))")
        }
        guard fps > 0, fps <= 1000 else { throw MediaError("\(path): frame rate \(fps) out of range") }
        var oc: UnsafeMutablePointer<AVFormatContext>?
        var rc = avformat_alloc_output_context2(&oc, nil, nil, path)
        guard rc >= 0, let oc else {
            throw MediaError("\(path): no container format for this file name: \(LibAV.message(rc))")
        }
        output = oc
        var ok = false
        defer {
            // Init failed part way: free what was made (deinit does not run for a failed init).
            if !ok { Self.release(output: &output, codec: &codec, frame: &frame, packet: &packet, openedIO: false) }
        }
        guard let encoder = avcodec_find_encoder_by_name(codecName) else {
            throw MediaError("\(path): libavcodec has no encoder named '\(codecName)'")
        }
        guard let st = avformat_new_stream(oc, nil), let ctx = avcodec_alloc_context3(encoder) else {
            throw MediaError("\(path): out of memory setting up the encoder")
        }
        stream = st
        codec = ctx
        ctx.pointee.width = Int32(width)
        ctx.pointee.height = Int32(height)
        ctx.pointee.time_base = AVRational(num: 1, den: Int32(fps))
        ctx.pointee.framerate = AVRational(num: Int32(fps), den: 1)
        ctx.pointee.pix_fmt = AV_PIX_FMT_YUV420P
        ctx.pointee.bit_rate = Int64(bitrate)
        ctx.pointee.gop_size = 12
        ctx.pointee.max_b_frames = 0
        if (oc.pointee.oformat.pointee.flags & AVFMT_GLOBALHEADER) != 0 {
            ctx.pointee.flags |= Int32(AV_CODEC_FLAG_GLOBAL_HEADER)
        }
        rc = avcodec_open2(ctx, encoder, nil)
        guard rc >= 0 else { throw MediaError("\(path): cannot open the \(codecName) encoder: \(LibAV.message(rc))") }
        rc = avcodec_parameters_from_context(st.pointee.codecpar, ctx)
        guard rc >= 0 else { throw MediaError("\(path): encoder parameters: \(LibAV.message(rc))") }
        st.pointee.time_base = ctx.pointee.time_base
        st.pointee.avg_frame_rate = ctx.pointee.framerate
        if (oc.pointee.oformat.pointee.flags & AVFMT_NOFILE) == 0 {
            rc = avio_open(&oc.pointee.pb, path, AVIO_FLAG_WRITE)
            guard rc >= 0 else { throw MediaError("\(path): cannot create: \(LibAV.message(rc))") }
        }
        rc = avformat_write_header(oc, nil)
        guard rc >= 0 else {
            if oc.pointee.pb != nil { avio_closep(&oc.pointee.pb) }
            throw MediaError("\(path): cannot write the container header: \(LibAV.message(rc))")
        }
        frame = av_frame_alloc()
        packet = av_packet_alloc()
        guard frame != nil, packet != nil else {
            if oc.pointee.pb != nil { avio_closep(&oc.pointee.pb) }
            throw MediaError("\(path): out of memory")
        }
        ok = true
    }

    deinit {
        if !finished { try? finish() }
        Self.release(output: &output, codec: &codec, frame: &frame, packet: &packet, openedIO: true)
    }

    private static func release(output: inout UnsafeMutablePointer<AVFormatContext>?,
                                codec: inout UnsafeMutablePointer<AVCodecContext>?,
                                frame: inout UnsafeMutablePointer<AVFrame>?,
                                packet: inout UnsafeMutablePointer<AVPacket>?, openedIO: Bool) {
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&codec)
        if let oc = output {
            if openedIO, oc.pointee.pb != nil, (oc.pointee.oformat.pointee.flags & AVFMT_NOFILE) == 0 {
                avio_closep(&oc.pointee.pb)
            }
            avformat_free_context(oc)
            output = nil
        }
    }

    /// Encodes one frame (I420 of the writer's size).
    public func write(_ videoFrame: VideoFrame) throws {
        let b = videoFrame.buffer
        guard !finished, let codec, let frame else { throw MediaError("\(path): writer already finished") }
        guard b.format == .i420, b.width == width, b.height == height else {
            throw MediaError("\(path): frame \(framesWritten) is \(b.format) \(b.width)x\(b.height), writer wants i420 \(width)x\(height)")
        }
        frame.pointee.format = AV_PIX_FMT_YUV420P.rawValue
        frame.pointee.width = Int32(width)
        frame.pointee.height = Int32(height)
        frame.pointee.data.0 = b.planePointer(0)
        frame.pointee.data.1 = b.planePointer(1)
        frame.pointee.data.2 = b.planePointer(2)
        frame.pointee.linesize.0 = Int32(b.strides[0])
        frame.pointee.linesize.1 = Int32(b.strides[1])
        frame.pointee.linesize.2 = Int32(b.strides[2])
        frame.pointee.pts = Int64(framesWritten)
        // The frame's planes are not reference counted, so libavcodec copies what it keeps.
        let rc = avcodec_send_frame(codec, frame)
        frame.pointee.data.0 = nil; frame.pointee.data.1 = nil; frame.pointee.data.2 = nil
        guard rc >= 0 else { throw MediaError("\(path): encoding frame \(framesWritten) failed: \(LibAV.message(rc))") }
        framesWritten += 1
        try drain()
    }

    /// Flushes the encoder, writes the container trailer and closes the file. Idempotent.
    public func finish() throws {
        guard !finished, let codec, let output else { return }
        finished = true
        avcodec_send_frame(codec, nil)
        try drain()
        let rc = av_write_trailer(output)
        if output.pointee.pb != nil, (output.pointee.oformat.pointee.flags & AVFMT_NOFILE) == 0 {
            avio_closep(&output.pointee.pb)
        }
        guard rc >= 0 else { throw MediaError("\(path): writing the container trailer failed: \(LibAV.message(rc))") }
    }

    private func drain() throws {
        guard let codec, let packet, let output, let stream else { return }
        while true {
            let rc = avcodec_receive_packet(codec, packet)
            if rc == swiftrtc_averror_eagain() || rc == swiftrtc_averror_eof() { return }
            guard rc >= 0 else { throw MediaError("\(path): encoder failed: \(LibAV.message(rc))") }
            av_packet_rescale_ts(packet, codec.pointee.time_base, stream.pointee.time_base)
            packet.pointee.stream_index = stream.pointee.index
            let w = av_interleaved_write_frame(output, packet)   // takes the packet's data
            guard w >= 0 else { throw MediaError("\(path): writing a packet failed: \(LibAV.message(w))") }
        }
    }
}
