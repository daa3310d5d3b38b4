import RTP

/// Lip sync for one received stream (RFC 3550 §6.4.1): its last sender report maps RTP time to
/// the sender's wall clock, so the newest packet's capture time is known on that clock. Two
/// streams of one sender share the clock: the difference of their transit times (arrival minus
/// capture) is how far apart they play, whatever the offset between the two machines' clocks.
public struct StreamTiming: Sendable {
    public let clockRate: Int
    private var reportNTP: UInt64?
    private var reportRTP: UInt32?
    private var newestRTP: UInt32?
    private var newestArrivalNTP: UInt64?

    public init(clockRate: Int) {
        self.clockRate = max(1, clockRate)
    }

    public mutating func senderReport(ntp: UInt64, rtpTimestamp: UInt32) {
        reportNTP = ntp
        reportRTP = rtpTimestamp
    }

    /// A packet arrived at `arrivalNTP` (our wall clock as NTP).
    public mutating func packet(rtpTimestamp: UInt32, arrivalNTP: UInt64) {
        // A retransmission or reordered packet is older: keep the newest capture.
        if let newest = newestRTP, Int32(bitPattern: rtpTimestamp &- newest) < 0 { return }
        newestRTP = rtpTimestamp
        newestArrivalNTP = arrivalNTP
    }

    /// Arrival minus capture of the newest packet, in seconds (plus the constant offset
    /// between the two machines' clocks); nil before a sender report.
    public var transitSeconds: Double? {
        guard let reportNTP, let reportRTP, let newestRTP, let newestArrivalNTP else { return nil }
        let sinceReport = Double(Int32(bitPattern: newestRTP &- reportRTP)) / Double(clockRate)
        let capture = NTPTime.secondsSince1900(reportNTP) + sinceReport
        return NTPTime.secondsSince1900(newestArrivalNTP) - capture
    }

    /// How much later video plays than the audio captured with it (negative: video early).
    public static func offset(video: StreamTiming, audio: StreamTiming) -> Double? {
        guard let v = video.transitSeconds, let a = audio.transitSeconds else { return nil }
        return v - a
    }
}
