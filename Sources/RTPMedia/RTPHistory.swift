/// Sent (or forwarded) packets by sequence number, to answer NACKs: a sender keeps its
/// plaintext bytes (`RTPHistory<[UInt8]>`), the relay its publishers' parsed packets. A ring of
/// `capacity` slots (a power of two, so `seq & mask` addresses a slot across the 16-bit wrap);
/// a slot holds the newest packet that maps to it.
public struct RTPHistory<Packet: Sendable>: Sendable {
    struct Entry: Sendable {
        var sequenceNumber: UInt16
        var packet: Packet
        var size: Int
        var sentAt: ContinuousClock.Instant
        var lastResent: ContinuousClock.Instant?
    }

    private var slots: [Entry?]
    private let mask: Int
    /// Packets are not resent again within this long of the previous resend (the first copy
    /// may still be on its way); keep it at the current RTT estimate. Zero: never suppressed
    /// (a relay answering many players from one history).
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

    /// Keeps a packet of `size` bytes on the wire.
    public mutating func store(_ packet: Packet, size: Int, sequenceNumber: UInt16, sentAt: ContinuousClock.Instant) {
        slots[Int(sequenceNumber) & mask] = Entry(sequenceNumber: sequenceNumber, packet: packet, size: size, sentAt: sentAt)
    }

    public func packet(sequenceNumber: UInt16) -> Packet? {
        guard let e = slots[Int(sequenceNumber) & mask], e.sequenceNumber == sequenceNumber else { return nil }
        return e.packet
    }

    /// The packets to resend for a NACK, in request order; skips those not held and those
    /// resent less than `rtt` ago.
    public mutating func packets(for nack: [UInt16], now: ContinuousClock.Instant) -> [Packet] {
        var out: [Packet] = []
        for seq in nack {
            let i = Int(seq) & mask
            guard var e = slots[i], e.sequenceNumber == seq else {
                missedRequests += 1
                continue
            }
            if rtt > .zero, let last = e.lastResent, now - last < rtt {
                suppressedRequests += 1
                continue
            }
            e.lastResent = now
            slots[i] = e
            retransmittedPackets += 1
            retransmittedBytes += e.size
            out.append(e.packet)
        }
        return out
    }
}

extension RTPHistory where Packet == [UInt8] {
    /// Keeps a sent packet's plaintext RTP bytes (before SRTP).
    public mutating func store(_ bytes: [UInt8], sequenceNumber: UInt16, sentAt: ContinuousClock.Instant) {
        store(bytes, size: bytes.count, sequenceNumber: sequenceNumber, sentAt: sentAt)
    }
}
