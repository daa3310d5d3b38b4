import RTP
import Testing
@testable import RTPMedia

@Suite struct RTCPStatisticsTests {
    let start = ContinuousClock.now

    /// 1000 packets from sequence 65000 (so the count wraps), every 10th lost, arrival
    /// jitter from a fixed pattern: loss, extended sequence and jitter follow RFC 3550.
    @Test func receiverStatisticsMatchRFC3550() throws {
        var stats = ReceiverStatistics(ssrc: 7, clockRate: 48_000)
        var expectedJitter = 0.0
        var previousTransit: Double?
        for i in 0..<1000 where i % 10 != 5 {
            let seq = UInt16(truncatingIfNeeded: 65_000 + i)
            let ts = UInt32(truncatingIfNeeded: 1_000_000 + i * 960)
            let extraMs = Int64((i * 7) % 5)  // 0…4 ms of network variation
            let arrival = start + .milliseconds(20 * Int64(i) + extraMs)
            stats.record(sequenceNumber: seq, timestamp: ts, payloadBytes: 80, arrival: arrival)
            // RFC 3550 §6.4.1: D = (Rj − Ri) − (Sj − Si), J += (|D| − J) / 16, in timestamp units.
            let transit = Double(20 * i + Int(extraMs)) * 48 - Double(i * 960)
            if let p = previousTransit { expectedJitter += (abs(transit - p) - expectedJitter) / 16 }
            previousTransit = transit
        }
        #expect(stats.cumulativeLost == 100)
        #expect(stats.packetsReceived == 900)
        #expect(stats.extendedHighestSequence == 1 << 16 | UInt32((65_000 + 999) - 65_536))
        #expect(abs(Double(stats.jitter) - expectedJitter) <= 1)
        #expect(expectedJitter > 10)
        let v1 = stats.receptionReport(now: start + .seconds(20))
        let report = try #require(v1)
        #expect(report.ssrc == 7)
        #expect(report.cumulativeLost == 100)
        #expect(report.fractionLost == 25)  // 100/1000 · 256, rounded down
        #expect(report.highestSequence == stats.extendedHighestSequence)
        #expect(report.jitter == stats.jitter)
        #expect(report.lastSR == 0 && report.delaySinceLastSR == 0)

        // Next interval: 10 more packets, no loss, one duplicate.
        for i in 1000..<1010 {
            stats.record(sequenceNumber: UInt16(truncatingIfNeeded: 65_000 + i), timestamp: UInt32(1_000_000 + i * 960),
                         arrival: start + .milliseconds(20 * Int64(i)))
        }
        stats.record(sequenceNumber: UInt16(truncatingIfNeeded: 66_009), timestamp: 0, arrival: start + .seconds(21))
        let v2 = stats.receptionReport(now: start + .seconds(21))
        let second = try #require(v2)
        #expect(second.fractionLost == 0)
        #expect(second.cumulativeLost == 99)  // the duplicate counts as received (RFC 3550)
    }

    @Test func sequenceRestartNeedsTwoPackets() {
        var stats = ReceiverStatistics(ssrc: 1, clockRate: 90_000)
        for i in 0..<10 { stats.record(sequenceNumber: UInt16(100 + i), timestamp: 0, arrival: start) }
        stats.record(sequenceNumber: 40_000, timestamp: 0, arrival: start)  // stray: ignored
        stats.record(sequenceNumber: 110, timestamp: 0, arrival: start)
        #expect(stats.cumulativeLost == 0 && stats.packetsReceived == 11)
        stats.record(sequenceNumber: 50_000, timestamp: 0, arrival: start)
        stats.record(sequenceNumber: 50_001, timestamp: 0, arrival: start)  // confirmed: new base
        #expect(stats.extendedHighestSequence == 50_001)
        #expect(stats.cumulativeLost == 0)
    }

    @Test func lastSRAndDelayAreReported() throws {
        var stats = ReceiverStatistics(ssrc: 9, clockRate: 90_000)
        stats.record(sequenceNumber: 1, timestamp: 0, arrival: start)
        let ntp: UInt64 = 0xE000_1234_5678_9ABC
        stats.recordSenderReport(SenderReport(ssrc: 9, ntpTimestamp: ntp, rtpTimestamp: 0, packetCount: 1, octetCount: 1),
                                 arrival: start + .milliseconds(100))
        let v3 = stats.receptionReport(now: start + .milliseconds(350))
        let report = try #require(v3)
        #expect(report.lastSR == 0x1234_5678)
        #expect(report.delaySinceLastSR == 16_384)  // 0.25 s in 1/65536 s
    }

