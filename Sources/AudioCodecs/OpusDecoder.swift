internal import COpus
import Media

/// Opus decoder at 48 kHz producing 16-bit PCM. Lost packets are concealed (`decode(nil)`) or,
/// when the next packet carries in-band FEC, reconstructed from it (`decode(next, fec: true)`).
/// Not thread-safe: one decode queue drives it.
public final class OpusDecoder: AudioDecoder {
    public let sampleRate = opusSampleRate
    public let channels: Int

    private let state: OpaquePointer
    private var pcm: [Int16]
    /// Samples per channel of the last packet decoded, the length to conceal when one is lost.
    private var lastPacketSamples = 960
    /// Samples per channel produced so far; the output timestamps count from the first frame.
    private var samplesOut: Int64 = 0

    public init(channels: Int = 1) throws(MediaError) {
        guard channels == 1 || channels == 2 else {
            throw MediaError("Opus decoder: channels must be 1 or 2, got \(channels)")
        }
        var error: Int32 = OPUS_OK
        guard let decoder = opus_decoder_create(Int32(opusSampleRate), Int32(channels), &error), error == OPUS_OK else {
            throw MediaError("Opus decoder: opus_decoder_create(48000, \(channels)) failed: \(opusErrorText(error))")
        }
        self.state = decoder
        self.channels = channels
        self.pcm = [Int16](repeating: 0, count: opusMaxSamplesPerChannel * channels)
    }

    deinit { opus_decoder_destroy(state) }

    /// Decodes one packet; `nil` means it was lost and the decoder conceals it (PLC) for the
    /// duration of the last packet. Output timestamps advance by the decoded duration.
    public func decode(_ packet: [UInt8]?) throws(MediaError) -> AudioFrame {
        guard let packet else {
            return try run(nil, samples: lastPacketSamples, fec: false)
        }
        let samples = try samplesIn(packet)
        let frame = try run(packet, samples: samples, fec: false)
        lastPacketSamples = samples
        return frame
    }

    /// With `fec: true`, rebuilds the packet lost just before `nextPacket` from the in-band FEC
    /// data it carries (falls back to concealment when it has none). Decode `nextPacket` itself
    /// with `decode(_:)` afterwards. With `fec: false` this is `decode(nextPacket)`.
    public func decode(_ nextPacket: [UInt8], fec: Bool) throws(MediaError) -> AudioFrame {
        guard fec else { return try decode(nextPacket) }
        // FEC in packet N covers packet N-1, which had N's frame duration.
        let samples = try samplesIn(nextPacket)
        return try run(nextPacket, samples: samples, fec: true)
    }

    /// Forgets the stream (after an SSRC change or a long gap).
    public func reset() {
        _ = copus_decoder_reset(state)
        lastPacketSamples = 960
    }

    private func samplesIn(_ packet: [UInt8]) throws(MediaError) -> Int {
        guard !packet.isEmpty else {
            throw MediaError("Opus decoder: empty packet (0 bytes)")
        }
        let n = packet.withUnsafeBufferPointer { bytes -> Int32 in
            guard let base = bytes.baseAddress else { return OPUS_BAD_ARG }
            return opus_packet_get_nb_samples(base, Int32(bytes.count), Int32(opusSampleRate))
        }
        guard n > 0 else {
            throw MediaError("Opus decoder: malformed packet of \(packet.count) bytes (TOC 0x\(String(packet[0], radix: 16))): \(opusErrorText(n))")
        }
        guard Int(n) <= opusMaxSamplesPerChannel else {
            throw MediaError("Opus decoder: packet of \(packet.count) bytes claims \(n) samples, more than 120 ms")
        }
        return Int(n)
    }

    private func run(_ packet: [UInt8]?, samples: Int, fec: Bool) throws(MediaError) -> AudioFrame {
        let state = self.state
        let decoded: Int32 = pcm.withUnsafeMutableBufferPointer { out -> Int32 in
            guard let pcmOut = out.baseAddress else { return OPUS_BUFFER_TOO_SMALL }
            guard let packet else {
                return opus_decode(state, nil, 0, pcmOut, Int32(samples), 0)
            }
            return packet.withUnsafeBufferPointer { bytes -> Int32 in
                opus_decode(state, bytes.baseAddress, Int32(bytes.count), pcmOut, Int32(samples), fec ? 1 : 0)
            }
        }
        guard decoded > 0 else {
            let size = packet.map { "\($0.count)-byte packet" } ?? "lost packet"
            throw MediaError("Opus decoder: decoding \(size) failed: \(opusErrorText(decoded))")
        }
        let count = Int(decoded) * channels
        let frame = AudioFrame(samples: .int16(Array(pcm[0..<count])), sampleRate: opusSampleRate,
                               channels: channels, timestampNs: samplesOut * 1_000_000_000 / Int64(opusSampleRate))
        samplesOut += Int64(decoded)
        return frame
    }
}
