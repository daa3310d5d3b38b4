import RTP

/// Reception statistics of one remote SSRC (RFC 3550): sequence validation and loss as in
/// appendix A.1/A.3, interarrival jitter as in A.8, and LSR/DLSR from the last SR received,
/// giving the reception report block of our RR/SR.
public struct ReceiverStatistics: Sendable {
    public let ssrc: UInt32
    public let clockRate: Int

    static let maxDropout: UInt16 = 3000
    static let maxMisorder: UInt16 = 100

    private var started = false
    private var maxSeq: UInt16 = 0
    /// Shifted count of sequence number wraps (A.1 `cycles`).
    private var cycles: UInt32 = 0
    private var baseSeq: UInt32 = 0
    private var badSeq: UInt32 = 0x1_0001
    private var expectedPrior: Int64 = 0
    private var receivedPrior: Int64 = 0
    /// Packets received, duplicates included (RFC 3550 counts them).
    public private(set) var packetsReceived: Int64 = 0
    public private(set) var bytesReceived: Int64 = 0

    private var epoch: ContinuousClock.Instant?
    private var lastTransit: UInt32?
    private var lastTimestamp: UInt32?
    /// A.8 jitter estimate scaled by 16 (the reported value is `>> 4`).
    private var jitterQ4: UInt32 = 0

    private var lastSR: UInt32 = 0
    private var lastSRArrival: ContinuousClock.Instant?
    public private(set) var lastSenderReport: SenderReport?

    public init(ssrc: UInt32, clockRate: Int) {
        self.ssrc = ssrc
        self.clockRate = max(clockRate, 1)
    }

    /// Extended highest sequence number received (cycles << 16 | max_seq).
    public var extendedHighestSequence: UInt32 { cycles &+ UInt32(maxSeq) }

    /// Expected − received since the first packet (RFC 3550 A.3); negative with duplicates.
    public var cumulativeLost: Int64 {
        guard started else { return 0 }
        return expected - packetsReceived
    }

    private var expected: Int64 { Int64(extendedHighestSequence) - Int64(baseSeq) + 1 }

    /// Interarrival jitter in RTP timestamp units.
    public var jitter: UInt32 { jitterQ4 >> 4 }
    public var jitterSeconds: Double { Double(jitterQ4) / 16 / Double(clockRate) }

    /// Records one arriving packet. Retransmissions skip the jitter estimate (their arrival
    /// says nothing about the network path's variation); packets of an already-seen timestamp
    /// too (a video frame's packets leave together), as libwebrtc does.
    public mutating func record(sequenceNumber seq: UInt16, timestamp: UInt32, payloadBytes: Int = 0,
                                arrival: ContinuousClock.Instant, isRetransmission: Bool = false) {
        let (valid, inOrder) = updateSequence(seq)
        guard valid else { return }
        packetsReceived += 1
        bytesReceived += Int64(payloadBytes)
        guard inOrder, !isRetransmission, lastTimestamp != timestamp else { return }
        lastTimestamp = timestamp
        let e = epoch ?? arrival
        epoch = e
        let arrivalTicks = UInt32(truncatingIfNeeded: (arrival - e).rtpTicks(clockRate: clockRate))
        let transit = arrivalTicks &- timestamp
        if let last = lastTransit {
            let d = Int32(bitPattern: transit &- last)
            let magnitude = d == Int32.min ? UInt32(1) << 31 : UInt32(abs(d))
            // J += (|D| − J)/16, in the A.8 fixed-point form.
            jitterQ4 = jitterQ4 &+ magnitude &- ((jitterQ4 &+ 8) >> 4)
        }
        lastTransit = transit
    }

    public mutating func record(_ packet: RTPPacket, arrival: ContinuousClock.Instant, isRetransmission: Bool = false) {
        record(sequenceNumber: packet.sequenceNumber, timestamp: packet.timestamp, payloadBytes: packet.payload.count,
               arrival: arrival, isRetransmission: isRetransmission)
    }

    /// A.1 `update_seq` (no initial probation: the first packet is trusted, as libwebrtc does).
    /// Returns whether the packet counts (a lone big jump does not) and whether it moved the
    /// sequence forward.
    private mutating func updateSequence(_ seq: UInt16) -> (valid: Bool, advanced: Bool) {
        guard started else {
            started = true
            restart(at: seq)
            return (true, true)
        }
        let delta = seq &- maxSeq
        if delta == 0 {
            return (true, false)  // duplicate
        } else if delta < Self.maxDropout {
            if seq < maxSeq { cycles &+= 0x1_0000 }
            maxSeq = seq
            return (true, true)
        } else if Int(delta) <= 65536 - Int(Self.maxMisorder) {
            // A big jump: believe it only when the next packet follows it (source restarted).
            if UInt32(seq) == badSeq {
                restart(at: seq)
                return (true, true)
            }
            badSeq = UInt32(seq &+ 1)
            return (false, false)
        }
        return (true, false)  // reordered or duplicate
    }

    private mutating func restart(at seq: UInt16) {
        baseSeq = UInt32(seq)
        maxSeq = seq
        badSeq = 0x1_0001
        cycles = 0
        // The restarting packet is counted by the caller after this.
        packetsReceived = 0
        expectedPrior = 0
        receivedPrior = 0
        lastTransit = nil
        lastTimestamp = nil
    }

    /// Remembers the sender's last SR for the LSR/DLSR fields.
    public mutating func recordSenderReport(_ sr: SenderReport, arrival: ContinuousClock.Instant) {
        lastSR = NTPTime.compact(sr.ntpTimestamp)
        lastSRArrival = arrival
        lastSenderReport = sr
    }

    /// The report block for this source at `now`; starts a new interval for `fractionLost`.
    /// Nil before the first packet.
    public mutating func receptionReport(now: ContinuousClock.Instant) -> ReceptionReport? {
        guard started else { return nil }
        let exp = expected
        let expectedInterval = exp - expectedPrior
        let receivedInterval = packetsReceived - receivedPrior
        expectedPrior = exp
        receivedPrior = packetsReceived
        let lostInterval = expectedInterval - receivedInterval
        let fraction: UInt8 = (expectedInterval == 0 || lostInterval <= 0)
            ? 0 : UInt8(min((lostInterval << 8) / expectedInterval, 255))
        var dlsr: UInt32 = 0
        if let at = lastSRArrival { dlsr = NTPTime.compact(now - at) }
        return ReceptionReport(ssrc: ssrc, fractionLost: fraction,
                               cumulativeLost: Int32(clamping: min(max(cumulativeLost, -0x80_0000), 0x7F_FFFF)),
                               highestSequence: extendedHighestSequence, jitter: jitter,
                               lastSR: lastSR, delaySinceLastSR: lastSRArrival == nil ? 0 : dlsr)
    }
}