    @Test func senderReportExtrapolatesTheTimestamp() throws {
        var sender = SenderStatistics(ssrc: 5, clockRate: 90_000)
        #expect(sender.senderReport(now: start, ntp: 1) == nil)
        for i in 0..<10 {
            sender.record(RTPPacket(payloadType: 96, sequenceNumber: UInt16(i), timestamp: 90_000 + UInt32(i) * 3000,
                                    ssrc: 5, payload: [UInt8](repeating: 0, count: 100)),
                          sentAt: start + .milliseconds(33 * Int64(i)))
        }
        sender.record(payloadBytes: 100, rtpTimestamp: 0, sentAt: start + .seconds(5), isRetransmission: true)
        let clock = NTPClock(reference: start, unixSeconds: 1_800_000_000)
        let now = start + .milliseconds(297 + 100)
        let v4 = sender.senderReport(now: now, ntp: clock.ntp(at: now))
        let sr = try #require(v4)
        #expect(sr.packetCount == 11 && sr.octetCount == 1100)
        #expect(sr.rtpTimestamp == 90_000 + 9 * 3000 + 9000)  // last one + 100 ms at 90 kHz
        #expect(sr.ntpTimestamp == NTPTime.ntp(unixSeconds: 1_800_000_000.397))
    }

    /// Frames leave the encoder 10 to 60 ms after capture: the SR's timestamp follows the
    /// capture instants, so every report maps NTP to RTP the same way (a receiver's lip sync and
    /// a recorder's placement do not move with the encode time).
    @Test func senderReportFollowsTheCaptureInstant() throws {
        var sender = SenderStatistics(ssrc: 5, clockRate: 90_000)
        let clock = NTPClock(reference: start, unixSeconds: 1_800_000_000)
        var mappings: [Double] = []
        for i in 0..<30 {
            let captured = start + .milliseconds(33 * Int64(i))
            let sent = captured + .milliseconds([10, 60, 25][i % 3])
            sender.record(RTPPacket(payloadType: 96, sequenceNumber: UInt16(i), timestamp: UInt32(i) * 2970,
                                    ssrc: 5, payload: [0]), sentAt: sent, capturedAt: captured)
            let now = sent + .milliseconds(5)
            let report = sender.senderReport(now: now, ntp: clock.ntp(at: now))
            let sr = try #require(report)
            // Capture time the SR gives timestamp 0: NTP seconds minus the RTP timestamp's seconds.
            mappings.append(NTPTime.secondsSince1900(sr.ntpTimestamp) - Double(sr.rtpTimestamp) / 90_000)
        }
        #expect(mappings.max()! - mappings.min()! < 0.0001, "\(mappings)")
    }

    /// SR from us → remote (37 ms), remote holds it 123 ms, RR back (41 ms): RTT = 78 ms, in our
    /// own clock (`SenderReportRoundTrip`, as a relay's players compute it too).
    @Test func roundTripTimeFromSRAndRR() throws {
        let senderClock = NTPClock(reference: start, unixSeconds: 1_800_000_000.25)
        // The remote's wall clock is off by minutes; RTT must not care.
        var remote = ReceiverStatistics(ssrc: 5, clockRate: 90_000)
        var sender = SenderStatistics(ssrc: 5, clockRate: 90_000)
        var now = start
        for i in 0..<5 {
            let p = RTPPacket(payloadType: 96, sequenceNumber: UInt16(i), timestamp: UInt32(i) * 3000, ssrc: 5, payload: [1])
            sender.record(p, sentAt: now)
            remote.record(p, arrival: now + .milliseconds(37))
            now += .milliseconds(33)
        }
        let v5 = sender.senderReport(now: now, ntp: senderClock.ntp(at: now))
        let sr = try #require(v5)
        remote.recordSenderReport(sr, arrival: now + .milliseconds(37))
        let v6 = remote.receptionReport(now: now + .milliseconds(37 + 123))
        let report = try #require(v6)
        let rrArrival = now + .milliseconds(37 + 123 + 41)
        let v7 = sender.handle(report, arrival: rrArrival)
        let rtt = try #require(v7)
        #expect(abs((rtt - .milliseconds(78)).inSeconds) < 0.001)
        #expect(sender.roundTripTime == rtt)
        #expect(sender.remoteReport == report)
        // A block about another SSRC is not ours.
        let v10 = sender.handle(ReceptionReport(ssrc: 6, lastSR: 1), arrival: rrArrival)
        #expect(v10 == nil)
    }

