import BandwidthEstimation
import DTLS
import ICE
import RTP
import SDP
import STUN
import RTPMedia
import Transport

/// What the transport delivers, routed to transceivers (loop thread).
extension PeerConnection {
    // MARK: events from the transport (loop thread)

    func handleIce(_ event: ICEEvent) {
        loop.preconditionInLoop()
        switch event {
        case .localCandidate(let c):
            localCandidates.append(c)
            publishLocalDescription()
            let (mid, index) = bundleTag()
            emit(.iceCandidate(IceCandidate(candidate: c.attributeValue, sdpMid: mid, sdpMLineIndex: index)))
        case .localCandidateRemoved(let c):
            localCandidates.removeAll { $0 == c }
            publishLocalDescription()
            let (mid, index) = bundleTag()
            emit(.iceCandidatesRemoved([IceCandidate(candidate: c.attributeValue, sdpMid: mid, sdpMLineIndex: index)]))
        case .gatheringComplete:
            // The description says end-of-candidates before anyone waiting for the event reads it.
            guard snapshot.withLock({ $0.gathering }) != .complete else { break }
            snapshot.withLock { $0.gathering = .complete }
            publishLocalDescription()
            emit(.iceGatheringStateChanged(.complete))
        case .stateChanged(let s):
            let wasDisconnected = iceState == .disconnected
            if !relayFailed { setIce(IceConnectionState(s)) }
            // Back from a disconnection: what was sent into it is lost (and too old to resend),
            // so video goes on from a keyframe rather than waiting for the peer's request,
            // which may itself have been lost (libwebrtc restarts its encoders so on network up).
            if wasDisconnected, [.connected, .completed].contains(iceState) {
                for stream in media.videoSend.values { stream.requestKeyframe() }
            }
            updateConnectionState()
            armDisconnectedRestart()
        case .selectedPairChanged(let local, let remote):
            snapshot.withLock { $0.selectedPair = (local.description, remote.description) }
            updateConnectionState()
            emit(.selectedCandidatePairChanged(local: local.description, remote: remote.description))
        case .roleChanged:
            break
        }
    }

    func route(_ packet: RTPPacket, bytes: [UInt8]) {
        loop.preconditionInLoop()
        let size = bytes.count
        var target = bySSRC[packet.ssrc]
        if target == nil, let id = midExtensionID, let data = packet.extensionData(id: id),
           let mid = String(validating: data, as: UTF8.self), let t = byMid[mid] {
            target = t
            bySSRC[packet.ssrc] = t
        }
        if target == nil {
            // Last resort: the only m-line that negotiated this payload type.
            let candidates = transceiverList.filter { $0.negotiatedCodecs.contains { $0.payloadType == packet.payloadType } }
            if candidates.count == 1 {
                target = candidates[0]
                bySSRC[packet.ssrc] = candidates[0]
            }
        }
        guard let target else {
            unroutedRTP += 1
            return
        }
        if let id = target.ridExtensionID, target.rtxAssociations[packet.payloadType] == nil,
           let data = packet.extensionData(id: id) {
            learnRID(data, ssrc: packet.ssrc, on: target)
        }
        var packet = packet
        var bytes = bytes
        if let apt = target.rtxAssociations[packet.payloadType] {
            guard let original = unwrapRTX(packet, repairing: apt, on: target) else { return }
            (packet, bytes) = original
        }
        target.receiver.deliver(packet, bytes: bytes)
        trackForNack(packet, on: target, now: loop.now)
        if target.kind == .video {
            let abs = target.sender.absSendTimeExtensionID.flatMap { packet.extensionData(id: $0) }
                .flatMap(RTPExtensionCodec.decodeAbsSendTime)
            transport?.congestion.receivedVideo(packet, size: size, absSendTime: abs, now: Moment(loop.arrivalTime))
        }
        if let mid = target.mid {
            let now = loop.now
            let ntp = media.ntp.ntp(at: now)
            media.videoReceive[mid]?.receive(packet, now: now, arrivalNTP: ntp)
            media.audioReceive[mid]?.receive(packet, now: now, arrivalNTP: ntp)
        }
    }

    func route(_ packets: [RTCPPacket]) {
        routeToStreams(packets)
        for packet in packets {
            switch packet {
            case .senderReport(let sr):
                bySSRC[sr.ssrc]?.receiver.onRTCP?(packet)
            case .goodbye(let bye):
                for s in bye.ssrcs { bySSRC[s]?.receiver.onRTCP?(packet) }
            case .receiverReport(let rr):
                for report in rr.reports { sender(ssrc: report.ssrc)?.onRTCP?(packet) }
            case .nack(let n):
                sender(ssrc: n.mediaSSRC)?.onRTCP?(packet)
            case .pli(_, let media):
                sender(ssrc: media)?.onRTCP?(packet)
            case .fir(let f):
                for entry in f.entries { sender(ssrc: entry.ssrc)?.onRTCP?(packet) }
            case .remb, .transportCC:
                for t in transceiverList where t.currentDirection?.sends == true { t.sender.onRTCP?(packet) }
            default:
                break
            }
        }
    }

    /// The original packet an RTX packet carries (nil: padding, or no stream it could repair).
    /// A simulcast layer's packet named its rid (RFC 8852; senders stop once we report on the
    /// SSRC): one of the negotiated rids is remembered for its SSRC.
    private func learnRID(_ data: [UInt8], ssrc: UInt32, on t: RtpTransceiver) {
        guard let rid = String(validating: data, as: UTF8.self), t.ssrcByRID[rid] != ssrc, t.receiveRIDs.contains(rid) else { return }
        t.ssrcByRID[rid] = ssrc
        t.receiver.noteRID(rid, ssrc: ssrc)
    }

    private func unwrapRTX(_ packet: RTPPacket, repairing apt: UInt8, on t: RtpTransceiver) -> (RTPPacket, [UInt8])? {
        var media = t.rtxRepairs[packet.ssrc]
        // Simulcast: the layer it repairs is named by repaired-rtp-stream-id (no ssrc-group);
        // with several layers nothing else can tell.
        if media == nil, let id = t.repairedRIDExtensionID, let data = packet.extensionData(id: id),
           let rid = String(validating: data, as: UTF8.self), let ssrc = t.ssrcByRID[rid] {
            media = ssrc
            if t.rtxRepairs.count < 16 { t.rtxRepairs[packet.ssrc] = ssrc }   // bounded against a peer inventing SSRCs
        }
        if media == nil, t.receiveRIDs.isEmpty {
            media = t.receiver.remoteSSRCs.filter { t.rtxRepairs[$0] == nil && $0 != packet.ssrc }.first
        }
        guard let media, let bytes = try? RTXPayload.unwrap(packet.serialize(), originalSSRC: media, originalPayloadType: apt),
              let original = try? RTPPacket(parsing: bytes) else {
            rtxDropped += 1
            return nil
        }
        rtxReceived += 1
        return (original, bytes)
    }

    func sender(ssrc: UInt32) -> RtpSender? {
        transceiverList.lazy.compactMap { $0.sender.layer(ssrc: ssrc) }.first
    }
}
