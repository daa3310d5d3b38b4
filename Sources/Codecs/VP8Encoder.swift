import CVPX
import Media

/// VP8 encoder on libvpx in real-time CBR mode, configured the way libwebrtc does for one
/// stream: no lag, fixed speed, error-resilient entropy coding, keyframes on request.
public final class VP8Encoder: VideoEncoder {
    public struct Options: Sendable, Equatable {
        /// Let rate control drop frames when the buffer runs low (`encode` then returns nil).
        public var frameDropping: Bool
        /// libvpx speed, 4…16: higher is faster and a little worse; 6 is libwebrtc's desktop
        /// choice, 8 saves about a fifth of the CPU at 720p (fixed speed, not the
        /// wall-clock-driven automatic one, so output does not depend on machine load).
        public var speed: Int
        /// Encoder threads (1 or 2; frames this small gain little from more).
        public var threads: Int
        /// Error-resilient mode: each frame's entropy context stands alone, so a lost frame
        /// does not spoil the probabilities of the next ones.
        public var errorResilient: Bool

        public init(frameDropping: Bool = true, speed: Int = 6, threads: Int = 1, errorResilient: Bool = true) {
            self.frameDropping = frameDropping
            self.speed = speed
            self.threads = threads
            self.errorResilient = errorResilient
        }
    }

    public let codec = VideoCodecType.vp8
    public private(set) var settings: VideoEncoderSettings
    public let options: Options

    private let context = UnsafeMutablePointer<vpx_codec_ctx_t>.allocate(capacity: 1)
    private var config = vpx_codec_enc_cfg_t()
    private var isOpen = false
    private var encodedWidth = 0, encodedHeight = 0
    private var lastPts: Int64 = -1
    /// Temporal layers (`settings.temporalLayers` 2 or 3): each frame's references and layer.
    private var pattern: VP8TemporalPattern?
    /// With temporal layers, keyframes are ours to place (libvpx's own would land on any layer).
    private var framesSinceKeyframe = 0
    private var keyframeDue = true
    private let converter = I420Converter()

    /// `settings.width/height` of 0 take the size of the first frame.
    public init(settings: VideoEncoderSettings, options: Options = Options()) throws(MediaError) {
        self.settings = settings
        self.options = options
        context.initialize(to: vpx_codec_ctx_t())
        try Self.validate(settings)
        if settings.width > 0 && settings.height > 0 { try open(width: settings.width, height: settings.height) }
    }

    deinit {
        close()
        context.deallocate()
    }

    public func configure(_ newSettings: VideoEncoderSettings) throws(MediaError) {
        try Self.validate(newSettings)
        let sizeChanged = newSettings.width != settings.width || newSettings.height != settings.height
        let intervalChanged = newSettings.keyframeInterval != settings.keyframeInterval
            || newSettings.temporalLayers != settings.temporalLayers
        settings = newSettings
        if !isOpen || sizeChanged || intervalChanged {
            close()
            if newSettings.width > 0 && newSettings.height > 0 { try open(width: newSettings.width, height: newSettings.height) }
        } else {
            applyRates()
        }
    }

    public func setRates(bitrate: Int, framerate: Double) {
        guard bitrate > 0, framerate > 0, framerate.isFinite else { return }
        settings.bitrate = bitrate
        settings.framerate = framerate
        applyRates()
    }

