/// Keeps one outgoing RTP stream continuous while its source changes underneath it: a relay's
/// player keeps its SSRC and SRTP context when the stream's publisher is replaced, but the new
/// publisher starts at a random sequence number and timestamp. Passed through unchanged, half
/// of those look "old" to the player's SRTP replay check and are dropped, and its jitter buffer
/// sees a timestamp jump. So each output stream maps (source SSRC, sequence, timestamp) to
/// sequence numbers and timestamps that continue where the previous source stopped.
/// Sans-I/O; one per output stream (player × kind).
public struct SourceSwitchRewriter: Sendable {
    private var source: UInt32?
    /// The current source's first packet (the player's first, or the first after a switch) while
    /// it is recent: anything older is dropped, as it would reuse sequence numbers the previous
    /// source already sent (an SRTP replay at the player) or come from before anything the player
    /// was sent. Forgotten `firstPacketGuard` packets on: serial arithmetic calls every packet
    /// more than half the sequence space past it older (kept, it dropped a player's video
    /// 32,768 packets after a switch, for the next 32,768).
    private var firstSequence: UInt16?
    static let firstPacketGuard: UInt16 = 0x4000
    private var sequenceDelta: UInt16 = 0
    private var timestampDelta: UInt32 = 0
    /// The highest output sequence number and its timestamp, and when it went out.
    private var lastSequence: UInt16?
    private var lastTimestamp: UInt32 = 0
    /// Since `origin`: a stored `ContinuousClock.Instant` (not `@frozen`) would give this struct,
    /// and the relay's per-player record around it, a layout known only at run time.
    private var lastSentAt: Duration?
    private static let origin = ContinuousClock.now
    public private(set) var switches = 0

    public init() {}

    /// The SSRC whose packets go out now; nil before the first.
    public var currentSource: UInt32? { source }

    /// The highest output sequence number sent; nil before the first.
    public var lastOutputSequence: UInt16? { lastSequence }

    /// The output sequence number and timestamp for a source packet; nil: drop it (a reordered
    /// packet from before the current source's first).
    public mutating func rewrite(ssrc: UInt32, sequenceNumber: UInt16, timestamp: UInt32, clockRate: Int,
                                 now: ContinuousClock.Instant) -> (sequenceNumber: UInt16, timestamp: UInt32)? {
        if ssrc != source {
            if let last = lastSequence, let at = lastSentAt {
                // Continue one past the last sequence number, and the timestamp by the wall time
                // that passed (at least one tick), so the player's clock keeps running.
                let elapsed = (now - Self.origin) - at
                let ticks = max(1, Int((Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
                                       * Double(clockRate)))
                sequenceDelta = last &+ 1 &- sequenceNumber
                timestampDelta = lastTimestamp &+ UInt32(truncatingIfNeeded: ticks) &- timestamp
                switches += 1
            }
            firstSequence = sequenceNumber
            source = ssrc
        } else if let first = firstSequence {
            if first.isNewer(than: sequenceNumber) { return nil }
            if sequenceNumber &- first >= Self.firstPacketGuard { firstSequence = nil }
        }
        let out = (sequenceNumber &+ sequenceDelta, timestamp &+ timestampDelta)
        if lastSequence.map({ out.0.isNewer(than: $0) }) ?? true {
            lastSequence = out.0
            lastTimestamp = out.1
            lastSentAt = now - Self.origin
        }
        return out
    }

    /// The source sequence number that went out as `output` (to answer a NACK from history);
    /// nil before anything was sent, and for what came before the current source's first packet.
    public func sourceSequence(forOutput output: UInt16) -> UInt16? {
        guard source != nil else { return nil }
        let sequence = output &- sequenceDelta
        if let first = firstSequence, first.isNewer(than: sequence) { return nil }
        return sequence
    }

    /// What is added to `ssrc`'s timestamps on the way out (to translate its sender reports);
    /// nil unless it is the current source.
    public func timestampOffset(forSource ssrc: UInt32) -> UInt32? {
        source == ssrc ? timestampDelta : nil
    }
}
