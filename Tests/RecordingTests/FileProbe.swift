import CFFmpeg

/// What libavformat reads back from a recording: per stream its codec, size, packet count and
/// first and last timestamps (seconds).
struct FileProbe {
    struct Stream {
        var codec: String
        var width = 0, height = 0, channels = 0
        var packets = 0, keyframes = 0
        var first: Double?
        var last: Double?
    }
    var format: String
    var streams: [Stream] = []
    var video: Stream? { streams.first { $0.width > 0 } }
    var audio: Stream? { streams.first { $0.channels > 0 } }

    init(_ path: String) throws {
        var ctx: UnsafeMutablePointer<AVFormatContext>?
        guard avformat_open_input(&ctx, path, nil, nil) >= 0, let ctx else { throw ProbeError("cannot open \(path)") }
        defer { var c: UnsafeMutablePointer<AVFormatContext>? = ctx; avformat_close_input(&c) }
        guard avformat_find_stream_info(ctx, nil) >= 0 else { throw ProbeError("no stream info in \(path)") }
        format = String(cString: ctx.pointee.iformat.pointee.name)
        var bases: [AVRational] = []
        for i in 0..<Int(ctx.pointee.nb_streams) {
            let st = ctx.pointee.streams[i]!
            let par = st.pointee.codecpar!.pointee
            streams.append(Stream(codec: String(cString: avcodec_get_name(par.codec_id)), width: Int(par.width), height: Int(par.height),
                                  channels: Int(par.ch_layout.nb_channels)))
            bases.append(st.pointee.time_base)
        }
        let packet = av_packet_alloc()
        defer { var p = packet; av_packet_free(&p) }
        while av_read_frame(ctx, packet) >= 0 {
            let i = Int(packet!.pointee.stream_index)
            let tb = bases[i]
            let pts = Double(packet!.pointee.pts) * Double(tb.num) / Double(tb.den)
            streams[i].packets += 1
            if packet!.pointee.flags & AV_PKT_FLAG_KEY != 0 { streams[i].keyframes += 1 }
            if streams[i].first == nil { streams[i].first = pts }
            streams[i].last = max(streams[i].last ?? pts, pts)
            av_packet_unref(packet)
        }
    }
}

struct ProbeError: Error, CustomStringConvertible {
    var description: String
    init(_ d: String) { description = d }
}
