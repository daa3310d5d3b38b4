/// RFC 7587 sender: one Opus packet per RTP packet; the marker goes on the first packet of
/// each talkspurt (after silence/DTX, and the very first one).
public struct OpusPacketizer: Sendable {
    private var inTalkspurt = false

    public init() {}

    /// `isSpeech` nil: packets of 1–2 bytes (what libopus emits in DTX) count as silence.
    public mutating func packetize(_ opusPacket: [UInt8], isSpeech: Bool? = nil) -> RTPPayload {
        let speech = isSpeech ?? (opusPacket.count > 2)
        let marker = speech && !inTalkspurt
        inTalkspurt = speech
        return RTPPayload(bytes: opusPacket, marker: marker)
    }
}

/// RFC 7587 receiver: the payload is one Opus packet, checked against RFC 6716 §3.4.
public enum OpusDepacketizer {
    public static func depacketize(_ payload: [UInt8]) throws(PayloadError) -> [UInt8] {
        _ = try duration(of: payload)
        return payload
    }

    /// The audio duration of an Opus packet in microseconds, validating its framing
    /// (RFC 6716 §3.1–3.4: TOC, frame count, frame lengths, ≤ 120 ms).
    public static func duration(of p: [UInt8]) throws(PayloadError) -> Int {
        func fail(_ offset: Int, _ message: String) -> PayloadError {
            PayloadError(format: "Opus", packetIndex: 0, offset: offset, message)
        }
        guard let toc = p.first else { throw fail(0, "empty packet") }
        let config = Int(toc >> 3)
        let frameMicros: Int
        switch config {
        case 0..<12: frameMicros = [10_000, 20_000, 40_000, 60_000][config % 4]
        case 12..<16: frameMicros = [10_000, 20_000][config % 2]
        default: frameMicros = [2_500, 5_000, 10_000, 20_000][config % 4]
        }
        let body = p.count - 1
        switch toc & 0x03 {
        case 0:
            guard body <= 1275 else { throw fail(1, "frame of \(body) bytes exceeds 1275") }
            return frameMicros
        case 1:
            guard body % 2 == 0 else { throw fail(1, "code 1 needs two equal frames, body is \(body) bytes") }
            guard body / 2 <= 1275 else { throw fail(1, "frames of \(body / 2) bytes exceed 1275") }
            return 2 * frameMicros
        case 2:
            guard p.count >= 2 else { throw fail(1, "code 2 without a frame length") }
            var len = Int(p[1]), header = 2
            if len >= 252 {
                guard p.count >= 3 else { throw fail(2, "code 2 two-byte frame length truncated") }
                len += 4 * Int(p[2])
                header = 3
            }
            guard len <= p.count - header else { throw fail(1, "first frame length \(len) overruns the \(p.count - header) bytes left") }
            guard p.count - header - len <= 1275 else { throw fail(header, "second frame exceeds 1275 bytes") }
            return 2 * frameMicros
        default:
            guard p.count >= 2 else { throw fail(1, "code 3 without a frame count byte") }
            let count = Int(p[1] & 0x3F)
            guard count >= 1 else { throw fail(1, "code 3 with 0 frames") }
            guard count * frameMicros <= 120_000 else { throw fail(1, "\(count) frames of \(frameMicros) µs exceed 120 ms") }
            return count * frameMicros
        }
    }
}
