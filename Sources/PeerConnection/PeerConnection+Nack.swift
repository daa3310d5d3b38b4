import RTP
import RTPMedia

/// NACKs for video that arrives without a jitter buffer of ours (a relay's publishers, the
/// echo server): forwarded packets lost on the way in are asked for again, so every receiver
/// behind us gets them too. With a media pipeline the jitter buffer does this itself.
/// Loop thread.
struct PassThroughNacks {
    var generators: [UInt32: NackGenerator] = [:]
    var timer: Int?
    var rtt: Duration = .milliseconds(100)
    var nacksSent = 0
}

extension PeerConnection {
    /// Records a forwarded video packet's sequence number and sends what is due.
    func trackForNack(_ packet: RTPPacket, on t: RtpTransceiver, now: ContinuousClock.Instant) {
        guard t.kind == .video, t.nackPayloadTypes.contains(packet.payloadType),
              t.mid.flatMap({ media.videoReceive[$0] }) == nil else { return }
        if passThroughNacks.generators[packet.ssrc] == nil {
            guard passThroughNacks.generators.count < 8 else { return }   // a hostile peer's SSRCs cost nothing more
            var configuration = NackGenerator.Configuration()
            configuration.delay = reorderTolerance
            passThroughNacks.generators[packet.ssrc] = NackGenerator(configuration: configuration, rtt: passThroughNacks.rtt)
        }
        let missing = passThroughNacks.generators[packet.ssrc]?.missingCount ?? 0
        passThroughNacks.generators[packet.ssrc]?.received(packet.sequenceNumber, at: now)
        // Only a new gap needs a look now (it is asked for after the reorder tolerance); the
        // timer runs the rest, so a packet that opens none costs nothing more.
        if (passThroughNacks.generators[packet.ssrc]?.missingCount ?? 0) > missing {
            sendDueNacks(now: now)
        }
    }

    private func sendDueNacks(now: ContinuousClock.Instant) {
        guard let transport else { return }
        var packets: [RTCPPacket] = []
        let feedbackSSRC = transceiverList.first?.sender.ssrc ?? 0
        let rtt = passThroughNacks.rtt
        for ssrc in passThroughNacks.generators.keys.sorted() {
            passThroughNacks.generators[ssrc]?.rtt = rtt
            guard let lost = passThroughNacks.generators[ssrc]?.poll(at: now), !lost.isEmpty else { continue }
            packets.append(.nack(GenericNACK(senderSSRC: feedbackSSRC, mediaSSRC: ssrc, lostSequenceNumbers: lost)))
        }
        if !packets.isEmpty {
            passThroughNacks.nacksSent += packets.count
            transport.sendRTCP(RTCPPacket.serializeCompound(packets))
        }
        if let id = passThroughNacks.timer { loop.cancelTimer(id) }
        passThroughNacks.timer = nil
        let next = passThroughNacks.generators.values.compactMap { $0.nextDeadline() }.min()
        if let next {
            passThroughNacks.timer = loop.schedule(at: next) { [weak self] in
                guard let self, !self.closed else { return }
                self.passThroughNacks.timer = nil
                // The ICE checks' RTT: a relay sends no sender reports to learn one from.
                if let rtt = self.transport?.ice.stats.selectedPairRTT { self.passThroughNacks.rtt = rtt }
                self.sendDueNacks(now: .now)
            }
        }
    }
}
