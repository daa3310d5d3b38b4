import RTP

/// Sender reports for a stream forwarded with rewritten timestamps (a relay's player): the
/// source's latest SR gives the NTP ↔ RTP mapping of its clock; a report for the output carries
/// the same instant in the output's timestamp space (source timestamp + the output's offset),
/// advanced to the time it is sent. Audio and video of one source keep the source's NTP clock,
/// so a receiver lines them up as the source meant (RFC 3550 §6.4.1). Sans-I/O, one per kind.
public struct SenderReportTranslator: Sendable {
    public let clockRate: Int
    private var mapping: (ssrc: UInt32, ntp: UInt64, rtp: UInt32, arrival: ContinuousClock.Instant)?

    public init(clockRate: Int) { self.clockRate = max(1, clockRate) }

    /// The source SSRC whose mapping is known.
    public var sourceSSRC: UInt32? { mapping?.ssrc }

    public mutating func record(_ sr: SenderReport, arrival: ContinuousClock.Instant) {
        mapping = (sr.ssrc, sr.ntpTimestamp, sr.rtpTimestamp, arrival)
    }

    public mutating func reset() { mapping = nil }

    /// The SR for output SSRC `ssrc` at `now`, whose timestamps are the source's plus
    /// `timestampOffset`; nil before the source sent one (or for another source).
    public func report(ssrc: UInt32, source: UInt32, timestampOffset: UInt32, packetCount: UInt32, octetCount: UInt32,
                       now: ContinuousClock.Instant) -> SenderReport? {
        guard let m = mapping, m.ssrc == source else { return nil }
        let elapsed = now - m.arrival
        let ntp = NTPTime.adding(elapsed, to: m.ntp)
        let ticks = elapsed.rtpTicks(clockRate: clockRate)
        return SenderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: m.rtp &+ timestampOffset &+ UInt32(truncatingIfNeeded: ticks),
                            packetCount: packetCount, octetCount: octetCount)
    }
}

/// Round-trip time of one outgoing stream from the reception reports its receiver sends back:
/// each report block echoes the compact NTP of our last SR (LSR) and how long it held it
/// (DLSR), so RTT = (arrival − when that SR left) − DLSR, in our own clock whatever NTP
/// timeline the SR carried (ours, or a relay's publisher's). The one RTT computation: senders
/// (`SenderStatistics`) and a relay's players use it. Sans-I/O.
public struct SenderReportRoundTrip: Sendable {
    private var sent: [(lsr: UInt32, at: ContinuousClock.Instant)] = []
    public private(set) var rtt: Duration?

    public init() {}

    /// Remembers an SR we send (the last few; receivers echo the latest they got).
    public mutating func sent(_ sr: SenderReport, at now: ContinuousClock.Instant) {
        if sent.count == 4 { sent.removeFirst() }
        sent.append((NTPTime.compact(sr.ntpTimestamp), now))
    }

    /// A report block about our stream; returns the RTT it gives.
    @discardableResult
    public mutating func handle(_ report: ReceptionReport, arrival: ContinuousClock.Instant) -> Duration? {
        guard report.lastSR != 0, let s = sent.last(where: { $0.lsr == report.lastSR }) else { return nil }
        let value = (arrival - s.at) - NTPTime.duration(compact: report.delaySinceLastSR)
        guard value >= .zero else { return nil }
        rtt = value
        return value
    }
}
