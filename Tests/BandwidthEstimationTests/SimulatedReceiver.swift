import BandwidthEstimation
import RTP

/// The far end's transport-cc side: records arrival times on its own clock and every
/// `interval` reports everything up to the highest sequence received (gaps = lost), the way
/// libwebrtc's remote estimator proxy does in periodic mode.
struct SimulatedReceiver {
    /// The remote clock's reading at the sender's t0, in µs: only differences may matter.
    let clockOffset: Int64
    let t0: Moment
    private var arrivals: [Int64: Int64] = [:]
    private var highest: Int64?
    private var nextToReport: Int64?
    private var feedbackCount: UInt8 = 0
    private(set) var receivedBytes = 0
    private(set) var receivedLog: [(at: Moment, size: Int)] = []

    init(t0: Moment, clockOffset: Int64 = 987_654_321) {
        self.t0 = t0
        self.clockOffset = clockOffset
    }

    mutating func receive(_ d: SimulatedLink.Delivery) {
        arrivals[d.sequence] = (d.arrival - t0).inMicros + clockOffset
        highest = max(highest ?? d.sequence, d.sequence)
        if nextToReport == nil { nextToReport = d.sequence }
        receivedBytes += d.size
        receivedLog.append((d.arrival, d.size))
    }

    /// Feedback for everything not yet reported, or nil if nothing new arrived.
    mutating func makeFeedback() -> TransportCCFeedback? {
        guard let from = nextToReport, let to = highest, to >= from else { return nil }
        var firstArrival: Int64?
        for s in from...to { if let a = arrivals[s] { firstArrival = a; break } }
        guard let first = firstArrival else { return nil }
        let reference = first / 64_000
        var previousTick = reference * 256
        var deltas: [Int?] = []
        for s in from...to {
            guard let a = arrivals.removeValue(forKey: s) else {
                deltas.append(nil)
                continue
            }
            let tick = a / 250
            deltas.append(Int(tick - previousTick))
            previousTick = tick
        }
        nextToReport = to + 1
        feedbackCount &+= 1
        return TransportCCFeedback(senderSSRC: 1, mediaSSRC: 2, baseSequence: UInt16(truncatingIfNeeded: from),
                                   feedbackPacketCount: feedbackCount,
                                   referenceTime: UInt32(truncatingIfNeeded: reference) & 0xFF_FFFF,
                                   receivedDeltas: deltas)
    }
}

extension Duration {
    var inMicros: Int64 {
        let c = components
        return c.seconds * 1_000_000 + c.attoseconds / 1_000_000_000_000
    }
}
