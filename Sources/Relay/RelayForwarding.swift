import BandwidthEstimation
import Glibc
import PeerConnection
import RTP
import RTPMedia
import SRTP
import STUN
import Transport

/// The relay's forwarding of a publisher's packets through a player's `RtpSender`: written in
/// place into a `UDPSendBatch` slot from a validated view of the publisher's packet — our SSRC,
/// the player's continuous sequence number and timestamp, its payload type and extensions —
/// protected there and sent with the batch's sendmmsg. Relay-only: built on the sender's and
/// transport's `package` members, not PeerConnection's public API.
extension RtpSender {
    /// The forwarding fast path (a relay's fan-out; loop thread): writes `source` — a validated
    /// view of another connection's plaintext packet — as this peer receives it straight into
    /// the next slot of `batch` (our SSRC, `sequenceNumber`, `timestamp`, `payloadType`; our mid,
    /// the video-orientation element under our id, a transport-wide sequence number), protects
    /// it there and queues it for the batch's sendmmsg. The same bytes as `forward(_:)` would
    /// send, without an `RTPPacket` or any allocation. `retransmission`: a NACKed packet, sent
    /// on our RTX stream (RFC 4588) when the peer negotiated rtx for `payloadType`, else as is.
    /// False when it did not go out (no path or keys yet, packet too large).
    @discardableResult
    func forward(_ source: RTPHeaderView, sequenceNumber: UInt16, timestamp: UInt32, payloadType: UInt8,
                 videoOrientationID: UInt8?, payloadEdit: RTPHeaderPatch.PayloadEdit? = nil, retransmission: Bool = false,
                 into batch: UDPSendBatch, now: ContinuousClock.Instant) -> Bool {
        guard let transport else {
            countDropped()
            return false
        }
        var patch = forwardingPatch(sequenceNumber: sequenceNumber, timestamp: timestamp, payloadType: payloadType,
                                    videoOrientationID: videoOrientationID, payloadEdit: payloadEdit)
        patch.absSendTimeID = absSendTimeExtensionID
        let osn = retransmission ? nack.rtx?.retransmission(&patch) : nil
        let slot = batch.slot()
        guard let written = source.write(patch, rtxOriginalSequence: osn,
                                         into: UnsafeMutableRawBufferPointer(rebasing: slot[0..<(slot.count - 64)])),
              transport.queueForwarded(slot: slot, length: written.length, transportCCOffset: written.transportCCOffset,
                                       absSendTimeOffset: written.absSendTimeOffset, batch: batch, now: now) else {
            countDropped()
            return false
        }
        count(written.length, payloadType: patch.payloadType)
        return true
    }

    /// What `forward(_:sequenceNumber:…into:)` writes over the source's header (abs-send-time aside).
    private func forwardingPatch(sequenceNumber: UInt16, timestamp: UInt32, payloadType: UInt8, videoOrientationID: UInt8?,
                                 payloadEdit: RTPHeaderPatch.PayloadEdit?) -> RTPHeaderPatch {
        var patch = RTPHeaderPatch(ssrc: ssrc, sequenceNumber: sequenceNumber, timestamp: timestamp, payloadType: payloadType,
                                   midID: mid == nil ? nil : midExtensionID, mid: midBytes,
                                   orientationSourceID: videoOrientationID, orientationID: videoOrientationExtensionID,
                                   transportCCID: transportCCExtensionID)
        patch.payloadEdit = payloadEdit
        return patch
    }

