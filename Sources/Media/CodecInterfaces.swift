/// Codecs this stack speaks on the wire.
public enum VideoCodecType: String, Sendable, Hashable, CaseIterable {
    case h264 = "H264", vp8 = "VP8"
    public var mimeType: String { "video/\(rawValue)" }
    /// The codec of an SDP/W3C mime type ("video/H264", any case); nil for others (RTX, RED…).
    public init?(mimeType: String) {
        guard let c = Self.allCases.first(where: { $0.mimeType.lowercased() == mimeType.lowercased() }) else { return nil }
        self = c
    }
}

/// One encoded picture. H.264 is an Annex-B byte stream (start codes between NAL units), VP8
/// a raw frame as libvpx emits it.
public struct EncodedFrame: Sendable {
    public var codec: VideoCodecType
    public var data: [UInt8]
    public var isKeyframe: Bool
    /// 90 kHz RTP timestamp.
    public var rtpTimestamp: UInt32
    /// Capture time of the source frame (ns), carried through for latency measurement.
    public var captureTimeNs: Int64
    public var width: Int
    public var height: Int
    public var rotation: VideoRotation
    /// Its place in a temporal-scalability pattern (nil: one temporal layer).
    public var temporal: TemporalLayerInfo?

    public init(codec: VideoCodecType, data: [UInt8], isKeyframe: Bool, rtpTimestamp: UInt32,
                captureTimeNs: Int64 = 0, width: Int = 0, height: Int = 0, rotation: VideoRotation = .r0,
                temporal: TemporalLayerInfo? = nil) {
        self.temporal = temporal
        self.codec = codec
        self.data = data
        self.isKeyframe = isKeyframe
        self.rtpTimestamp = rtpTimestamp
        self.captureTimeNs = captureTimeNs
        self.width = width
        self.height = height
        self.rotation = rotation
    }
}

/// Where a frame of a temporally scalable stream (L1T2, L1T3) sits: dropping every frame above
/// some layer leaves a stream that still decodes, at a half or a quarter of the frame rate.
public struct TemporalLayerInfo: Sendable, Equatable {
    /// 0 is the base layer.
    public var layer: UInt8
    /// Layer sync (RFC 7741 Y): it references base-layer frames only, so a receiver can start
    /// taking this layer here.
    public var sync: Bool
    /// Whether a later frame references it (false: it can be dropped alone; RFC 7741 N).
    public var isReference: Bool

    public init(layer: UInt8, sync: Bool, isReference: Bool) {
        self.layer = layer
        self.sync = sync
        self.isReference = isReference
    }
}

/// What an encoder is asked to produce; can change while running (`update`).
public struct VideoEncoderSettings: Sendable, Equatable {
    public var width: Int
    public var height: Int
    public var framerate: Double
    /// Target bits per second.
    public var bitrate: Int
    public var maxBitrate: Int?
    public var minBitrate: Int?
    /// Frames between forced keyframes (0 = only on request).
    public var keyframeInterval: Int
    /// Temporal layers (1, or 2–3 where the encoder supports them: VP8).
    public var temporalLayers: Int

    public init(width: Int, height: Int, framerate: Double = 30, bitrate: Int = 1_500_000,
                maxBitrate: Int? = nil, minBitrate: Int? = nil, keyframeInterval: Int = 0, temporalLayers: Int = 1) {
        self.temporalLayers = temporalLayers
        self.width = width
        self.height = height
        self.framerate = framerate
        self.bitrate = bitrate
        self.maxBitrate = maxBitrate
        self.minBitrate = minBitrate
        self.keyframeInterval = keyframeInterval
    }
}

/// A video encoder. Not thread-safe: one encode queue drives it.
public protocol VideoEncoder: AnyObject {
    var codec: VideoCodecType { get }
    var settings: VideoEncoderSettings { get }
    /// (Re)configures; a size change re-initializes the codec and makes the next frame a keyframe.
    func configure(_ settings: VideoEncoderSettings) throws(MediaError)
    /// Changes bitrate and frame rate at run time without a keyframe.
    func setRates(bitrate: Int, framerate: Double)
    /// Encodes one I420 frame (other formats are converted by the caller). Returns nil when the
    /// encoder skipped the frame (rate control).
    func encode(_ frame: VideoFrame, rtpTimestamp: UInt32, forceKeyframe: Bool) throws(MediaError) -> EncodedFrame?
}

/// A video decoder. Not thread-safe: one decode queue drives it.
public protocol VideoDecoder: AnyObject {
    var codec: VideoCodecType { get }
    /// Decodes one complete frame; nil when the decoder needs more (or a keyframe). A corrupt
    /// bitstream throws; the caller asks the sender for a keyframe.
    func decode(_ frame: EncodedFrame) throws(MediaError) -> VideoFrame?
}

/// Opus and friends. Not thread-safe.
public protocol AudioEncoder: AnyObject {
    var sampleRate: Int { get }
    var channels: Int { get }
    func encode(_ frame: AudioFrame) throws(MediaError) -> [UInt8]
}

public protocol AudioDecoder: AnyObject {
    var sampleRate: Int { get }
    var channels: Int { get }
    /// Decodes one packet; `nil` data means the packet was lost (packet-loss concealment / FEC).
    func decode(_ packet: [UInt8]?) throws(MediaError) -> AudioFrame
}
