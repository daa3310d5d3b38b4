import RTP
import Testing
@testable import RTPMedia

/// The sans-I/O parts of the relay's forwarding: RTX written in place, NACK suppression per
/// receiver, sender reports translated into a player's timestamp space, RTT from its reports.
/// Time is a fixed base plus offsets: no sleeps.
@Suite struct RelayForwardingTests {
    let t0 = ContinuousClock.now

    // MARK: RTX written in place

    @Test(arguments: RTXPayloadTests.cases)
    func rtxInPlaceIsRFC4588(packet: RTPPacket) throws {
        let source = packet.serialize()
        // The player knew the original as seq 777; its RTX stream is 0x5151_5151, pt 97, seq 31.
        let patch = RTPHeaderPatch(ssrc: 0x5151_5151, sequenceNumber: 31, timestamp: 0x0102_0304, payloadType: 97,
                                   midID: 1, mid: Array("0".utf8), transportCCID: 2)
        let rtx = try source.withUnsafeBytes { raw -> [UInt8] in
            let view = try RTPHeaderView(raw)
            var out = [UInt8](repeating: 0, count: 2048)
            let w = try #require(out.withUnsafeMutableBytes { view.write(patch, rtxOriginalSequence: 777, into: $0) })
            return Array(out[0..<w.length])
        }
        let parsed = try RTPPacket(parsing: rtx)
        #expect(parsed.ssrc == 0x5151_5151 && parsed.payloadType == 97 && parsed.sequenceNumber == 31)
        #expect(parsed.timestamp == 0x0102_0304 && parsed.marker == packet.marker && parsed.csrcs == packet.csrcs)
        #expect(parsed.paddingLength == 0)   // padding is not carried
        #expect(parsed.extensionData(id: 1) == Array("0".utf8) && parsed.extensionData(id: 2) == [0, 0])
        #expect(parsed.payload == [0x03, 0x09] + packet.payload)   // OSN 777 first, big-endian
        // What a receiver makes of it: the original with the player's numbering back.
        let original = try RTPPacket(parsing: RTXPayload.unwrap(rtx, originalSSRC: 0xAAAA_0001, originalPayloadType: 96))
        #expect(original.sequenceNumber == 777 && original.ssrc == 0xAAAA_0001 && original.payloadType == 96)
        #expect(original.payload == packet.payload && original.timestamp == 0x0102_0304)
        // The same bytes a sender's own retransmission of that plain forward makes (one writer).
        var plainPatch = patch
        plainPatch.sequenceNumber = 777
        plainPatch.ssrc = 0xAAAA_0001
        plainPatch.payloadType = 96
        let plain = try source.withUnsafeBytes { raw in try #require(try RTPHeaderView(raw).rewritten(plainPatch)).bytes }
        var responder = NackResponder(rtx: RTXWriter(ssrc: 0x5151_5151, payloadTypes: [96: 97], sequence: 31))
        #expect(rtx == responder.retransmission(of: plain, midID: 1, mid: Array("0".utf8), orientationID: nil, transportCCID: 2))
    }

    // MARK: NACK suppression

    @Test func aSequenceNumberIsResentOncePerRoundTrip() {
        var s = RetransmissionSuppressor(interval: .milliseconds(80))
        func resend(_ seq: UInt16, now: ContinuousClock.Instant) -> Bool { s.shouldResend(seq, now: now) }
        #expect(resend(100, now: t0))
        #expect(!resend(100, now: t0 + .milliseconds(10)))     // repeated NACK: the copy is on its way
        #expect(!resend(100, now: t0 + .milliseconds(79)))
        #expect(resend(101, now: t0 + .milliseconds(10)))      // another number is not held back
        #expect(resend(100, now: t0 + .milliseconds(80)))      // a round trip later: lost again, resend
        #expect(!resend(100, now: t0 + .milliseconds(100)))
        #expect(s.suppressed == 3 && s.allowed == 3)
    }

    @Test func theIntervalFollowsTheRTTAndSlotsDoNotAlias() {
        var s = RetransmissionSuppressor(capacity: 16, interval: .milliseconds(300))
        func resend(_ seq: UInt16, now: ContinuousClock.Instant) -> Bool { s.shouldResend(seq, now: now) }
        #expect(resend(5, now: t0))
        #expect(resend(5 + 16, now: t0))                        // same slot, other number: allowed
        #expect(resend(5, now: t0 + .milliseconds(1)))          // its slot was taken: no stale suppression
        s.interval = .milliseconds(20)                                  // RTT measured lower
        #expect(!resend(5, now: t0 + .milliseconds(15)))
        #expect(resend(5, now: t0 + .milliseconds(25)))
        #expect(resend(65535, now: t0) && !s.shouldResend(65535, now: t0 + .milliseconds(1)))
    }

    @Test func aHostileNACKStormCostsOneResendPerRoundTrip() {
        var s = RetransmissionSuppressor(interval: .milliseconds(50))
        var sent = 0
        for i in 0..<5000 where s.shouldResend(UInt16(i % 10), now: t0 + .microseconds(i)) { sent += 1 }   // 5 ms of storm
        #expect(sent == 10)
    }

    // MARK: sender reports

    @Test func senderReportsAreTranslatedIntoThePlayersTimestamps() throws {
        var video = SenderReportTranslator(clockRate: 90000)
        let ntp: UInt64 = 0xE000_0000_8000_0000   // some second + 0.5 s
        video.record(SenderReport(ssrc: 0xAAAA, ntpTimestamp: ntp, rtpTimestamp: 1_000_000, packetCount: 9, octetCount: 9), arrival: t0)
        #expect(video.sourceSSRC == 0xAAAA)
        // 250 ms after the publisher's SR arrived; this player's timestamps are the source's + 5000.
        let sr = try #require(video.report(ssrc: 0xBBBB, source: 0xAAAA, timestampOffset: 5000, packetCount: 120, octetCount: 99_000,
                                           now: t0 + .milliseconds(250)))
        #expect(sr.ssrc == 0xBBBB && sr.packetCount == 120 && sr.octetCount == 99_000)
        #expect(sr.rtpTimestamp == 1_000_000 + 5000 + 22_500)
        #expect(sr.ntpTimestamp == ntp + 0x4000_0000)   // + 0.25 s in 32.32
        // The mapping is the publisher's: (ntp, rtp) pairs of the player's SRs lie on its line.
        let later = try #require(video.report(ssrc: 0xBBBB, source: 0xAAAA, timestampOffset: 5000, packetCount: 0, octetCount: 0,
                                              now: t0 + .seconds(3)))
        let dt = NTPTime.secondsSince1900(later.ntpTimestamp) - NTPTime.secondsSince1900(sr.ntpTimestamp)
        #expect(abs(dt - 2.75) < 1e-6)
        #expect(later.rtpTimestamp &- sr.rtpTimestamp == 247_500)
        // Another source (a new publisher whose SR has not come yet): no report rather than a wrong one.
        #expect(video.report(ssrc: 0xBBBB, source: 0xCCCC, timestampOffset: 0, packetCount: 0, octetCount: 0, now: t0) == nil)
        // Wraps like RTP timestamps do.
        var audio = SenderReportTranslator(clockRate: 48000)
        audio.record(SenderReport(ssrc: 1, ntpTimestamp: ntp, rtpTimestamp: UInt32.max - 10, packetCount: 0, octetCount: 0), arrival: t0)
        #expect(audio.report(ssrc: 2, source: 1, timestampOffset: 20, packetCount: 0, octetCount: 0, now: t0)?.rtpTimestamp == 9)
    }

    @Test func theRoundTripComesFromTheReportsOnOurSenderReports() throws {
        var rt = SenderReportRoundTrip()
        let sr1 = SenderReport(ssrc: 1, ntpTimestamp: 0xE000_0001_0000_0000, rtpTimestamp: 0, packetCount: 0, octetCount: 0)
        let sr2 = SenderReport(ssrc: 1, ntpTimestamp: 0xE000_0002_0000_0000, rtpTimestamp: 0, packetCount: 0, octetCount: 0)
        rt.sent(sr1, at: t0)
        rt.sent(sr2, at: t0 + .seconds(1))
        // The player got sr1, held it 100 ms, its report arrives 180 ms after sr1 left: RTT 80 ms.
        let block = ReceptionReport(ssrc: 1, lastSR: NTPTime.compact(sr1.ntpTimestamp), delaySinceLastSR: NTPTime.compact(.milliseconds(100)))
        let learned = rt.handle(block, arrival: t0 + .milliseconds(180))
        let rtt = try #require(learned)
        #expect(abs((rtt - .milliseconds(80)) / .milliseconds(1)) < 0.1)
        #expect(rt.rtt == rtt)
        // No SR echoed yet, or one we never sent: nothing learned.
        let none = rt.handle(ReceptionReport(ssrc: 1), arrival: t0)
        let unknown = rt.handle(ReceptionReport(ssrc: 1, lastSR: 12345), arrival: t0)
        #expect(none == nil && unknown == nil)
        #expect(rt.rtt == rtt)
    }
}