    /// `source` as `forward(_:…retransmission: true…)` would send it, in a new array with a
    /// transport-wide placeholder, for the pacer (a probe's payload padding: `CongestionController`
    /// stamps and sends it). Nil without rtx (a copy on the media stream would be a duplicate the
    /// receiver counts twice) or transport-cc. No abs-send-time element: the pacer stamps none.
    func paddingCopy(of source: RTPHeaderView, sequenceNumber: UInt16, timestamp: UInt32, payloadType: UInt8,
                     videoOrientationID: UInt8?, payloadEdit: RTPHeaderPatch.PayloadEdit?) -> (bytes: [UInt8], transportCCID: UInt8)? {
        guard let transportCC = transportCCExtensionID else { return nil }
        var patch = forwardingPatch(sequenceNumber: sequenceNumber, timestamp: timestamp, payloadType: payloadType,
                                    videoOrientationID: videoOrientationID, payloadEdit: payloadEdit)
        guard let osn = nack.rtx?.retransmission(&patch) else { return nil }
        return source.rewritten(patch, rtxOriginalSequence: osn).map { ($0.bytes, transportCC) }
    }

    /// A snapshot of what `forward(_:sequenceNumber:…into:)` reads of this sender and its
    /// transport, for a forwarder that sends to many senders per packet from a flat array
    /// (`RtpForwardingTarget.send`): nothing here is touched per packet then. Valid until
    /// `ForwardingEpoch.current` changes; `owners` must be kept alive as long as it is used.
    /// Nil when this sender's packets must take `forward(_:…into:)` (no keys or path yet,
    /// TURN, a mid over 16 bytes). Loop thread.
    func forwardingTarget() -> (target: RtpForwardingTarget, owners: [AnyObject])? {
        guard let transport, let path = transport.forwardingPath(), midBytes.count <= 16 else { return nil }
        var target = RtpForwardingTarget(ssrc: ssrc, srtp: Unmanaged.passUnretained(path.srtp),
                                         socket: Unmanaged.passUnretained(path.socket))
        target.absSendTimeID = absSendTimeExtensionID ?? 0
        if let id = transportCCExtensionID {
            target.transportCCID = id
            target.congestion = Unmanaged.passUnretained(transport.congestion)
            target.overhead = UInt16(path.srtp.profile.rtpOverhead)
        }
        if mid != nil, let id = midExtensionID {
            target.midID = id
            target.midLength = UInt8(midBytes.count)
            withUnsafeMutableBytes(of: &target.mid) { $0.copyBytes(from: midBytes) }
        }
        target.orientationID = videoOrientationExtensionID ?? 0
        guard target.setName(path.remote) else { return nil }
        return (target, [path.srtp, path.socket, self, transport.congestion])
    }

    /// Packets sent from a forwarding snapshot, counted in bulk: as `forward(_:…into:)`
    /// counts each (packets, plaintext bytes, payload type; the transport's RTP sent).
    func noteForwarded(packets: Int, bytes: Int, payloadType: UInt8) {
        guard packets > 0 else { return }
        count(packets: packets, bytes: bytes, payloadType: payloadType)
        transport?.noteForwarded(packets)
    }

    /// A packet a forwarding snapshot could not send: dropped, as `forward(_:…into:)` counts it.
    func noteForwardingFailure(srtp: Bool) {
        countDropped()
        if srtp { transport?.noteForwardingSRTPError() }
    }
}

/// What forwarding to one sender needs, copied out of the sender and its transport so that a
/// fan-out loop reads one flat record per destination (plus the SRTP context it must use):
/// the SSRC, the mid element, the video-orientation id, the SRTP session, the shared socket
/// and the destination as a ready-made sockaddr. Trivial (no reference counting when copied):
/// the objects it points at are kept alive by the `owners` `forwardingTarget` returned with it.
struct RtpForwardingTarget {
    let ssrc: UInt32
    let srtp: Unmanaged<SRTPSession>
    let socket: Unmanaged<UDPSocket>
    /// 0: no mid element.
    var midID: UInt8 = 0
    var midLength: UInt8 = 0
    /// 0: the video-orientation element is not forwarded.
    var orientationID: UInt8 = 0
    var mid: (UInt64, UInt64) = (0, 0)
    /// 0: no transport-wide sequence number to stamp.
    var transportCCID: UInt8 = 0
    /// 0: no abs-send-time to stamp.
    var absSendTimeID: UInt8 = 0
    /// SRTP's bytes on top of the plaintext (the estimate counts what the wire carries).
    var overhead: UInt16 = 0
    /// What numbers the transport's packets and estimates from its feedback (transport-cc).
    var congestion: Unmanaged<CongestionController>?
    var nameLength: UInt32 = 0
    var name = sockaddr_in6()

