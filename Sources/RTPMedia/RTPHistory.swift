/// Sent (or forwarded) packets by sequence number, to answer NACKs (`NackResponder`): a sender
/// keeps its plaintext bytes, a relay its publishers' as they arrived. A ring of `capacity`
/// slots (a power of two, so `seq & mask` addresses a slot across the 16-bit wrap); a slot holds
/// the newest packet that maps to it.
public struct RTPHistory<Packet: Sendable>: Sendable {
    struct Entry: Sendable {
        var sequenceNumber: UInt16
        var packet: Packet
        var size: Int
        var sentAt: ContinuousClock.Instant
    }

    private var slots: [Entry?]
    private let mask: Int

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
        sent(sequenceNumber: sequenceNumber)?.packet
    }

    /// The packet and when it was sent.
    public func sent(sequenceNumber: UInt16) -> (packet: Packet, sentAt: ContinuousClock.Instant)? {
        guard let e = slots[Int(sequenceNumber) & mask], e.sequenceNumber == sequenceNumber else { return nil }
        return (e.packet, e.sentAt)
    }
}

extension RTPHistory where Packet == [UInt8] {
    /// Keeps a sent packet's plaintext RTP bytes (before SRTP).
    public mutating func store(_ bytes: [UInt8], sequenceNumber: UInt16, sentAt: ContinuousClock.Instant) {
        store(bytes, size: bytes.count, sequenceNumber: sequenceNumber, sentAt: sentAt)
    }
}
