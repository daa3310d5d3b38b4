internal import COpus
import Media

/// Encoder settings; all but `channels` change without restarting the encoder.
public struct OpusEncoderSettings: Sendable, Equatable, Hashable {
    /// 1 (mono) or 2 (stereo).
    public var channels: Int
    /// Target bits per second, 6000…510000 (WebRTC's default for mono voice is 32000).
    public var bitrate: Int
    /// 0 (fastest) … 10 (best); 9 is libwebrtc's desktop default.
    public var complexity: Int
    /// In-band forward error correction (`useinbandfec=1`): each packet also carries a
    /// low-bitrate copy of the previous frame. Only spends bits when `packetLossPercent` > 0.
    public var inbandFEC: Bool
    /// Expected packet loss 0…100, which sizes the FEC data.
    public var packetLossPercent: Int
    /// Discontinuous transmission (`usedtx=1`): during silence the encoder emits 1–2 byte
    /// packets (and only one every 400 ms carries comfort noise); those need not be sent.
    public var dtx: Bool

    public init(channels: Int = 1, bitrate: Int = 32000, complexity: Int = 9, inbandFEC: Bool = true,
                packetLossPercent: Int = 10, dtx: Bool = false) {
        self.channels = channels
        self.bitrate = bitrate
        self.complexity = complexity
        self.inbandFEC = inbandFEC
        self.packetLossPercent = packetLossPercent
        self.dtx = dtx
    }

    func validate() throws(MediaError) {
        guard channels == 1 || channels == 2 else {
            throw MediaError("Opus encoder: channels must be 1 or 2, got \(channels)")
        }
        guard (6000...510_000).contains(bitrate) else {
            throw MediaError("Opus encoder: bitrate must be 6000…510000 bps, got \(bitrate)")
        }
        guard (0...10).contains(complexity) else {
            throw MediaError("Opus encoder: complexity must be 0…10, got \(complexity)")
        }
        guard (0...100).contains(packetLossPercent) else {
            throw MediaError("Opus encoder: packet loss must be 0…100 %, got \(packetLossPercent)")
        }
    }
}

/// Opus encoder for voice (OPUS_APPLICATION_VOIP) at 48 kHz. Each call encodes one frame into one
/// packet; the packet lasts as long as the frame: 10 or 20 ms (2.5, 5, 40 and 60 ms work too).
/// Not thread-safe: one encode queue drives it.
public final class OpusEncoder: AudioEncoder {
    public let sampleRate = opusSampleRate
    public var channels: Int { settings.channels }
    public private(set) var settings: OpusEncoderSettings

    private var state: OpaquePointer
    /// Scratch for one packet: 1275 bytes per Opus frame, up to 3 frames (60 ms), plus headers.
    private var scratch = [UInt8](repeating: 0, count: 4000)

    public init(settings: OpusEncoderSettings = OpusEncoderSettings()) throws(MediaError) {
        try settings.validate()
        self.state = try Self.create(channels: settings.channels)
        self.settings = settings
        do {
            try apply(settings, from: nil)
        } catch {
            opus_encoder_destroy(state)
            throw error
        }
    }

    deinit { opus_encoder_destroy(state) }

    /// Changes settings while running; a channel change re-creates the encoder.
    public func update(_ newSettings: OpusEncoderSettings) throws(MediaError) {
        try newSettings.validate()
        if newSettings.channels != settings.channels {
            let fresh = try Self.create(channels: newSettings.channels)
            opus_encoder_destroy(state)
            state = fresh
            try apply(newSettings, from: nil)
        } else {
            try apply(newSettings, from: settings)
        }
        settings = newSettings
    }

    /// Changes the target bitrate (bandwidth estimation, `RtpSender` maxBitrate).
    public func setBitrate(_ bps: Int) throws(MediaError) {
        var s = settings
        s.bitrate = bps
        try update(s)
    }

    /// Turns in-band FEC on or off and tells the encoder how much loss to protect against.
    public func setInbandFEC(_ enabled: Bool, packetLossPercent: Int) throws(MediaError) {
        var s = settings
        s.inbandFEC = enabled
        s.packetLossPercent = packetLossPercent
        try update(s)
    }

    public func setDTX(_ enabled: Bool) throws(MediaError) {
        var s = settings
        s.dtx = enabled
        try update(s)
    }

    public func setComplexity(_ complexity: Int) throws(MediaError) {
        var s = settings
        s.complexity = complexity
        try update(s)
    }

