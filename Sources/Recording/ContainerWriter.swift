import Capture
import CFFmpeg
import Media
#if canImport(Glibc)
import Glibc
#endif

/// Writes encoded samples into a container with libavformat, without re-encoding. Not
/// thread-safe: the recorder drives it from one queue.
final class ContainerWriter {
    struct VideoFormat: Equatable {
        var codec: VideoCodecType
        var width: Int
        var height: Int
        /// H.264: the first keyframe's SPS and PPS as Annex B (the muxer builds avcC from it).
        var extradata: [UInt8]
    }

    let path: String
    let container: RecordingContainer
    private(set) var bytesWritten: Int64 = 0
    private var context: UnsafeMutablePointer<AVFormatContext>?
    private var packet: UnsafeMutablePointer<AVPacket>?
    private var streams: [RecordingTimeline.Track: (index: Int32, timeBase: AVRational)] = [:]
    private var finished = false
    /// Each stream's last decode time in its own time base: the timeline's microseconds are
    /// finer than the container's ticks, and the MP4 muxer refuses a time that does not advance.
    private var lastDTS: [RecordingTimeline.Track: Int64] = [:]

    /// Opens `path` and writes the header. Fragments (MP4) and clusters (Matroska) are cut at
    /// least every 0.25 s and flushed, so a killed process loses at most that much.
    init(path: String, container: RecordingContainer, video: VideoFormat?, audioChannels: Int?) throws(MediaError) {
        self.path = path
        self.container = container
        if let video, !container.supports(video.codec) {
            throw MediaError("\(path): \(video.codec.rawValue) cannot be recorded to .\(container.rawValue); use \(RecordingContainer.suggestion(for: video.codec))")
        }
        guard video != nil || audioChannels != nil else { throw MediaError("\(path): nothing to record (no video, no audio)") }
        var oc: UnsafeMutablePointer<AVFormatContext>?
        var rc = avformat_alloc_output_context2(&oc, nil, container.formatName, path)
        guard rc >= 0, let oc else { throw MediaError("\(path): cannot set up \(container.formatName): \(LibAV.message(rc))") }
        context = oc
        var ok = false
        defer { if !ok { release() } }
        oc.pointee.strict_std_compliance = -2   // FF_COMPLIANCE_EXPERIMENTAL: Opus in MP4 on older muxers
        oc.pointee.flags |= AVFMT_FLAG_FLUSH_PACKETS
        oc.pointee.max_interleave_delta = 500_000
        if let video {
            guard let st = avformat_new_stream(oc, nil) else { throw MediaError("\(path): out of memory") }
            let par = st.pointee.codecpar!
            par.pointee.codec_type = AVMEDIA_TYPE_VIDEO
            par.pointee.codec_id = video.codec == .h264 ? AV_CODEC_ID_H264 : AV_CODEC_ID_VP8
            par.pointee.width = Int32(video.width)
            par.pointee.height = Int32(video.height)
            Self.setExtradata(par, video.extradata)
            st.pointee.time_base = AVRational(num: 1, den: 90_000)
            streams[.video] = (st.pointee.index, st.pointee.time_base)
        }
        if let audioChannels {
            guard let st = avformat_new_stream(oc, nil) else { throw MediaError("\(path): out of memory") }
            let par = st.pointee.codecpar!
            par.pointee.codec_type = AVMEDIA_TYPE_AUDIO
            par.pointee.codec_id = AV_CODEC_ID_OPUS
            par.pointee.sample_rate = 48_000
            par.pointee.frame_size = 960   // 20 ms, WebRTC's packet size
            av_channel_layout_default(&par.pointee.ch_layout, Int32(audioChannels))
            Self.setExtradata(par, Self.opusHead(channels: audioChannels))
            st.pointee.time_base = AVRational(num: 1, den: 48_000)
            streams[.audio] = (st.pointee.index, st.pointee.time_base)
        }
        rc = avio_open(&oc.pointee.pb, path, AVIO_FLAG_WRITE)
        guard rc >= 0 else { throw MediaError("\(path): cannot open for writing: \(LibAV.message(rc))") }
        var options: OpaquePointer?
        switch container {
        case .mp4:
            // Fragmented: moov first, a moof+mdat per fragment, nothing to fix up at the end.
            av_dict_set(&options, "movflags", "frag_keyframe+empty_moov+default_base_moof", 0)
            av_dict_set(&options, "frag_duration", "250000", 0)
        case .mkv, .webm:
            av_dict_set(&options, "cluster_time_limit", "250", 0)
        }
        rc = avformat_write_header(oc, &options)
        av_dict_free(&options)
        guard rc >= 0 else { throw MediaError("\(path): cannot write the \(container.rawValue) header: \(LibAV.message(rc))") }
        // The muxer may have chosen its own time bases.
        for (track, s) in streams { streams[track] = (s.index, oc.pointee.streams[Int(s.index)]!.pointee.time_base) }
        packet = av_packet_alloc()
        guard packet != nil else { throw MediaError("\(path): out of memory") }
        ok = true
    }

