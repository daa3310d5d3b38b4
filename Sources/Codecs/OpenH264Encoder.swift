import COpenH264
import Media

/// H.264 constrained baseline encoder on Cisco's OpenH264 (BSD), as libwebrtc configures it:
/// one spatial layer and one temporal layer (or 2–3: L1T2/L1T3), bitrate rate control, CAVLC, constant SPS/PPS ids,
/// SPS+PPS in front of every IDR. Output is Annex-B.
public final class OpenH264Encoder: VideoEncoder {
    public struct Options: Sendable, Equatable {
        /// Let rate control drop frames to hold the bitrate (`encode` then returns nil).
        public var frameSkip: Bool
        /// When set, slices are cut so no NAL unit exceeds this many bytes (fits single-NAL RTP
        /// packets); nil = one slice per picture (FU-A splits big NAL units).
        public var maxNalSize: Int?
        /// Encoder effort: 0 low (fastest), 1 medium, 2 high.
        public var complexity: Int

        public init(frameSkip: Bool = true, maxNalSize: Int? = nil, complexity: Int = 0) {
            self.frameSkip = frameSkip
            self.maxNalSize = maxNalSize
            self.complexity = complexity
        }
    }

    public let codec = VideoCodecType.h264
    public private(set) var settings: VideoEncoderSettings
    public let options: Options

    private var encoder: UnsafeMutablePointer<ISVCEncoder?>?
    private var encodedWidth = 0, encodedHeight = 0
    private let bsInfo = UnsafeMutablePointer<SFrameBSInfo>.allocate(capacity: 1)
    private let converter = I420Converter()
    /// The last SPS+PPS the encoder wrote (Annex-B), put in front of an IDR that lacks them.
    private var parameterSets: [UInt8] = []
    /// A keyframe was asked for but rate control skipped that frame: ask again next time.
    private var keyframePending = false
    /// Upper temporal layers that had a frame since the last base-layer frame (`temporalInfo`).
    private var upperSinceBase: Set<UInt8> = []

    /// `settings.width/height` of 0 take the size of the first frame.
    public init(settings: VideoEncoderSettings, options: Options = Options()) throws(MediaError) {
        self.settings = settings
        self.options = options
        bsInfo.initialize(to: SFrameBSInfo())
        try Self.validate(settings)
        if settings.width > 0 && settings.height > 0 { try open(width: settings.width, height: settings.height) }
    }

    deinit {
        close()
        bsInfo.deallocate()
    }

