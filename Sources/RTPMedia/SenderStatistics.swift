import RTP

/// What we sent on one SSRC: counts for the SR, the timestamp/clock pairing the SR carries,
/// and what the remote end reports back about it (loss, jitter, round-trip time).
public struct SenderStatistics: Sendable {
    public let ssrc: UInt32
    public let clockRate: Int
    /// Counts wrap at 2^32 as the SR fields do.
    public private(set) var packetsSent: UInt32 = 0
    /// Payload octets (RFC 3550 §6.4.1: no header or padding).
    public private(set) var octetsSent: UInt32 = 0
    public private(set) var lastRTPTimestamp: UInt32?
    /// The instant `lastRTPTimestamp` stands for: its frame's capture when the sender knows it,
    /// else when it was sent.
    public private(set) var lastTimestampInstant: ContinuousClock.Instant?
    /// Latest round-trip time computed from a report block about our stream.
    public var roundTripTime: Duration? { roundTrip.rtt }
    private var roundTrip = SenderReportRoundTrip()
    /// The latest report block about our stream.
    public private(set) var remoteReport: ReceptionReport?

    public init(ssrc: UInt32, clockRate: Int) {
        self.ssrc = ssrc
        self.clockRate = max(clockRate, 1)
    }

    /// Counts a sent media packet. Retransmissions count too (they are packets on this SSRC)
    /// but do not move the timestamp reference. `capturedAt`: when its frame was captured (the
    /// instant its timestamp stands for); without it, `sentAt`, late by the encode time.
    public mutating func record(_ packet: RTPPacket, sentAt: ContinuousClock.Instant, capturedAt: ContinuousClock.Instant? = nil,
                                isRetransmission: Bool = false) {
        record(payloadBytes: packet.payload.count, rtpTimestamp: packet.timestamp, sentAt: sentAt, capturedAt: capturedAt,
               isRetransmission: isRetransmission)
    }

    public mutating func record(payloadBytes: Int, rtpTimestamp: UInt32, sentAt: ContinuousClock.Instant,
                                capturedAt: ContinuousClock.Instant? = nil, isRetransmission: Bool = false) {
        packetsSent &+= 1
        octetsSent &+= UInt32(truncatingIfNeeded: payloadBytes)
        guard !isRetransmission else { return }
        lastRTPTimestamp = rtpTimestamp
        lastTimestampInstant = capturedAt ?? sentAt
    }

    /// The SR to send at `now` (remembered, for the RTT its reception reports give): `ntp` is
    /// the wall clock at `now`; the RTP timestamp is the last sent one advanced by the time
    /// since the instant it stands for (as libwebrtc: since its capture, so a receiver's lip
    /// sync does not carry the encode time). Nil before the first packet.
    public mutating func senderReport(now: ContinuousClock.Instant, ntp: UInt64, reports: [ReceptionReport] = []) -> SenderReport? {
        guard let ts = lastRTPTimestamp, let reference = lastTimestampInstant else { return nil }
        let ticks = (now - reference).rtpTicks(clockRate: clockRate)
        let sr = SenderReport(ssrc: ssrc, ntpTimestamp: ntp, rtpTimestamp: ts &+ UInt32(truncatingIfNeeded: ticks),
                              packetCount: packetsSent, octetCount: octetsSent, reports: reports)
        roundTrip.sent(sr, at: now)
        return sr
    }

    /// Takes a report block from the remote's SR/RR; for our SSRC it is kept and, when it echoes
    /// one of our SRs, gives the round-trip time.
    @discardableResult
    public mutating func handle(_ report: ReceptionReport, arrival: ContinuousClock.Instant) -> Duration? {
        guard report.ssrc == ssrc else { return nil }
        remoteReport = report
        return roundTrip.handle(report, arrival: arrival)
    }
}