    /// Samples per channel the encoder delays its input by (for aligning decoded audio).
    public var lookahead: Int {
        var samples: Int32 = 0
        return copus_encoder_get_lookahead(state, &samples) == OPUS_OK ? Int(samples) : 0
    }

    /// True when the last packet was a DTX packet (silence; need not be sent).
    public var isInDTX: Bool {
        var flag: Int32 = 0
        return copus_encoder_get_in_dtx(state, &flag) == OPUS_OK && flag != 0
    }

    /// Encodes one frame (48 kHz, `channels` interleaved) into one Opus packet. With DTX on,
    /// a packet of 1–2 bytes means silence and need not be sent (RFC 7587 §3.1.3).
    public func encode(_ frame: AudioFrame) throws(MediaError) -> [UInt8] {
        guard frame.sampleRate == opusSampleRate else {
            throw MediaError("Opus encoder: frame is \(frame.sampleRate) Hz; Opus here runs at 48000 Hz")
        }
        guard frame.channels == settings.channels else {
            throw MediaError("Opus encoder: frame has \(frame.channels) channel(s); encoder is set up for \(settings.channels)")
        }
        let count = frame.sampleCount
        let perChannel = count / settings.channels
        guard count % settings.channels == 0, [120, 240, 480, 960, 1920, 2880].contains(perChannel) else {
            throw MediaError("Opus encoder: frame has \(count) samples for \(settings.channels) channel(s); "
                             + "Opus frames are 2.5, 5, 10, 20, 40 or 60 ms (480 or 960 samples per channel for 10/20 ms)")
        }
        let state = self.state
        let capacity = Int32(scratch.count)
        let written: Int32 = scratch.withUnsafeMutableBufferPointer { out -> Int32 in
            guard let packetOut = out.baseAddress else { return OPUS_BUFFER_TOO_SMALL }
            switch frame.samples {
            case .int16(let pcm):
                return pcm.withUnsafeBufferPointer { input -> Int32 in
                    guard let base = input.baseAddress else { return OPUS_BAD_ARG }
                    return opus_encode(state, base, Int32(perChannel), packetOut, capacity)
                }
            case .float(let pcm):
                return pcm.withUnsafeBufferPointer { input -> Int32 in
                    guard let base = input.baseAddress else { return OPUS_BAD_ARG }
                    return opus_encode_float(state, base, Int32(perChannel), packetOut, capacity)
                }
            }
        }
        guard written > 0 else {
            throw MediaError("Opus encoder: opus_encode failed: \(opusErrorText(written))")
        }
        return Array(scratch[0..<Int(written)])
    }

    private static func create(channels: Int) throws(MediaError) -> OpaquePointer {
        var error: Int32 = OPUS_OK
        guard let encoder = opus_encoder_create(Int32(opusSampleRate), Int32(channels), OPUS_APPLICATION_VOIP, &error),
              error == OPUS_OK else {
            throw MediaError("Opus encoder: opus_encoder_create(48000, \(channels), VOIP) failed: \(opusErrorText(error))")
        }
        return encoder
    }

    /// Sends the ctl calls for every field that differs from `old` (all of them when nil).
    private func apply(_ s: OpusEncoderSettings, from old: OpusEncoderSettings?) throws(MediaError) {
        func check(_ result: Int32, _ what: String) throws(MediaError) {
            if result != OPUS_OK { throw MediaError("Opus encoder: setting \(what) failed: \(opusErrorText(result))") }
        }
        if old == nil {
            try check(copus_encoder_set_signal(state, OPUS_SIGNAL_VOICE), "signal type voice")
        }
        if old?.bitrate != s.bitrate {
            try check(copus_encoder_set_bitrate(state, Int32(s.bitrate)), "bitrate \(s.bitrate)")
        }
        if old?.complexity != s.complexity {
            try check(copus_encoder_set_complexity(state, Int32(s.complexity)), "complexity \(s.complexity)")
        }
        if old?.inbandFEC != s.inbandFEC {
            try check(copus_encoder_set_inband_fec(state, s.inbandFEC ? 1 : 0), "in-band FEC")
        }
        if old?.packetLossPercent != s.packetLossPercent {
            try check(copus_encoder_set_packet_loss_perc(state, Int32(s.packetLossPercent)),
                      "packet loss \(s.packetLossPercent) %")
        }
        if old?.dtx != s.dtx {
            try check(copus_encoder_set_dtx(state, s.dtx ? 1 : 0), "DTX")
        }
    }
}