    public func configure(_ newSettings: VideoEncoderSettings) throws(MediaError) {
        try Self.validate(newSettings)
        let sizeChanged = newSettings.width != settings.width || newSettings.height != settings.height
        let old = settings
        settings = newSettings
        if encoder == nil || sizeChanged || newSettings.keyframeInterval != old.keyframeInterval
            || newSettings.maxBitrate != old.maxBitrate {
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
        try validateFrameSize(frame.width, frame.height, codec: "H.264", requireEven: true)
        let input = converter.i420(frame.buffer)
        if encoder == nil || frame.width != encodedWidth || frame.height != encodedHeight {
            // A new size re-initializes; the fresh encoder starts with an IDR.
            close()
            settings.width = frame.width
            settings.height = frame.height
            try open(width: frame.width, height: frame.height)
        }
        guard let enc = encoder, let vtbl = enc.pointee?.pointee else {
            throw MediaError("H.264 encoder: not initialized")
        }
        let wantKeyframe = forceKeyframe || keyframePending
        if wantKeyframe { _ = vtbl.ForceIntraFrame?(enc, true) }

        var picture = SSourcePicture()
        picture.iColorFormat = Int32(videoFormatI420.rawValue)
        picture.iPicWidth = Int32(frame.width)
        picture.iPicHeight = Int32(frame.height)
        picture.iStride = (Int32(input.strides[0]), Int32(input.strides[1]), Int32(input.strides[2]), 0)
        picture.pData = (input.planePointer(0), input.planePointer(1), input.planePointer(2), nil)
        picture.uiTimeStamp = frame.timestampNs / 1_000_000
        let rc = withExtendedLifetime(input) { vtbl.EncodeFrame?(enc, &picture, bsInfo) ?? -1 }
        guard rc == 0 else { throw MediaError("H.264 encoder: EncodeFrame failed with code \(rc)") }

        let info = bsInfo.pointee
        if info.eFrameType == videoFrameTypeSkip || info.iFrameSizeInBytes <= 0 {
            keyframePending = wantKeyframe
            return nil
        }
        keyframePending = false
        var data: [UInt8] = []
        data.reserveCapacity(Int(info.iFrameSizeInBytes))
        let layerCount = Int(max(0, min(info.iLayerNum, MAX_LAYER_NUM_OF_FRAME)))
        var temporalID: UInt8 = 0
        withUnsafeBytes(of: &bsInfo.pointee.sLayerInfo) { raw in
            let layers = raw.bindMemory(to: SLayerBSInfo.self)
            for layer in layers.prefix(layerCount) {
                if layer.uiLayerType == VIDEO_CODING_LAYER.rawValue { temporalID = layer.uiTemporalId }
                guard let buf = layer.pBsBuf, let lengths = layer.pNalLengthInByte else { continue }
                var size = 0
                for i in 0..<Int(max(0, layer.iNalCount)) { size += Int(lengths[i]) }
                data.append(contentsOf: UnsafeBufferPointer(start: buf, count: size))
            }
        }
        let isKeyframe = info.eFrameType == videoFrameTypeIDR
        if isKeyframe { ensureParameterSets(&data) }
        return EncodedFrame(codec: .h264, data: data, isKeyframe: isKeyframe, rtpTimestamp: rtpTimestamp,
                            captureTimeNs: frame.timestampNs, width: frame.width, height: frame.height,
                            rotation: frame.rotation, temporal: temporalInfo(layer: isKeyframe ? 0 : temporalID))
    }

    /// Where a frame of OpenH264's temporal pattern (L1T2: 0 1; L1T3: 0 2 1 2) sits. OpenH264
    /// writes the layer into each slice's nal_ref_idc (3 base, 1 middle, 0 top: not referenced);
    /// a relay leaves out the top one (`H264TemporalReader`). A frame is a layer sync when it
    /// references the base layer only: the first frame above it since the last base frame, with
    /// no other frame of a lower upper layer between (0 2 1 2: the first 2 and the 1).
    private func temporalInfo(layer: UInt8) -> TemporalLayerInfo? {
        let layers = settings.temporalLayers
        guard layers > 1 else { return nil }
        defer { if layer == 0 { upperSinceBase = [] } else { upperSinceBase.insert(layer) } }
        let sync = layer > 0 && !upperSinceBase.contains { $0 <= layer }
        return TemporalLayerInfo(layer: layer, sync: sync, isReference: Int(layer) < layers - 1)
    }

    // MARK: - OpenH264 setup

    private static func validate(_ s: VideoEncoderSettings) throws(MediaError) {
        try validateEncoderSettings(s, codec: "H.264", requireEven: true, maxTemporalLayers: 3)
    }

    private func open(width: Int, height: Int) throws(MediaError) {
        var created: UnsafeMutablePointer<ISVCEncoder?>? = nil
        guard WelsCreateSVCEncoder(&created) == 0, let enc = created, let vtbl = enc.pointee?.pointee else {
            throw MediaError("H.264 encoder: WelsCreateSVCEncoder failed")
        }
        var logLevel = Int32(WELS_LOG_QUIET)
        _ = vtbl.SetOption?(enc, ENCODER_OPTION_TRACE_LEVEL, &logLevel)

        var p = SEncParamExt()
        _ = vtbl.GetDefaultParams?(enc, &p)
        let fps = Float(min(max(settings.framerate, 1), 60))
        p.iUsageType = CAMERA_VIDEO_REAL_TIME
        p.iPicWidth = Int32(width)
        p.iPicHeight = Int32(height)
        p.iTargetBitrate = Int32(clamping: settings.bitrate)
        p.iMaxBitrate = Int32(clamping: maxBitrate)
        p.iRCMode = RC_BITRATE_MODE
        p.fMaxFrameRate = fps
        p.bEnableFrameSkip = options.frameSkip
        p.uiIntraPeriod = UInt32(settings.keyframeInterval)
        p.eSpsPpsIdStrategy = CONSTANT_ID
        p.bPrefixNalAddingCtrl = false
        p.bEnableSSEI = false
        p.iTemporalLayerNum = Int32(settings.temporalLayers)   // 1…3: `validate`
        p.iSpatialLayerNum = 1
        p.iNumRefFrame = p.iTemporalLayerNum > 1 ? Int32(AUTO_REF_PIC_COUNT) : 1
        p.iEntropyCodingModeFlag = 0            // CAVLC: baseline has no CABAC
        p.iMultipleThreadIdc = 1
        p.iComplexityMode = ECOMPLEXITY_MODE(UInt32(max(0, min(2, options.complexity))))
        p.bEnableDenoise = false
        p.bEnableBackgroundDetection = true
        p.bEnableAdaptiveQuant = true
        p.bEnableSceneChangeDetect = true
        p.bEnableLongTermReference = false
        p.bEnableFrameCroppingFlag = true
        p.iLoopFilterDisableIdc = 0
        p.uiMaxNalSize = 0
        p.sSpatialLayers.0.iVideoWidth = Int32(width)
        p.sSpatialLayers.0.iVideoHeight = Int32(height)
        p.sSpatialLayers.0.fFrameRate = fps
        p.sSpatialLayers.0.iSpatialBitrate = p.iTargetBitrate
        p.sSpatialLayers.0.iMaxSpatialBitrate = p.iMaxBitrate
        p.sSpatialLayers.0.uiProfileIdc = PRO_BASELINE
        p.sSpatialLayers.0.uiLevelIdc = Self.level(width: width, height: height, framerate: max(Double(fps), 30),
                                                    bitrate: max(settings.bitrate, maxBitrate))
        if let maxNal = options.maxNalSize, maxNal >= 200 {
            p.sSpatialLayers.0.sSliceArgument.uiSliceMode = SM_SIZELIMITED_SLICE
            p.sSpatialLayers.0.sSliceArgument.uiSliceSizeConstraint = UInt32(maxNal)
            p.uiMaxNalSize = UInt32(maxNal)
        } else {
            p.sSpatialLayers.0.sSliceArgument.uiSliceMode = SM_SINGLE_SLICE
            p.sSpatialLayers.0.sSliceArgument.uiSliceNum = 1
        }
        let rc = vtbl.InitializeExt?(enc, &p) ?? -1
        guard rc == 0 else {
            WelsDestroySVCEncoder(enc)
            throw MediaError("H.264 encoder: InitializeExt failed with code \(rc) for \(width)x\(height) at \(settings.bitrate) bps")
        }
        var format = Int32(videoFormatI420.rawValue)
        _ = vtbl.SetOption?(enc, ENCODER_OPTION_DATAFORMAT, &format)
        encoder = enc
        upperSinceBase = []
        encodedWidth = width
        encodedHeight = height
        parameterSets = []
        keyframePending = false
    }

    private func close() {
        guard let enc = encoder else { return }
        if let vtbl = enc.pointee?.pointee { _ = vtbl.Uninitialize?(enc) }
        WelsDestroySVCEncoder(enc)
        encoder = nil
    }

    /// The cap rate control may burst to: the configured maximum, never below the target.
    private var maxBitrate: Int { max(settings.maxBitrate ?? 0, settings.bitrate) }

    private func applyRates() {
        guard let enc = encoder, let vtbl = enc.pointee?.pointee else { return }
        // Raise the cap first: OpenH264 refuses a target above the current maximum.
        var maxInfo = SBitrateInfo(iLayer: SPATIAL_LAYER_ALL, iBitrate: Int32(clamping: maxBitrate))
        _ = vtbl.SetOption?(enc, ENCODER_OPTION_MAX_BITRATE, &maxInfo)
        var target = SBitrateInfo(iLayer: SPATIAL_LAYER_ALL, iBitrate: Int32(clamping: settings.bitrate))
        _ = vtbl.SetOption?(enc, ENCODER_OPTION_BITRATE, &target)
        var fps = Float(min(max(settings.framerate, 1), 60))
        _ = vtbl.SetOption?(enc, ENCODER_OPTION_FRAME_RATE, &fps)
    }

    /// OpenH264 writes SPS+PPS before each IDR with constant ids; this keeps that promise even
    /// if a build does not (a receiver joining at an IDR must be able to decode it).
    private func ensureParameterSets(_ data: inout [UInt8]) {
        let ranges = H264Bitstream.nalUnitRanges(data)
        let types = ranges.map { data[$0.lowerBound] & 0x1F }
        if types.contains(H264Bitstream.nalSPS) && types.contains(H264Bitstream.nalPPS) {
            var sets: [UInt8] = []
            for (r, t) in zip(ranges, types) where t == H264Bitstream.nalSPS || t == H264Bitstream.nalPPS {
                sets += [0, 0, 0, 1]
                sets += data[r]
            }
            parameterSets = sets
        } else if !parameterSets.isEmpty {
            data.insert(contentsOf: parameterSets, at: 0)
        }
    }

    /// The lowest level (H.264 Table A-1) whose frame size, macroblock rate and bitrate fit.
    static func level(width: Int, height: Int, framerate: Double, bitrate: Int) -> ELevelIdc {
        let mbW = (width + 15) / 16, mbH = (height + 15) / 16
        let frameSize = mbW * mbH
        let mbps = Double(frameSize) * framerate
        let kbps = bitrate / 1000
        // (level, MaxMBPS, MaxFS, MaxBR kbps)
        let table: [(ELevelIdc, Double, Int, Int)] = [
            (LEVEL_1_0, 1485, 99, 64), (LEVEL_1_1, 3000, 396, 192), (LEVEL_1_2, 6000, 396, 384),
            (LEVEL_1_3, 11880, 396, 768), (LEVEL_2_0, 11880, 396, 2000), (LEVEL_2_1, 19800, 792, 4000),
            (LEVEL_2_2, 20250, 1620, 4000), (LEVEL_3_0, 40500, 1620, 10000), (LEVEL_3_1, 108000, 3600, 14000),
            (LEVEL_3_2, 216000, 5120, 20000), (LEVEL_4_0, 245760, 8192, 20000), (LEVEL_4_1, 245760, 8192, 50000),
            (LEVEL_4_2, 522240, 8704, 50000), (LEVEL_5_0, 589824, 22080, 135000), (LEVEL_5_1, 983040, 36864, 240000),
            (LEVEL_5_2, 2073600, 36864, 240000),
        ]
        for (level, maxMbps, maxFs, maxBr) in table {
            // Neither side may exceed sqrt(8 * MaxFS) macroblocks.
            let side = Int((8 * Double(maxFs)).squareRoot())
            if frameSize <= maxFs && mbps <= maxMbps && kbps <= maxBr && mbW <= side && mbH <= side { return level }
        }
        return LEVEL_5_2
    }
}
