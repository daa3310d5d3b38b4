/// How much may be retransmitted to one receiver: a share of the media bytes it was sent, plus a
/// burst. A viewer whose link is full loses most of what it is sent and NACKs all of it; a relay
/// that answered every request (each number once per RTT, for up to a second) pushed three times
/// the stream into a 400 kbit/s viewer's full queue, and a hostile viewer can NACK everything on
/// purpose. libwebrtc's sender caps RTX by its pacer (the estimate); a relay without an estimate
/// for the viewer caps it by what the viewer is sent. Sans-I/O: the caller reports the running
/// total of media bytes sent (a wrapping 32-bit counter, as RTCP's octet count) before spending.
public struct RetransmissionBudget: Sendable, Equatable {
    /// Retransmitted bytes allowed per media byte sent.
    public var share: Double
    /// What may be spent at once (and what a new receiver starts with): a keyframe's worth of
    /// losses is answered in full.
    public var burst: Int
    public private(set) var available: Double
    private var lastTotal: UInt32?

    public init(share: Double = 0.25, burst: Int = 60_000) {
        self.share = share
        self.burst = burst
        available = Double(burst)
    }

    /// `total`: media bytes sent to the receiver so far (wrapping).
    public mutating func credit(mediaBytesSent total: UInt32) {
        if let last = lastTotal {
            available = min(Double(burst), available + share * Double(total &- last))
        }
        lastTotal = total
    }

    /// Takes `bytes` if that much is available.
    public mutating func spend(_ bytes: Int) -> Bool {
        guard Double(bytes) <= available else { return false }
        available -= Double(bytes)
        return true
    }
}
