import Media

/// Makes video encoders, in the order the app prefers them on the wire (H.264 first, as the
/// reference app and SRS want, then VP8).
public struct VideoEncoderFactory: Sendable {
    public var supportedCodecs: [VideoCodecType]
    public var h264Options: OpenH264Encoder.Options
    public var vp8Options: VP8Encoder.Options

    public init(supportedCodecs: [VideoCodecType] = [.h264, .vp8],
                h264Options: OpenH264Encoder.Options = .init(), vp8Options: VP8Encoder.Options = .init()) {
        self.supportedCodecs = supportedCodecs
        self.h264Options = h264Options
        self.vp8Options = vp8Options
    }

    /// An encoder for `codec`; without settings it takes its size from the first frame and
    /// starts at 1.5 Mbps / 30 fps until `configure` or `setRates` says otherwise.
    public func makeEncoder(_ codec: VideoCodecType, settings: VideoEncoderSettings? = nil) throws(MediaError) -> any VideoEncoder {
        guard supportedCodecs.contains(codec) else {
            throw MediaError("video encoder factory: \(codec.rawValue) is not among the supported codecs \(supportedCodecs.map(\.rawValue))")
        }
        let s = settings ?? VideoEncoderSettings(width: 0, height: 0)
        switch codec {
        case .h264: return try OpenH264Encoder(settings: s, options: h264Options)
        case .vp8: return try VP8Encoder(settings: s, options: vp8Options)
        }
    }
}

/// Makes video decoders. H.264 defaults to libavcodec: it is the decoder libwebrtc ships, about a
/// quarter faster than OpenH264's here (720p: ~1.6 vs ~2.1 ms/frame), decodes every profile a
/// browser or phone may send (main and high with CABAC and 4:2:2, not just constrained baseline)
/// and parses damaged slices without losing its state; both reject damage with a throw and
/// resume at the next IDR. OpenH264 stays available (BSD, for builds without FFmpeg).
public struct VideoDecoderFactory: Sendable {
    public enum H264Implementation: String, Sendable, CaseIterable {
        case ffmpeg, openH264
    }

    public var supportedCodecs: [VideoCodecType]
    public var h264Implementation: H264Implementation

    public init(supportedCodecs: [VideoCodecType] = [.h264, .vp8], h264Implementation: H264Implementation = .ffmpeg) {
        self.supportedCodecs = supportedCodecs
        self.h264Implementation = h264Implementation
    }

    public func makeDecoder(_ codec: VideoCodecType) throws(MediaError) -> any VideoDecoder {
        guard supportedCodecs.contains(codec) else {
            throw MediaError("video decoder factory: \(codec.rawValue) is not among the supported codecs \(supportedCodecs.map(\.rawValue))")
        }
        switch codec {
        case .h264:
            switch h264Implementation {
            case .ffmpeg: return try FFmpegH264Decoder()
            case .openH264: return try OpenH264Decoder()
            }
        case .vp8: return try VP8Decoder()
        }
    }
}