    @Test func historyAnswersNACKsOncePerRTT() {
        var history = RTPHistory<[UInt8]>(capacity: 1000)
        #expect(history.capacity == 1024)
        var responder = NackResponder(rtt: .milliseconds(50))
        for i in 0..<2000 {
            let seq = UInt16(truncatingIfNeeded: 64_000 + i)  // wraps
            history.store([UInt8(truncatingIfNeeded: i)], sequenceNumber: seq, sentAt: start)
        }
        let newest = UInt16(truncatingIfNeeded: 64_000 + 1999)
        let old = UInt16(truncatingIfNeeded: 64_000 + 100)  // overwritten by now
        #expect(responder.respond(to: [newest, newest &- 1, old], from: history, now: start).map(\.packet)
                == [[UInt8(1999 & 0xFF)], [UInt8(1998 & 0xFF)]])
        #expect(responder.statistics.missed == 1)
        // Asked again within an RTT: the first resend may still be on its way (a number repeated
        // in one NACK is one request).
        #expect(responder.respond(to: [newest, newest], from: history, now: start + .milliseconds(20)).isEmpty)
        #expect(responder.statistics.suppressed == 1)
        #expect(responder.respond(to: [newest, newest], from: history, now: start + .milliseconds(60)).count == 1)
        #expect(responder.statistics.resent == 3 && responder.statistics.nacksReceived == 3)
        // A relay's player asks by its own numbers: the mapping finds the history's.
        let mapped = responder.respond(to: [7], from: history, now: start + .seconds(1)) { $0 == 7 ? newest &- 2 : nil }
        #expect(mapped.map(\.requested) == [7] && mapped.map(\.packet) == [[UInt8(1997 & 0xFF)]])
    }

    /// After an outage a receiver NACKs everything sent into it: what is older than
    /// max(1 s, 3 RTT) is not resent (it would be played seconds late and flood the path back).
    @Test func packetsOlderThanASecondOrThreeRTTsAreNotResent() {
        var history = RTPHistory<[UInt8]>(capacity: 256)
        for i in 0..<100 {   // one packet per 30 ms
            history.store([UInt8(i)], sequenceNumber: UInt16(i), sentAt: start + .milliseconds(30 * i))
        }
        let now = start + .milliseconds(30 * 99)   // 2.97 s
        var responder = NackResponder(rtt: .milliseconds(50))
        let resent = responder.respond(to: (0..<100).map(UInt16.init), from: history, now: now).map(\.requested)
        #expect(resent == Array(66...99).map(UInt16.init), "sent within the last second only: \(resent)")
        #expect(responder.statistics.tooOld == 66 && responder.statistics.resent == 34)
        // A long round trip stretches it: 3 × 500 ms.
        var far = NackResponder(rtt: .milliseconds(500))
        #expect(far.respond(to: [48, 49], from: history, now: now).map(\.requested) == [49])
    }

    /// Packets before the newest keyframe are of no use to a receiver once it has it: they are
    /// not resent (across the sequence number wrap too); the keyframe's own packets are.
    @Test func packetsBeforeTheNewestKeyframeAreNotResent() {
        var history = RTPHistory<[UInt8]>(capacity: 256)
        let first: UInt16 = 65_530
        for i in 0..<20 { history.store([UInt8(i)], sequenceNumber: first &+ UInt16(i), sentAt: start) }
        var responder = NackResponder(rtt: .milliseconds(50))
        responder.supersededBefore = first &+ 10   // 4: the keyframe starts after the wrap
        let asked = (0..<20).map { first &+ UInt16($0) }
        #expect(responder.respond(to: asked, from: history, now: start).map(\.requested) == Array(asked[10...]))
        #expect(responder.statistics.superseded == 10 && responder.statistics.resent == 10)
    }

    /// A relay forwards a publisher's late repair to a player that had asked for it already;
    /// the player's next NACK, sent before the repair could arrive, reaches the relay less than
    /// the player's RTT after the forward. With `inFlight` (the RTT, when known) it is not
    /// answered with a second copy; once that long has passed it is (the copy was lost).
    @Test func aNACKThatCrossedTheCopyOnItsWayIsNotAnswered() {
        var history = RTPHistory<[UInt8]>(capacity: 64)
        history.store([1], sequenceNumber: 10, sentAt: start)   // a repair, forwarded at `start`
        var responder = NackResponder(rtt: .milliseconds(40))
        responder.inFlight = .milliseconds(40)
        #expect(responder.respond(to: [10], from: history, now: start + .milliseconds(25)).isEmpty)
        #expect(responder.statistics.suppressed == 1 && responder.statistics.resent == 0)
        #expect(responder.respond(to: [10], from: history, now: start + .milliseconds(45)).map(\.requested) == [10])
        // Without a known RTT nothing is held back this way.
        var unknown = NackResponder(rtt: .milliseconds(40))
        #expect(unknown.respond(to: [10], from: history, now: start + .milliseconds(5)).map(\.requested) == [10])
    }

    @Test func rtcpSchedulerIsRandomizedButDeterministic() {
        var a = RTCPScheduler(media: .video, start: start)
        var b = RTCPScheduler(media: .video, start: start)
        #expect(a.nextDeadline() == start + .milliseconds(500))
        var now = start
        var sent: [ContinuousClock.Instant] = []
        while now < start + .seconds(60) {
            if a.poll(now: now) { sent.append(now) }
            _ = b.poll(now: now)
            #expect(a.nextDeadline() == b.nextDeadline())
            now += .milliseconds(10)
        }
        let gaps = zip(sent.dropFirst(), sent).map { ($0 - $1).inSeconds }
        #expect(gaps.allSatisfy { $0 >= 0.5 && $0 < 1.52 })
        #expect(Set(gaps.map { Int($0 * 100) }).count > 5)  // not a fixed period
        let mean = gaps.reduce(0, +) / Double(gaps.count)
        #expect(abs(mean - 1.0) < 0.15)

        var audio = RTCPScheduler(media: .audio, start: start)
        #expect(audio.nextDeadline() == start + .milliseconds(2500))
        let v8 = audio.poll(now: start + .seconds(2))
        #expect(!v8)
        let v9 = audio.poll(now: start + .seconds(3))
        #expect(v9)
        #expect(audio.nextDeadline() >= start + .milliseconds(5500))
    }
}

