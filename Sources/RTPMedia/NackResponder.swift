import RTP

/// Answers one receiver's NACKs (RFC 4585 §6.2.1) for one outgoing stream from a history of
/// what was sent: each requested packet the history still holds, unless it was resent to this
/// receiver less than its RTT ago (the first copy may still be on its way, and a receiver
/// repeats its NACK until the packet arrives — a hostile one thousands of times), written by
/// `rtx` on the RTX stream when one is negotiated. A packet older than `maxAge(rtt)` is not
/// resent: after an outage a receiver asks for everything sent into it, and those resends would
/// flood the path it just got back and be played seconds late (libwebrtc's history keeps
/// packets max(1 s, 3 RTT) for the same reason); its keyframe request is the way back. Nor is
/// one sent before the newest keyframe (`supersededBefore`): the receiver decodes from that
/// keyframe on, and after an outage ~120 such resends went ahead of it into the link. A
/// sender owns one beside its history; a relay keeps one per player and stream, reading the
/// publisher's shared history. Sans-I/O.
public struct NackResponder: Sendable {
    public var suppressor: RetransmissionSuppressor
    /// Our RTX stream for this output (nil: none negotiated, resend as is).
    public var rtx: RTXWriter?
    public private(set) var statistics = Statistics()

    public struct Statistics: Sendable, Equatable {
        /// NACK messages and the sequence numbers they asked for.
        public var nacksReceived = 0
        public var requested = 0
        /// Answered with a retransmission.
        public var resent = 0
        /// No longer (or never) in the history.
        public var missed = 0
        /// Resent (or, with `inFlight`, sent) less than an RTT ago.
        public var suppressed = 0
        /// Sent longer ago than `maxAge` (too late to be of use).
        public var tooOld = 0
        /// Sent before the newest keyframe (of no use once it is there).
        public var superseded = 0
    }

    /// The first sequence number (the history's) of the newest keyframe sent: packets before
    /// it are not resent. Nil: no keyframe known (audio, or none sent yet).
    public var supersededBefore: UInt16?

    /// Packets sent less than this long ago are not resent: that copy is still on its way, and
    /// the NACK left the receiver before it could have arrived (a loss shows one round trip after
    /// the send at the earliest). Nil (the round trip unknown): no such limit. A relay forwards
    /// a publisher's late repair to players that had already asked for it; a player's next NACK
    /// crossed it and was answered with a second copy.
    public var inFlight: Duration?

    /// How old a packet may be and still be resent: max(1 s, 3 RTT).
    public static func maxAge(rtt: Duration) -> Duration { max(.seconds(1), rtt * 3) }

    public init(rtx: RTXWriter? = nil, rtt: Duration = .milliseconds(100)) {
        self.suppressor = RetransmissionSuppressor(interval: rtt)
        self.rtx = rtx
    }

    /// The receiver's round-trip time: resends of one number closer together collapse.
    public var rtt: Duration {
        get { suppressor.interval }
        set { suppressor.interval = newValue }
    }

    /// The history entries to resend for `nack`, in request order (each number once), each with
    /// the number the receiver asked for. `source` maps an asked-for number to the history's (a relay's
    /// players see rewritten numbers); nil skips it.
    public mutating func respond<Packet>(to nack: [UInt16], from history: RTPHistory<Packet>, now: ContinuousClock.Instant,
                                         source: (UInt16) -> UInt16? = { $0 }) -> [(requested: UInt16, packet: Packet)] {
        statistics.nacksReceived += 1
        var out: [(requested: UInt16, packet: Packet)] = []
        // One request per number, however often a (hostile) NACK repeats it.
        var seen = Set<UInt16>(minimumCapacity: nack.count)
        for requested in nack where seen.insert(requested).inserted {
            statistics.requested += 1
            guard let number = source(requested), let (packet, sentAt) = history.sent(sequenceNumber: number) else {
                statistics.missed += 1
                continue
            }
            if let start = supersededBefore, Int16(bitPattern: number &- start) < 0 {
                statistics.superseded += 1
                continue
            }
            guard now - sentAt <= Self.maxAge(rtt: rtt) else {
                statistics.tooOld += 1
                continue
            }
            if let inFlight, now - sentAt < inFlight {
                statistics.suppressed += 1
                continue
            }
            guard suppressor.shouldResend(requested, now: now) else {
                statistics.suppressed += 1
                continue
            }
            statistics.resent += 1
            out.append((requested, packet))
        }
        return out
    }

    /// One of our own sent packets (its plaintext bytes) as it goes again: on the RTX stream
    /// when negotiated for its payload type, else unchanged; with the transport-wide sequence
    /// placeholder at `transportCCID` (a retransmission gets a new number). Nil if malformed.
    public mutating func retransmission(of bytes: [UInt8], midID: UInt8?, mid: [UInt8], orientationID: UInt8?,
                                        transportCCID: UInt8?) -> [UInt8]? {
        bytes.withUnsafeBytes { raw -> [UInt8]? in
            guard let view = try? RTPHeaderView(raw) else { return nil }
            var patch = RTPHeaderPatch(ssrc: view.ssrc, sequenceNumber: view.sequenceNumber, timestamp: view.timestamp,
                                       payloadType: view.payloadType, midID: midID, mid: mid,
                                       orientationSourceID: orientationID, orientationID: orientationID, transportCCID: transportCCID)
            let osn = rtx?.retransmission(&patch)
            return view.rewritten(patch, rtxOriginalSequence: osn)?.bytes
        }
    }
}
