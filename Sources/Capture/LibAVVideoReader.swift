import CFFmpeg
import CYUV
import Media

/// Decodes the best video stream of any container/codec libavformat and libavcodec know
/// (MP4, MKV, WebM, AVI, …) into I420 buffers from a pool. Owns its libav contexts and frees
/// them in deinit.
public final class LibAVVideoReader {
    public let path: String
    /// Size of the stream as declared by the container (decoded frames may change it).
    public let width: Int
    public let height: Int
    /// avg_frame_rate, else r_frame_rate, else 30.
    public let frameRate: Double
    /// libavcodec's name for the stream's codec (e.g. "h264", "mpeg4").
    public let codecName: String
    /// libavformat's name for the container (e.g. "matroska,webm").
    public let formatName: String
    public private(set) var framesRead = 0

    private var format: UnsafeMutablePointer<AVFormatContext>?
    private var codec: UnsafeMutablePointer<AVCodecContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var frame: UnsafeMutablePointer<AVFrame>?
    private var sws: OpaquePointer?
    private let streamIndex: Int32
    private var pool: VideoBufferPool
    private var draining = false
    private var ended = false

    public init(path: String) throws {
        self.path = path
        var fmt: UnsafeMutablePointer<AVFormatContext>?
        var rc = avformat_open_input(&fmt, path, nil, nil)
        guard rc >= 0, let fmt else {
            if rc == swiftrtc_averror_invaliddata() {
                throw MediaError("\(path): not a video file libavformat recognises (\(LibAV.message(rc)))")
            }
            throw MediaError("\(path): cannot open as a media file: \(LibAV.message(rc))")
        }
        format = fmt
        // From here on, deinit-free cleanup must happen by hand if init throws.
        func fail(_ message: String) -> MediaError {
            var f: UnsafeMutablePointer<AVFormatContext>? = fmt
            avformat_close_input(&f)
            return MediaError("\(path): \(message)")
        }
        rc = avformat_find_stream_info(fmt, nil)
        guard rc >= 0 else { throw fail("cannot read stream information: \(LibAV.message(rc))") }
        let containerName = fmt.pointee.iformat.map { String(cString: $0.pointee.name) } ?? "unknown"
        var decoder: UnsafePointer<AVCodec>?
        let index = av_find_best_stream(fmt, AVMEDIA_TYPE_VIDEO, -1, -1, &decoder, 0)
        guard index >= 0 else {
            if index == swiftrtc_averror_decoder_not_found() {
                throw fail("video stream has no decoder in this libavcodec (\(containerName))")
            }
            throw fail("no video stream (\(containerName) with \(fmt.pointee.nb_streams) stream(s))")
        }
        guard let decoder, let streams = fmt.pointee.streams, let stream = streams[Int(index)] else {
            throw fail("no decoder for the video stream")
        }
        guard let params = stream.pointee.codecpar else { throw fail("video stream has no codec parameters") }
        let name = String(cString: decoder.pointee.name)
        if Self.nonVideoCodecs.contains(name) {
            // libavformat turns text files into "video" (ANSI art); that is not a video file.
            throw fail("not a video file (\(containerName) demuxer, codec \(name))")
        }
        guard VideoFrameBuffer.isValidSize(width: Int(params.pointee.width), height: Int(params.pointee.height)) else {
            throw fail("video stream has an unusable size \(params.pointee.width)x\(params.pointee.height) "
                       + "(1…\(VideoFrameBuffer.maxDimension) a side)")
        }
        guard let ctx = avcodec_alloc_context3(decoder) else { throw fail("out of memory allocating the decoder") }
        var c: UnsafeMutablePointer<AVCodecContext>? = ctx
        rc = avcodec_parameters_to_context(ctx, params)
        if rc >= 0 { rc = avcodec_open2(ctx, decoder, nil) }
        guard rc >= 0 else {
            avcodec_free_context(&c)
            throw fail("cannot open the \(name) decoder: \(LibAV.message(rc))")
        }
        codec = ctx
        packet = av_packet_alloc()
        frame = av_frame_alloc()
        guard packet != nil, frame != nil else {
            avcodec_free_context(&c)
            av_packet_free(&packet)
            av_frame_free(&frame)
            throw fail("out of memory allocating packets")
        }
        streamIndex = index
        width = Int(params.pointee.width)
        height = Int(params.pointee.height)
        codecName = name
        formatName = containerName
        func rate(_ r: AVRational) -> Double? {
            guard r.num > 0, r.den > 0 else { return nil }
            let v = Double(r.num) / Double(r.den)
            return v > 0 && v <= 1000 ? v : nil
        }
        frameRate = rate(stream.pointee.avg_frame_rate) ?? rate(stream.pointee.r_frame_rate) ?? 30
        pool = VideoBufferPool(format: .i420, width: width, height: height)
    }

    deinit {
        av_frame_free(&frame)
        av_packet_free(&packet)
        avcodec_free_context(&codec)
        avformat_close_input(&format)
        if let sws { sws_freeContext(sws) }
    }

    /// Codecs libavformat reports as video that are not pictures of a camera or file.
    static let nonVideoCodecs: Set<String> = ["ansi", "bintext", "xbin", "idf", "tty"]

