import RTP
import RTPMedia

/// NACKs for video that arrives without a jitter buffer of ours (a relay's publishers, the
/// echo endpoint): the `NackRequester` stage, driven on the loop by one timer. With a media
/// pipeline the jitter buffer does this itself.
struct PassThroughNacks {
    var requester: NackRequester?
    var timer: Int?
}

extension PeerConnection {
    /// Records a forwarded video packet's sequence number; a new gap is asked for once the
    /// reorder tolerance has passed (the timer), so a packet that opens none costs nothing more.
    func trackForNack(_ packet: RTPPacket, on t: RtpTransceiver, now: ContinuousClock.Instant) {
        guard t.kind == .video, t.nackPayloadTypes.contains(packet.payloadType),
              t.mid.flatMap({ media.videoReceive[$0] }) == nil else { return }
        if passThroughNacks.requester == nil {
            var configuration = NackGenerator.Configuration()
            configuration.delay = reorderTolerance
            passThroughNacks.requester = NackRequester(senderSSRC: transceiverList.first?.sender.ssrc ?? 0, configuration: configuration)
        }
        if passThroughNacks.requester?.received(ssrc: packet.ssrc, sequenceNumber: packet.sequenceNumber, at: now) == true {
            sendDueNacks(now: now)
        }
    }

    private func sendDueNacks(now: ContinuousClock.Instant) {
        guard let transport, var requester = passThroughNacks.requester else { return }
        // A relay sends no sender reports to learn an RTT from.
        if let rtt = transport.nackRTT(turnaround: requester.turnaround) { requester.rtt = rtt }
        let nacks = requester.poll(now: now)
        passThroughNacks.requester = requester
        if !nacks.isEmpty { transport.sendRTCP(RTCPPacket.serializeCompound(nacks.map { .nack($0) })) }
        if let id = passThroughNacks.timer { loop.cancelTimer(id) }
        passThroughNacks.timer = nil
        if let next = requester.nextDeadline() {
            passThroughNacks.timer = loop.schedule(at: next) { [weak self] in
                guard let self, !self.closed else { return }
                self.passThroughNacks.timer = nil
                self.sendDueNacks(now: self.loop.now)
            }
        }
    }
}
