import RTP

/// The regular compound RTCP report of one connection (RFC 3550 §6.1): sender reports for the
/// streams we send (the first carries the reception report blocks), else one receiver report,
/// then SDES with our CNAME. The one composer: a PeerConnection's reports and a relay's, to
/// its players and to its publishers, are made here.
public enum RTCPReportComposer {
    /// RFC 3550: a report carries at most 31 blocks; more go in further receiver reports.
    static let maxBlocks = 31

    /// Empty when there is nothing to report. `reporterSSRC`: the SSRC an RR is sent from when
    /// we send no stream (the SDES goes with the first report's SSRC).
    public static func compound(senderReports: [SenderReport], receptionBlocks: [ReceptionReport],
                                reporterSSRC: UInt32?, cname: String?) -> [RTCPPacket] {
        var packets: [RTCPPacket] = []
        var blocks = receptionBlocks[...]
        for (i, var sr) in senderReports.enumerated() {
            if i == 0 {
                sr.reports = Array(blocks.prefix(maxBlocks))
                blocks = blocks.dropFirst(maxBlocks)
            }
            packets.append(.senderReport(sr))
        }
        let from = senderReports.first?.ssrc ?? reporterSSRC
        if let from {
            while !blocks.isEmpty {
                packets.append(.receiverReport(ReceiverReport(ssrc: from, reports: Array(blocks.prefix(maxBlocks)))))
                blocks = blocks.dropFirst(maxBlocks)
            }
        }
        guard !packets.isEmpty, let from else { return [] }
        if let cname { packets.append(.sourceDescription(SourceDescription(ssrc: from, cname: cname))) }
        return packets
    }
}