    public func encode(_ frame: VideoFrame, rtpTimestamp: UInt32, forceKeyframe: Bool) throws(MediaError) -> EncodedFrame? {
        try validateFrameSize(frame.width, frame.height, codec: "VP8", requireEven: false)
        let input = converter.i420(frame.buffer)
        if !isOpen || frame.width != encodedWidth || frame.height != encodedHeight {
            close()
            settings.width = frame.width
            settings.height = frame.height
            try open(width: frame.width, height: frame.height)
        }
        var image = vpx_image_t()
        guard vpx_img_wrap(&image, VPX_IMG_FMT_I420, UInt32(frame.width), UInt32(frame.height), 1, input.planePointer(0)) != nil else {
            throw MediaError("VP8 encoder: cannot describe a \(frame.width)x\(frame.height) I420 picture")
        }
        image.planes = (input.planePointer(0), input.planePointer(1), input.planePointer(2), nil)
        image.stride = (Int32(input.strides[0]), Int32(input.strides[1]), Int32(input.strides[2]), 0)

        // 90 kHz presentation time from the capture clock; libvpx derives the frame rate from it.
        var pts = frame.timestampNs * 9 / 100_000
        if pts <= lastPts { pts = lastPts + 1 }
        lastPts = pts
        let duration = UInt(max(1, (90_000 / max(settings.framerate, 1)).rounded()))
        let interval = settings.keyframeInterval
        let keyframe = forceKeyframe || (pattern != nil && (keyframeDue || (interval > 0 && framesSinceKeyframe >= interval)))
        var flags: vpx_enc_frame_flags_t = keyframe ? vpx_enc_frame_flags_t(swiftrtc_vpx_flag_force_kf) : 0
        let step = pattern?.next(keyframe: keyframe)
        if let step {
            flags |= vpx_enc_frame_flags_t(step.flags)
            _ = swiftrtc_vpx_control_int(context, Int32(VP8E_SET_TEMPORAL_LAYER_ID.rawValue), Int32(step.info.layer))
        }
        let rc = withExtendedLifetime(input) {
            vpx_codec_encode(context, &image, vpx_codec_pts_t(pts), duration, flags, swiftrtc_vpx_dl_realtime)
        }
        guard rc == VPX_CODEC_OK else { throw MediaError("VP8 encoder: \(vpxError(context, rc))") }

        var data: [UInt8] = []
        var isKeyframe = false
        var iterator: vpx_codec_iter_t? = nil
        while let packet = vpx_codec_get_cx_data(context, &iterator) {
            guard packet.pointee.kind == VPX_CODEC_CX_FRAME_PKT else { continue }
            let f = packet.pointee.data.frame
            if let buf = f.buf, f.sz > 0 {
                data.append(contentsOf: UnsafeRawBufferPointer(start: buf, count: Int(f.sz)))
            }
            if f.flags & vpx_codec_frame_flags_t(VPX_FRAME_IS_KEY) != 0 { isKeyframe = true }
        }
        if data.isEmpty { return nil }   // dropped by rate control
        var temporal = step?.info
        if pattern != nil {
            keyframeDue = false
            framesSinceKeyframe = isKeyframe ? 1 : framesSinceKeyframe + 1
            if isKeyframe, !keyframe {   // not asked for: it is the base of a new pattern all the same
                pattern?.restart()
                temporal = TemporalLayerInfo(layer: 0, sync: false, isReference: true)
            }
        }
        return EncodedFrame(codec: .vp8, data: data, isKeyframe: isKeyframe, rtpTimestamp: rtpTimestamp,
                            captureTimeNs: frame.timestampNs, width: frame.width, height: frame.height,
                            rotation: frame.rotation, temporal: temporal)
    }

    // MARK: - libvpx setup

    private static func validate(_ s: VideoEncoderSettings) throws(MediaError) {
        try validateEncoderSettings(s, codec: "VP8", requireEven: false, maxTemporalLayers: 3)
    }

