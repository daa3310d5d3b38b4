import RTP

/// Generic NACKs (RFC 4585 §6.2.1) for the video streams a connection receives without a
/// jitter buffer of its own — a relay's publishers, the echo endpoint: every packet lost on the
/// way in is asked for again, so every receiver behind us gets it too. One `NackGenerator` per
/// media SSRC (at most `maxStreams`: a hostile peer's SSRCs cost nothing more), their due
/// numbers as NACK messages from our feedback SSRC, and when to look again. (A jitter buffer
/// drives its own `NackGenerator` the same way, since frame assembly reads its state.) Sans-I/O.
public struct NackRequester: Sendable {
    public var senderSSRC: UInt32
    public let configuration: NackGenerator.Configuration
    public static let maxStreams = 8
    private var generators: [UInt32: NackGenerator] = [:]
    /// NACK messages `poll` produced.
    public private(set) var nacksSent = 0

    public init(senderSSRC: UInt32, configuration: NackGenerator.Configuration = .init()) {
        self.senderSSRC = senderSSRC
        self.configuration = configuration
    }

    /// The round-trip time every stream's retries are paced by.
    public var rtt: Duration = .milliseconds(100) {
        didSet { for key in generators.keys { generators[key]?.rtt = rtt } }
    }

    /// The slowest stream's `NackGenerator.turnaround` (nil before any answer).
    public var turnaround: Duration? { generators.values.compactMap(\.turnaround).max() }

    /// Records an arrival. True when it opened a new gap: `poll` has work after the configured
    /// delay (`nextDeadline`); a packet that opens none costs nothing more.
    @discardableResult
    public mutating func received(ssrc: UInt32, sequenceNumber: UInt16, at now: ContinuousClock.Instant) -> Bool {
        if generators[ssrc] == nil {
            guard generators.count < Self.maxStreams else { return false }
            generators[ssrc] = NackGenerator(configuration: configuration, rtt: rtt)
        }
        let missing = generators[ssrc]?.missingCount ?? 0
        generators[ssrc]?.received(sequenceNumber, at: now)
        return (generators[ssrc]?.missingCount ?? 0) > missing
    }

    /// The NACK messages due at `now`, one per stream that has numbers to ask for.
    public mutating func poll(now: ContinuousClock.Instant) -> [GenericNACK] {
        var out: [GenericNACK] = []
        for ssrc in generators.keys.sorted() {
            guard let lost = generators[ssrc]?.poll(at: now), !lost.isEmpty else { continue }
            out.append(GenericNACK(senderSSRC: senderSSRC, mediaSSRC: ssrc, lostSequenceNumbers: lost))
        }
        nacksSent += out.count
        return out
    }

    public func nextDeadline() -> ContinuousClock.Instant? {
        generators.values.compactMap { $0.nextDeadline() }.min()
    }
}