    /// What `send` touches beyond the batch, for a fan-out loop that prefetches the next
    /// target while it sends to this one: the SRTP session, its engine and cipher context.
    let workingSet: (session: UnsafeRawPointer, engine: UnsafeRawPointer?, cipher: UnsafeRawPointer?)

    init(ssrc: UInt32, srtp: Unmanaged<SRTPSession>, socket: Unmanaged<UDPSocket>) {
        self.ssrc = ssrc
        self.srtp = srtp
        self.socket = socket
        let protect = srtp._withUnsafeGuaranteedRef { $0.protectWorkingSet }
        workingSet = (UnsafeRawPointer(srtp.toOpaque()), protect?.engine, protect?.cipher)
    }

    mutating func setName(_ remote: SocketAddress) -> Bool {
        remote.withSockAddr { address, size in
            guard Int(size) <= MemoryLayout<sockaddr_in6>.size else { return false }
            withUnsafeMutableBytes(of: &name) { $0.baseAddress!.copyMemory(from: address, byteCount: Int(size)) }
            nameLength = UInt32(size)
            return true
        }
    }

    /// The outcome of `send`.
    enum Outcome: Equatable {
        /// Queued on the batch; the plaintext length (what the sender's statistics count).
        case sent(Int)
        /// Not sent: too large for a slot, or SRTP refused it.
        case tooLarge, srtpFailed
    }

    /// `RtpSender.forward(_:sequenceNumber:…into:)` for a snapshot (not a retransmission): the
    /// same bytes written into the batch's next slot, protected there and queued — without
    /// touching the sender or its transport. Counting is the caller's (`RtpSender.noteForwarded`).
    @inline(__always)
    func send(_ source: RTPHeaderView, sequenceNumber: UInt16, timestamp: UInt32, payloadType: UInt8,
              videoOrientationID: UInt8?, payloadEdit: RTPHeaderPatch.PayloadEdit? = nil, into batch: UDPSendBatch,
              now: ContinuousClock.Instant) -> Outcome {
        var patch = RTPHeaderPatch(ssrc: ssrc, sequenceNumber: sequenceNumber, timestamp: timestamp, payloadType: payloadType,
                                   midID: midID == 0 ? nil : midID, orientationSourceID: videoOrientationID,
                                   orientationID: orientationID == 0 ? nil : orientationID,
                                   transportCCID: transportCCID == 0 ? nil : transportCCID)
        patch.absSendTimeID = absSendTimeID == 0 ? nil : absSendTimeID
        patch.payloadEdit = payloadEdit
        let slot = batch.slot()
        var midCopy = mid
        let written = withUnsafeBytes(of: &midCopy) { m in
            source.write(patch, mid: UnsafeRawBufferPointer(rebasing: m[0..<Int(midLength)]),
                         into: UnsafeMutableRawBufferPointer(rebasing: slot[0..<(slot.count - 64)]))
        }
        guard let written else { return .tooLarge }
        if let offset = written.transportCCOffset {
            congestion?._withUnsafeGuaranteedRef { $0.stampForwarded(slot, at: offset, wireSize: written.length + Int(overhead), now: Moment(now)) }
        }
        if let offset = written.absSendTimeOffset { MediaTransport.stampSendTime(slot, at: offset, now: now) }
        let protected: Int
        do {
            protected = try srtp._withUnsafeGuaranteedRef { try $0.protectRTP(in: slot, length: written.length) }
        } catch {
            return .srtpFailed
        }
        var nameCopy = name
        socket._withUnsafeGuaranteedRef { socket in
            withUnsafeBytes(of: &nameCopy) { batch.commit(length: protected, socket: socket, name: $0.baseAddress!, nameLength: nameLength) }
        }
        return .sent(written.length)
    }
}