@Suite struct KeyframeRequestTrackerTests {
    @Test func pliAndNewFIRsAskForKeyframesRateLimited() {
        let start = ContinuousClock.now
        var tracker = KeyframeRequestTracker(ssrc: 10)
        var answers: [Bool] = []
        func feed(_ p: RTCPPacket, _ ms: Int64) { answers.append(tracker.handle(p, now: start + .milliseconds(ms))) }
        feed(.pli(senderSSRC: 1, mediaSSRC: 10), 0)
        feed(.pli(senderSSRC: 1, mediaSSRC: 10), 50)                 // within 100 ms: same keyframe
        feed(.pli(senderSSRC: 1, mediaSSRC: 99), 500)                // another stream
        feed(.fir(FullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: 10, sequenceNumber: 4)])), 1000)
        feed(.fir(FullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: 10, sequenceNumber: 4)])), 2000)  // repeat
        feed(.fir(FullIntraRequest(senderSSRC: 1, entries: [.init(ssrc: 10, sequenceNumber: 5)])), 3000)
        feed(.receiverReport(ReceiverReport(ssrc: 1)), 4000)
        #expect(answers == [true, false, false, true, false, true, false])
        #expect(tracker.plisReceived == 2 && tracker.firsReceived == 3 && tracker.keyframesRequested == 3)
    }

    /// Behind a narrow link a keyframe can wait in the pacer longer than the receiver waits
    /// before asking again; those requests must not start another one.
    @Test func aQueuedKeyframeAnswersRequestsUntilItHasLeft() {
        let start = ContinuousClock.now
        var tracker = KeyframeRequestTracker(ssrc: 10)
        let pli = RTCPPacket.pli(senderSSRC: 1, mediaSSRC: 10)
        func ask(_ ms: Int64) -> Bool { tracker.handle(pli, now: start + .milliseconds(ms)) }
        let first = ask(0)
        tracker.keyframeQueued(leavingBy: start + .milliseconds(520))    // 500 ms of queue ahead of it
        // Past the throttle but still queued; then on its way; then it should have been there.
        let later = [ask(400), ask(800), ask(830)]
        #expect(first && later == [false, false, true])
        #expect(tracker.keyframesRequested == 2)
    }

    /// A request known lost (sent to a port the peer left) holds the next one back no longer.
    @Test func aLostRequestDoesNotThrottleTheNext() {
        let start = ContinuousClock.now
        var tracker = KeyframeRequestTracker(ssrc: 10)
        let pli = RTCPPacket.pli(senderSSRC: 1, mediaSSRC: 10)
        func ask(_ ms: Int64) -> Bool { tracker.handle(pli, now: start + .milliseconds(ms)) }
        let asked = [ask(0), ask(100)]
        tracker.lastRequestLost()
        #expect(tracker.allows(now: start + .milliseconds(100)))
        let after = [ask(100), ask(200)]
        #expect(asked == [true, false] && after == [true, false])
    }
}