    private func open(width: Int, height: Int) throws(MediaError) {
        var cfg = vpx_codec_enc_cfg_t()
        var rc = swiftrtc_vpx_vp8_enc_config_default(&cfg)
        guard rc == VPX_CODEC_OK else { throw MediaError("VP8 encoder: no default configuration (\(rc.rawValue))") }
        cfg.g_w = UInt32(width)
        cfg.g_h = UInt32(height)
        cfg.g_threads = UInt32(max(1, min(options.threads, 4)))
        cfg.g_timebase = vpx_rational(num: 1, den: 90_000)
        cfg.g_lag_in_frames = 0
        cfg.g_pass = VPX_RC_ONE_PASS
        cfg.g_error_resilient = options.errorResilient ? vpx_codec_er_flags_t(VPX_ERROR_RESILIENT_DEFAULT) : 0
        cfg.rc_end_usage = VPX_CBR
        cfg.rc_dropframe_thresh = options.frameDropping ? 30 : 0
        cfg.rc_resize_allowed = 0
        cfg.rc_min_quantizer = 2
        cfg.rc_max_quantizer = 56
        cfg.rc_undershoot_pct = 100
        cfg.rc_overshoot_pct = 15
        cfg.rc_buf_initial_sz = 500
        cfg.rc_buf_optimal_sz = 600
        cfg.rc_buf_sz = 1000
        cfg.rc_target_bitrate = UInt32(max(1, settings.bitrate / 1000))
        let pattern = VP8TemporalPattern(layers: settings.temporalLayers)
        if let pattern { setLayers(pattern, in: &cfg) }
        if settings.keyframeInterval > 0, pattern == nil {
            cfg.kf_mode = VPX_KF_AUTO
            cfg.kf_min_dist = 0
            cfg.kf_max_dist = UInt32(settings.keyframeInterval)
        } else {
            cfg.kf_mode = VPX_KF_DISABLED   // keyframes only on request (VPX_EFLAG_FORCE_KF)
        }
        rc = swiftrtc_vpx_vp8_enc_init(context, &cfg)
        guard rc == VPX_CODEC_OK else {
            throw MediaError("VP8 encoder: init for \(width)x\(height) failed: \(vpxError(context, rc))")
        }
        config = cfg
        isOpen = true
        self.pattern = pattern
        keyframeDue = true
        encodedWidth = width
        encodedHeight = height
        let speed = max(4, min(options.speed, 16))
        _ = swiftrtc_vpx_control_int(context, Int32(VP8E_SET_CPUUSED.rawValue), Int32(-speed))   // negative = fixed speed
        _ = swiftrtc_vpx_control_int(context, Int32(VP8E_SET_NOISE_SENSITIVITY.rawValue), 0)
        _ = swiftrtc_vpx_control_int(context, Int32(VP8E_SET_STATIC_THRESHOLD.rawValue), 1)
        _ = swiftrtc_vpx_control_int(context, Int32(VP8E_SET_TOKEN_PARTITIONS.rawValue), Int32(VP8_ONE_TOKENPARTITION.rawValue))
        _ = swiftrtc_vpx_control_int(context, Int32(VP8E_SET_MAX_INTRA_BITRATE_PCT.rawValue), maxIntraBitratePercent)
    }

    /// Caps a keyframe at this share of the per-frame budget so it does not flood the link
    /// (libwebrtc: half the optimal buffer, in frames).
    private var maxIntraBitratePercent: Int32 {
        let pct = Double(config.rc_buf_optimal_sz) * 0.5 * max(settings.framerate, 1) / 10
        return Int32(max(300, pct))
    }

    /// libvpx's per-layer rate control: each layer's frames (`ts_layer_id`, a period long) and
    /// the bitrate up to it.
    private func setLayers(_ pattern: VP8TemporalPattern, in cfg: inout vpx_codec_enc_cfg_t) {
        cfg.ts_number_layers = UInt32(pattern.layers)
        cfg.ts_periodicity = UInt32(pattern.period)
        withUnsafeMutableBytes(of: &cfg.ts_layer_id) { raw in
            for (i, id) in pattern.layerIDs.enumerated() { raw.storeBytes(of: id, toByteOffset: i * 4, as: UInt32.self) }
        }
        withUnsafeMutableBytes(of: &cfg.ts_rate_decimator) { raw in
            for (i, d) in pattern.rateDecimators.enumerated() { raw.storeBytes(of: d, toByteOffset: i * 4, as: UInt32.self) }
        }
        setLayerRates(pattern, in: &cfg)
    }

    private func setLayerRates(_ pattern: VP8TemporalPattern, in cfg: inout vpx_codec_enc_cfg_t) {
        let total = Double(cfg.rc_target_bitrate)
        withUnsafeMutableBytes(of: &cfg.ts_target_bitrate) { raw in
            for (i, share) in pattern.cumulativeShares.enumerated() {
                raw.storeBytes(of: UInt32(max(1, (total * share).rounded())), toByteOffset: i * 4, as: UInt32.self)
            }
        }
    }

    private func close() {
        guard isOpen else { return }
        vpx_codec_destroy(context)
        isOpen = false
        lastPts = -1
    }

    private func applyRates() {
        guard isOpen else { return }
        config.rc_target_bitrate = UInt32(max(1, settings.bitrate / 1000))
        if let pattern { setLayerRates(pattern, in: &config) }
        _ = vpx_codec_enc_config_set(context, &config)
        _ = swiftrtc_vpx_control_int(context, Int32(VP8E_SET_MAX_INTRA_BITRATE_PCT.rawValue), maxIntraBitratePercent)
    }
}

func vpxError(_ ctx: UnsafeMutablePointer<vpx_codec_ctx_t>, _ rc: vpx_codec_err_t) -> String {
    var text = vpx_codec_err_to_string(rc).map { String(cString: $0) } ?? "error \(rc.rawValue)"
    if let detail = vpx_codec_error_detail(ctx) { text += ": " + String(cString: detail) }
    return text
}