    deinit { release() }

    /// The last video sample, written when the next one says how long it lasts (the MP4
    /// muxer otherwise guesses a fragment's last duration).
    private var heldVideo: RecordingTimeline.Sample?

    func write(_ sample: RecordingTimeline.Sample) throws(MediaError) {
        guard sample.track == .video else { return try mux(sample) }
        if var held = heldVideo {
            held.duration = max(sample.time - held.time, 1)
            try mux(held)
        }
        heldVideo = sample
    }

    private func mux(_ sample: RecordingTimeline.Sample) throws(MediaError) {
        guard !finished, let context, let packet, let stream = streams[sample.track] else { return }
        guard av_new_packet(packet, Int32(sample.data.count)) >= 0 else { throw MediaError("\(path): out of memory") }
        sample.data.withUnsafeBytes { _ = memcpy(packet.pointee.data, $0.baseAddress!, $0.count) }
        let micro = AVRational(num: 1, den: 1_000_000)
        var dts = av_rescale_q(sample.time, micro, stream.timeBase)
        if let last = lastDTS[sample.track], dts <= last { dts = last + 1 }
        lastDTS[sample.track] = dts
        packet.pointee.pts = dts
        packet.pointee.dts = dts
        packet.pointee.duration = av_rescale_q(sample.duration, micro, stream.timeBase)
        packet.pointee.stream_index = stream.index
        packet.pointee.flags = sample.isKeyframe || sample.track == .audio ? AV_PKT_FLAG_KEY : 0
        let rc = av_interleaved_write_frame(context, packet)   // takes the packet's reference
        guard rc >= 0 else { throw MediaError("\(path): write failed: \(LibAV.message(rc))") }
        bytesWritten = avio_tell(context.pointee.pb)
    }

    /// Writes the trailer (MP4: the fragment index; Matroska: cues and duration) and closes.
    func finish() throws(MediaError) {
        guard !finished, let context else { return }
        if var held = heldVideo {
            // The last frame lasts as long as a frame at 30 fps, unless it said otherwise.
            if held.duration == 0 { held.duration = 33_333 }
            heldVideo = nil
            try mux(held)
        }
        finished = true
        let rc = av_write_trailer(context)
        bytesWritten = avio_tell(context.pointee.pb)
        release()
        guard rc >= 0 else { throw MediaError("\(path): cannot finish the file: \(LibAV.message(rc))") }
    }

    private func release() {
        finished = true
        if packet != nil { av_packet_free(&packet) }
        if let context {
            if context.pointee.pb != nil { avio_closep(&context.pointee.pb) }
            avformat_free_context(context)
            self.context = nil
        }
    }

    private static func setExtradata(_ par: UnsafeMutablePointer<AVCodecParameters>, _ bytes: [UInt8]) {
        guard !bytes.isEmpty, let buf = av_mallocz(bytes.count + Int(AV_INPUT_BUFFER_PADDING_SIZE)) else { return }
        bytes.withUnsafeBytes { _ = memcpy(buf, $0.baseAddress!, $0.count) }
        par.pointee.extradata = buf.assumingMemoryBound(to: UInt8.self)
        par.pointee.extradata_size = Int32(bytes.count)
    }

    /// The Opus identification header (RFC 7845 §5.1) the containers carry as codec private
    /// data. No pre-skip: an RTP stream has no encoder priming to cut.
    static func opusHead(channels: Int) -> [UInt8] {
        var h = Array("OpusHead".utf8)
        h += [1, UInt8(channels), 0, 0]                 // version, channels, pre-skip
        h += [0x80, 0xBB, 0x00, 0x00]                   // 48000 Hz, little endian
        h += [0, 0, 0]                                  // output gain, mapping family 0
        return h
    }
}
