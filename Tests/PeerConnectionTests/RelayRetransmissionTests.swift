import Foundation
import PeerConnection
import Relay
import RTP
import Locks
import SessionSupport
import Testing

/// What a player sees of the relay's forwarding beyond the media itself: a NACK answered on its
/// RTX stream (it offered rtx, the relay's answer takes it) once per round trip however often it
/// repeats, and sender reports that carry the publisher's NTP ↔ RTP mapping.
@Suite struct RelayRetransmissionTests {
    /// A relay, an H.264 publisher whose RTP the test writes, and a player whose RTP is collected.
    struct Bed {
        let sim: Simulation, relay: RelayServer, publisher: PeerConnection, sending: RtpTransceiver, pt: UInt8
        let player: PeerConnection, video: RtpTransceiver, received: Locked<[RTPPacket]>, answer: String

        init(stream: String) async throws {
            sim = Simulation()
            relay = try sim.relay()
            publisher = try sim.peer { $0.mediaPipeline = false }
            sending = try await publisher.addTransceiver(.video, TransceiverInit(direction: .sendonly), codecs: [.h264])
            try await sim.exchange(relay, publisher, endpoint: "whip", stream: stream)
            pt = try #require(sending.negotiatedCodecs.first?.payloadType)
            player = try sim.peer { $0.mediaPipeline = false }
            video = try await player.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: [.h264])
            let received = Locked<[RTPPacket]>([])
            video.receiver.onRTP = { p in received.withLock { $0.append(p) } }
            self.received = received
            answer = try await sim.exchange(relay, player, endpoint: "whep", stream: stream)
        }

        func close() async {
            await player.close()
            await publisher.close()
            await relay.stop()
        }
    }

    @Test func nackIsAnsweredOnRTXOncePerRoundTripAndSenderReportsAreTranslated() async throws {
        let bed = try await Bed(stream: "nack")
        let (sim, relay, publisher, sending, pt, player, video, received, answer) =
            (bed.sim, bed.relay, bed.publisher, bed.sending, bed.pt, bed.player, bed.video, bed.received, bed.answer)
        let reports = Locked<[SenderReport]>([])
        video.receiver.onRTCP = { p in if case .senderReport(let sr) = p { reports.withLock { $0.append(sr) } } }
        #expect(answer.contains("rtx/90000") && answer.contains("a=ssrc-group:FID"), "the relay's answer takes the player's rtx")

        // 30 packets (payloads numbered), then the publisher's SR for its timestamp 90_000.
        let start: UInt32 = 90_000
        for i in 0..<30 {
            sending.sender.send(payloadType: pt, payload: [0x41, UInt8(i)] + Array(repeating: 7, count: 100),
                                timestamp: start + UInt32(i / 3) * 3000, marker: i % 3 == 2)
        }
        #expect(sim.run { received.value.count >= 30 }, "player got \(received.value.count) of 30")
        let ntp: UInt64 = 0xE000_1000_0000_0000
        publisher.sendRTCP([.senderReport(SenderReport(ssrc: sending.sender.ssrc, ntpTimestamp: ntp, rtpTimestamp: start,
                                                       packetCount: 30, octetCount: 3060))])
        let originals = received.value
        let ssrc = try #require(originals.first?.ssrc)
        let lost = [originals[5].sequenceNumber, originals[6].sequenceNumber]

        // The same NACK three times in a row (a player repeating itself, or a hostile one).
        let nack = RTCPPacket.nack(GenericNACK(senderSSRC: video.sender.ssrc, mediaSSRC: ssrc, lostSequenceNumbers: lost + lost))
        for _ in 0..<3 { player.sendRTCP([nack]) }
        #expect(sim.run { received.value.count >= 32 })
        sim.advance(by: .milliseconds(50))   // nothing more may come: the repeats are suppressed
        let resent = Array(received.value.dropFirst(30))
        #expect(resent.map(\.sequenceNumber) == lost, "resent \(resent.map(\.sequenceNumber)), asked for \(lost)")
        #expect(resent.map(\.payload) == [originals[5].payload, originals[6].payload])
        #expect(resent.allSatisfy { $0.ssrc == ssrc })
        let transport = await player.getStats().ofType("transport").first
        #expect(transport?.int("rtxPacketsReceived") == 2, "they came on the RTX stream")
        let metrics = String(decoding: await sim.request(relay, "GET", "/metrics/").body, as: UTF8.self)
        #expect(metrics.contains("swiftrtc_retransmissions_sent_total 2"))
        #expect(metrics.contains("swiftrtc_retransmissions_suppressed_total 4"), "\(metrics)")

        // About once a second a sender report in the player's timestamps (the first publisher's:
        // offset 0) on the publisher's NTP line: (rtp - 90000) / 90 kHz == ntp - ntp0.
        #expect(sim.run(within: .seconds(3)) { !reports.value.isEmpty }, "no sender report reached the player")
        let sr = try #require(reports.value.first)
        #expect(sr.ssrc == ssrc && sr.packetCount == 30)
        let dt = NTPTime.secondsSince1900(sr.ntpTimestamp) - NTPTime.secondsSince1900(ntp)
        #expect(dt >= 0 && dt < 2)
        #expect(abs(Double(sr.rtpTimestamp &- start) / 90000 - dt) < 0.001)
        await bed.close()
    }

    /// A player back from an outage asks for everything it missed: what came before the
    /// publisher's newest keyframe is not resent (the player decodes from the keyframe on, and
    /// those resends would go ahead of it into the path it just got back). The keyframe starts
    /// at its SPS and PPS (a STAP-A before the IDR's first FU-A, which could start one too):
    /// they are resent (before, the keyframe counted from the FU-A and they were not).
    @Test func packetsBeforeTheNewestKeyframeAreNotResentToAPlayer() async throws {
        let bed = try await Bed(stream: "superseded")
        let (sim, sending, pt, player, video, received) = (bed.sim, bed.sending, bed.pt, bed.player, bed.video, bed.received)

        // Ten delta frames, SPS and PPS in a STAP-A and an IDR (NAL type 5) in two FU-A packets, four delta frames.
        for i in 0..<10 { sending.sender.send(payloadType: pt, payload: [0x41, UInt8(i)], timestamp: UInt32(i) * 3000, marker: true) }
        sending.sender.send(payloadType: pt, payload: [0x78, 0, 2, 0x67, 0x42, 0, 2, 0x68, 0xce], timestamp: 30_000, marker: false)
        sending.sender.send(payloadType: pt, payload: [0x7C, 0x85, 10], timestamp: 30_000, marker: false)
        sending.sender.send(payloadType: pt, payload: [0x7C, 0x45, 11], timestamp: 30_000, marker: true)
        for i in 12..<16 { sending.sender.send(payloadType: pt, payload: [0x41, UInt8(i)], timestamp: UInt32(i - 1) * 3000, marker: true) }
        #expect(sim.run { received.value.count >= 17 }, "player got \(received.value.count) of 17")
        let originals = received.value
        let ssrc = try #require(originals.first?.ssrc)

        let asked = originals.map(\.sequenceNumber)
        player.sendRTCP([.nack(GenericNACK(senderSSRC: video.sender.ssrc, mediaSSRC: ssrc, lostSequenceNumbers: asked))])
        #expect(sim.run { received.value.count >= 24 })
        sim.advance(by: .milliseconds(50))
        let resent = Array(received.value.dropFirst(17))
        #expect(resent.map(\.sequenceNumber) == Array(asked[10...]), "resent \(resent.map(\.sequenceNumber)) of \(asked)")
        await bed.close()
    }
}
