/// One reception report block (RFC 3550 §6.4.1), 24 bytes on the wire.
public struct ReceptionReport: Sendable, Equatable, Hashable {
    public var ssrc: UInt32
    /// Fraction of packets lost since the previous report, in 1/256 units.
    public var fractionLost: UInt8
    /// Cumulative packets lost: a 24-bit signed value (duplicates can make it negative);
    /// clamped to −8 388 608…8 388 607 when serialized.
    public var cumulativeLost: Int32
    /// Extended highest sequence number received (cycles << 16 | sequence).
    public var highestSequence: UInt32
    /// Interarrival jitter in timestamp units.
    public var jitter: UInt32
    /// Middle 32 bits of the NTP timestamp of the last SR received (0 if none).
    public var lastSR: UInt32
    /// Delay since that SR, in 1/65536 s.
    public var delaySinceLastSR: UInt32

    public init(ssrc: UInt32, fractionLost: UInt8 = 0, cumulativeLost: Int32 = 0, highestSequence: UInt32 = 0,
                jitter: UInt32 = 0, lastSR: UInt32 = 0, delaySinceLastSR: UInt32 = 0) {
        self.ssrc = ssrc
        self.fractionLost = fractionLost
        self.cumulativeLost = cumulativeLost
        self.highestSequence = highestSequence
        self.jitter = jitter
        self.lastSR = lastSR
        self.delaySinceLastSR = delaySinceLastSR
    }

    init(_ r: inout RTCPReader) throws(RTCPError) {
        try r.need(24, "report block")
        ssrc = try r.u32("report block SSRC")
        fractionLost = try r.u8("report block fraction lost")
        let lost = try r.u24("report block cumulative lost")
        // Sign-extend the 24-bit two's complement value.
        cumulativeLost = Int32(bitPattern: lost << 8) >> 8
        highestSequence = try r.u32("report block highest sequence")
        jitter = try r.u32("report block jitter")
        lastSR = try r.u32("report block LSR")
        delaySinceLastSR = try r.u32("report block DLSR")
    }

    func append(to out: inout [UInt8]) {
        out.appendBE(ssrc)
        out.append(fractionLost)
        let lost = min(max(cumulativeLost, -0x80_0000), 0x7F_FFFF)
        out.appendBE24(UInt32(bitPattern: lost) & 0xFF_FFFF)
        out.appendBE(highestSequence)
        out.appendBE(jitter)
        out.appendBE(lastSR)
        out.appendBE(delaySinceLastSR)
    }
}

/// Sender report (PT 200). At most 31 report blocks are serialized.
public struct SenderReport: Sendable, Equatable, Hashable {
    public var ssrc: UInt32
    /// 64-bit NTP timestamp (seconds since 1900 in 32.32 fixed point); see `NTPTime`.
    public var ntpTimestamp: UInt64
    public var rtpTimestamp: UInt32
    public var packetCount: UInt32
    public var octetCount: UInt32
    public var reports: [ReceptionReport]
    /// Profile-specific extension words after the report blocks, kept raw.
    public var profileExtension: [UInt8]

    public init(ssrc: UInt32, ntpTimestamp: UInt64, rtpTimestamp: UInt32, packetCount: UInt32, octetCount: UInt32,
                reports: [ReceptionReport] = [], profileExtension: [UInt8] = []) {
        self.ssrc = ssrc
        self.ntpTimestamp = ntpTimestamp
        self.rtpTimestamp = rtpTimestamp
        self.packetCount = packetCount
        self.octetCount = octetCount
        self.reports = reports
        self.profileExtension = profileExtension
    }

    init(count: UInt8, _ r: inout RTCPReader) throws(RTCPError) {
        ssrc = try r.u32("SR sender SSRC")
        ntpTimestamp = try r.u64("SR NTP timestamp")
        rtpTimestamp = try r.u32("SR RTP timestamp")
        packetCount = try r.u32("SR packet count")
        octetCount = try r.u32("SR octet count")
        reports = []
        for _ in 0..<count { reports.append(try ReceptionReport(&r)) }
        profileExtension = try r.take(r.remaining, "SR extension")
    }

    func appendBody(to out: inout [UInt8]) {
        out.appendBE(ssrc)
        out.appendBE(ntpTimestamp)
        out.appendBE(rtpTimestamp)
        out.appendBE(packetCount)
        out.appendBE(octetCount)
        for rep in reports.prefix(31) { rep.append(to: &out) }
        out.append(contentsOf: profileExtension)
    }
}

/// Receiver report (PT 201). At most 31 report blocks are serialized.
public struct ReceiverReport: Sendable, Equatable, Hashable {
    public var ssrc: UInt32
    public var reports: [ReceptionReport]
    /// Profile-specific extension words after the report blocks, kept raw.
    public var profileExtension: [UInt8]

    public init(ssrc: UInt32, reports: [ReceptionReport] = [], profileExtension: [UInt8] = []) {
        self.ssrc = ssrc
        self.reports = reports
        self.profileExtension = profileExtension
    }

    init(count: UInt8, _ r: inout RTCPReader) throws(RTCPError) {
        ssrc = try r.u32("RR sender SSRC")
        reports = []
        for _ in 0..<count { reports.append(try ReceptionReport(&r)) }
        profileExtension = try r.take(r.remaining, "RR extension")
    }

    func appendBody(to out: inout [UInt8]) {
        out.appendBE(ssrc)
        for rep in reports.prefix(31) { rep.append(to: &out) }
        out.append(contentsOf: profileExtension)
    }
}
