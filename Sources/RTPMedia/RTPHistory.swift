/// Sent packets by sequence number, to answer NACKs. A ring of `capacity` slots (a power of
/// two, so `seq & mask` addresses a slot across the 16-bit wrap); a slot holds the newest
/// packet that maps to it.
public struct RTPHistory: Sendable {
    struct Entry: Sendable {
        var sequenceNumber: UInt16
        var bytes: [UInt8]
        var sentAt: ContinuousClock.Instant
        var lastResent: ContinuousClock.Instant?
    }

    private var slots: [Entry?]
    private let mask: Int
    /// Packets are not resent again within this long of the previous resend (the first copy
    /// may still be on its way); keep it at the current RTT estimate.
    public var rtt: Duration = .milliseconds(100)
    public private(set) var retransmittedPackets = 0
    public private(set) var retransmittedBytes = 0
    /// NACKed sequence numbers no longer (or never) in the history.
    public private(set) var missedRequests = 0
    /// Requests skipped because the packet was resent less than an RTT ago.
    public private(set) var suppressedRequests = 0

    /// The default, 1024 packets, is about 1 s of 720p video at up to ~9 Mbit/s with
    /// 1200-byte packets. `capacity` is rounded up to a power of two, 16…32768.
    public init(capacity: Int = 1024) {
        var size = 16
        while size < min(max(capacity, 16), 32768) { size <<= 1 }
        slots = Array(repeating: nil, count: size)
        mask = size - 1
    }

    public var capacity: Int { slots.count }

    /// Keeps a sent packet (its plaintext RTP bytes, before SRTP).
    public mutating func store(_ bytes: [UInt8], sequenceNumber: UInt16, sentAt: ContinuousClock.Instant) {
        slots[Int(sequenceNumber) & mask] = Entry(sequenceNumber: sequenceNumber, bytes: bytes, sentAt: sentAt)
    }

    public func packet(sequenceNumber: UInt16) -> [UInt8]? {
        guard let e = slots[Int(sequenceNumber) & mask], e.sequenceNumber == sequenceNumber else { return nil }
        return e.bytes
    }

    /// The packets to resend for a NACK, in request order; skips those not held and those
    /// resent less than `rtt` ago.
    public mutating func packets(for nack: [UInt16], now: ContinuousClock.Instant) -> [[UInt8]] {
        var out: [[UInt8]] = []
        for seq in nack {
            let i = Int(seq) & mask
            guard var e = slots[i], e.sequenceNumber == seq else {
                missedRequests += 1
                continue
            }
            if let last = e.lastResent, now - last < rtt {
                suppressedRequests += 1
                continue
            }
            e.lastResent = now
            slots[i] = e
            retransmittedPackets += 1
            retransmittedBytes += e.bytes.count
            out.append(e.bytes)
        }
        return out
    }
}
