import COpenH264
import Media

/// H.264 decoder on OpenH264 (constrained baseline and main/high without interlacing). Error
/// concealment is off: a damaged picture throws instead of showing smeared blocks, and the
/// decoder waits for the next IDR.
public final class OpenH264Decoder: VideoDecoder {
    public let codec = VideoCodecType.h264
    private var decoder: UnsafeMutablePointer<ISVCDecoder?>?
    private let planes = UnsafeMutablePointer<UnsafeMutablePointer<UInt8>?>.allocate(capacity: 3)
    private let pool = DecodedFramePool()
    /// Until an IDR arrives (at the start and after an error) other frames are not fed in.
    private var waitingForKeyframe = true
    private var needsReset = false

    public init() throws(MediaError) {
        planes.initialize(repeating: nil, count: 3)
        try open()
    }

    deinit {
        close()
        planes.deallocate()
    }

    public func decode(_ frame: EncodedFrame) throws(MediaError) -> VideoFrame? {
        let types = H264Bitstream.nalTypes(frame.data)
        guard !types.isEmpty else {
            throw MediaError("H.264 decode: no NAL unit in \(frame.data.count) bytes (no Annex-B start code)")
        }
        if waitingForKeyframe {
            guard types.contains(H264Bitstream.nalIDR) else { return nil }
            if needsReset {
                close()
                try open()
                needsReset = false
            }
        }
        guard let dec = decoder, let vtbl = dec.pointee?.pointee else { throw MediaError("H.264 decode: decoder not open") }
        var info = SBufferInfo()
        planes.update(repeating: nil, count: 3)
        let state = frame.data.withUnsafeBufferPointer { bytes in
            vtbl.DecodeFrameNoDelay?(dec, bytes.baseAddress, Int32(bytes.count), planes, &info) ?? dsInitialOptExpected
        }
        let errorBits = state.rawValue & ~dsFramePending.rawValue
        if errorBits != 0 {
            waitingForKeyframe = true
            needsReset = true
            throw MediaError("H.264 decode: corrupt or undecodable frame (\(Self.describe(state.rawValue)), \(frame.data.count) bytes, NAL types \(types)); waiting for a keyframe")
        }
        guard info.iBufferStatus == 1, let y = planes[0], let u = planes[1], let v = planes[2] else {
            if types.contains(H264Bitstream.nalIDR) { waitingForKeyframe = false }
            return nil
        }
        waitingForKeyframe = false
        let mem = info.UsrData.sSystemBuffer
        let width = Int(mem.iWidth), height = Int(mem.iHeight)
        guard VideoFrameBuffer.isValidSize(width: width, height: height) else {
            throw MediaError("H.264 decode: decoder returned size \(width)x\(height) (1…\(VideoFrameBuffer.maxDimension) a side)")
        }
        let buffer = pool.copyI420(y: y, strideY: Int(mem.iStride.0), u: u, strideU: Int(mem.iStride.1),
                                   v: v, strideV: Int(mem.iStride.1), width: width, height: height)
        return VideoFrame(buffer: buffer, rotation: frame.rotation, timestampNs: frame.captureTimeNs)
    }

    private func open() throws(MediaError) {
        var created: UnsafeMutablePointer<ISVCDecoder?>? = nil
        guard WelsCreateDecoder(&created) == 0, let dec = created, let vtbl = dec.pointee?.pointee else {
            throw MediaError("H.264 decoder: WelsCreateDecoder failed")
        }
        var logLevel = Int32(WELS_LOG_QUIET)
        _ = vtbl.SetOption?(dec, DECODER_OPTION_TRACE_LEVEL, &logLevel)
        var param = SDecodingParam()
        param.eEcActiveIdc = ERROR_CON_DISABLE
        param.sVideoProperty.size = UInt32(MemoryLayout<SVideoProperty>.size)
        param.sVideoProperty.eVideoBsType = VIDEO_BITSTREAM_AVC
        let rc = vtbl.Initialize?(dec, &param) ?? -1
        guard rc == 0 else {
            WelsDestroyDecoder(dec)
            throw MediaError("H.264 decoder: Initialize failed with code \(rc)")
        }
        decoder = dec
    }

    private func close() {
        guard let dec = decoder else { return }
        if let vtbl = dec.pointee?.pointee { _ = vtbl.Uninitialize?(dec) }
        WelsDestroyDecoder(dec)
        decoder = nil
    }

    private static func describe(_ state: UInt32) -> String {
        let names: [(UInt32, String)] = [
            (dsRefLost.rawValue, "reference lost"), (dsBitstreamError.rawValue, "bitstream error"),
            (dsDepLayerLost.rawValue, "dependent layer lost"), (dsNoParamSets.rawValue, "no SPS/PPS"),
            (dsDataErrorConcealed.rawValue, "error concealed"), (dsRefListNullPtrs.rawValue, "empty reference list"),
            (dsInvalidArgument.rawValue, "invalid argument"), (dsInitialOptExpected.rawValue, "not initialized"),
            (dsOutOfMemory.rawValue, "out of memory"), (dsDstBufNeedExpan.rawValue, "output buffer too small"),
        ]
        let hits = names.filter { state & $0.0 != 0 }.map(\.1)
        return hits.isEmpty ? "state 0x\(String(state, radix: 16))" : hits.joined(separator: ", ")
    }
}