    /// The next decoded picture as I420, or nil at the end of the stream.
    public func readFrame() throws -> VideoFrameBuffer? {
        guard let format, let codec, let packet, let frame else { return nil }
        if ended { return nil }
        while true {
            let rc = avcodec_receive_frame(codec, frame)
            if rc >= 0 {
                defer { av_frame_unref(frame) }
                let buffer = try convert(frame)
                framesRead += 1
                return buffer
            }
            if rc == swiftrtc_averror_eof() { ended = true; return nil }
            guard rc == swiftrtc_averror_eagain() else {
                throw MediaError("\(path): frame \(framesRead): decoding failed: \(LibAV.message(rc))")
            }
            if draining { ended = true; return nil }
            let r = av_read_frame(format, packet)
            if r < 0 {
                guard r == swiftrtc_averror_eof() || avio_feof_safe(format) else {
                    throw MediaError("\(path): reading after frame \(framesRead) failed: \(LibAV.message(r))")
                }
                avcodec_send_packet(codec, nil)   // enter draining: the decoder returns what it holds
                draining = true
                continue
            }
            defer { av_packet_unref(packet) }
            guard packet.pointee.stream_index == streamIndex else { continue }
            let s = avcodec_send_packet(codec, packet)
            if s < 0 && s != swiftrtc_averror_eagain() {
                throw MediaError("\(path): frame \(framesRead): corrupt packet at byte \(packet.pointee.pos): \(LibAV.message(s))")
            }
        }
    }

    /// Goes back to the first frame.
    public func rewind() throws {
        guard let format, let codec else { return }
        var start: Int64 = 0
        if let streams = format.pointee.streams, let stream = streams[Int(streamIndex)],
           stream.pointee.start_time != swiftrtc_av_nopts_value() {
            start = stream.pointee.start_time
        }
        var rc = av_seek_frame(format, streamIndex, start, AVSEEK_FLAG_BACKWARD)
        if rc < 0 { rc = avformat_seek_file(format, -1, Int64.min, 0, 0, 0) }
        if rc < 0, let pb = format.pointee.pb {
            // Containers without an index: start reading from the top again.
            rc = avio_seek(pb, 0, SEEK_SET) >= 0 ? avformat_flush(format) : -1
        }
        guard rc >= 0 else {
            throw MediaError("\(path): cannot seek back to the start: \(LibAV.message(Int32(truncatingIfNeeded: rc)))")
        }
        avcodec_flush_buffers(codec)
        draining = false
        ended = false
        framesRead = 0
    }

    private func avio_feof_safe(_ format: UnsafeMutablePointer<AVFormatContext>) -> Bool {
        guard let pb = format.pointee.pb else { return false }
        return avio_feof(pb) != 0
    }

    private func convert(_ frame: UnsafeMutablePointer<AVFrame>) throws -> VideoFrameBuffer {
        let w = Int(frame.pointee.width), h = Int(frame.pointee.height)
        guard VideoFrameBuffer.isValidSize(width: w, height: h) else {
            throw MediaError("\(path): frame \(framesRead): decoder returned size \(w)x\(h) (1…\(VideoFrameBuffer.maxDimension) a side)")
        }
        if pool.width != w || pool.height != h {
            pool = VideoBufferPool(format: .i420, width: w, height: h)
        }
        let buffer = pool.get()
        let dy = buffer.planePointer(0), du = buffer.planePointer(1), dv = buffer.planePointer(2)
        let sy = Int32(buffer.strides[0]), su = Int32(buffer.strides[1]), sv = Int32(buffer.strides[2])
        let pixFmt = frame.pointee.format
        let data = frame.pointee.data, lines = frame.pointee.linesize
        if pixFmt == AV_PIX_FMT_YUV420P.rawValue || pixFmt == AV_PIX_FMT_YUVJ420P.rawValue,
           let y = data.0, let u = data.1, let v = data.2 {
            I420Copy(y, lines.0, u, lines.1, v, lines.2, dy, sy, du, su, dv, sv, Int32(w), Int32(h))
            return buffer
        }
        guard let ctx = sws_getCachedContext(sws, Int32(w), Int32(h), AVPixelFormat(pixFmt),
                                             Int32(w), Int32(h), AV_PIX_FMT_YUV420P, SWS_BILINEAR, nil, nil, nil) else {
            let name = av_get_pix_fmt_name(AVPixelFormat(pixFmt)).map { String(cString: $0) } ?? "#\(pixFmt)"
            throw MediaError("\(path): frame \(framesRead): cannot convert pixel format \(name) to I420")
        }
        sws = ctx
        var srcData: [UnsafePointer<UInt8>?] = [data.0, data.1, data.2, data.3, data.4, data.5, data.6, data.7].map { p in p.map { UnsafePointer($0) } }
        var srcLines: [Int32] = [lines.0, lines.1, lines.2, lines.3, lines.4, lines.5, lines.6, lines.7]
        var dstData: [UnsafeMutablePointer<UInt8>?] = [dy, du, dv, nil]
        var dstLines: [Int32] = [sy, su, sv, 0]
        let rows = sws_scale(ctx, &srcData, &srcLines, 0, Int32(h), &dstData, &dstLines)
        guard rows > 0 else {
            throw MediaError("\(path): frame \(framesRead): pixel conversion failed: \(LibAV.message(rows))")
        }
        return buffer
    }
}

/// Helpers for libav error codes.
public enum LibAV {
    public static func message(_ code: Int32) -> String {
        var buf = [CChar](repeating: 0, count: 256)
        if av_strerror(code, &buf, buf.count) < 0 { return "error \(code)" }
        return String(decoding: buf.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
