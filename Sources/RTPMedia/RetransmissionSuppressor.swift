/// NACK dedupe for one output stream (a relay's player × kind): a sequence number resent to
/// this receiver is not resent again within its round-trip time — the first copy may still be
/// on its way, and a receiver repeats its NACK until the packet arrives (or a hostile one
/// repeats it thousands of times). A ring of `capacity` slots (a power of two) keyed by the
/// sequence number the receiver asked for; sans-I/O, the caller passes the clock.
public struct RetransmissionSuppressor: Sendable {
    private var sequence: [UInt16]
    private var sentAt: [ContinuousClock.Instant?]
    private let mask: Int
    /// Resends of one number closer together than this collapse (keep it at the receiver's
    /// RTT; until one is measured, 100 ms).
    public var interval: Duration
    public private(set) var suppressed = 0
    public private(set) var allowed = 0

    public init(capacity: Int = 1024, interval: Duration = .milliseconds(100)) {
        var size = 16
        while size < min(max(capacity, 16), 32768) { size <<= 1 }
        sequence = Array(repeating: 0, count: size)
        sentAt = Array(repeating: nil, count: size)
        mask = size - 1
        self.interval = interval
    }

    /// True (and remembered as resent at `now`) when `sequenceNumber` may be resent now.
    public mutating func shouldResend(_ sequenceNumber: UInt16, now: ContinuousClock.Instant) -> Bool {
        let i = Int(sequenceNumber) & mask
        if sequence[i] == sequenceNumber, let last = sentAt[i], now - last < interval {
            suppressed += 1
            return false
        }
        sequence[i] = sequenceNumber
        sentAt[i] = now
        allowed += 1
        return true
    }
}
