import Glibc
import RTP
import SRTP
import STUN
import Synchronization
import Transport

/// Bumped whenever something a forwarding snapshot (`RtpSender.forwardingTarget`) was made
/// from may have changed: a transport's keys, selected pair, TURN allocations or closing, a
/// sender's mid, extension ids or transport. A forwarder remakes its snapshots when the value
/// it made them at is no longer current (one load per packet instead of touching every sender).
public enum ForwardingEpoch {
    private static let counter = Atomic<UInt64>(0)
    public static var current: UInt64 { counter.load(ordering: .acquiring) }
    public static func bump() { counter.wrappingAdd(1, ordering: .releasing) }
}

/// What forwarding to one sender needs, copied out of the sender and its transport so that a
/// fan-out loop reads one flat record per destination (plus the SRTP context it must use):
/// the SSRC, the mid element, the video-orientation id, the SRTP session, the shared socket
/// and the destination as a ready-made sockaddr. Trivial (no reference counting when copied):
/// the objects it points at are kept alive by the `owners` `forwardingTarget` returned with it.
public struct RtpForwardingTarget {
    public let ssrc: UInt32
    let srtp: Unmanaged<SRTPSession>
    let socket: Unmanaged<UDPSocket>
    /// 0: no mid element.
    var midID: UInt8 = 0
    var midLength: UInt8 = 0
    /// 0: the video-orientation element is not forwarded.
    var orientationID: UInt8 = 0
    var mid: (UInt64, UInt64) = (0, 0)
    var nameLength: UInt32 = 0
    var name = sockaddr_in6()

    /// What `send` touches beyond the batch, for a fan-out loop that prefetches the next
    /// target while it sends to this one: the SRTP session, its engine and cipher context.
    public let workingSet: (session: UnsafeRawPointer, engine: UnsafeRawPointer?, cipher: UnsafeRawPointer?)

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
    public enum Outcome: Equatable {
        /// Queued on the batch; the plaintext length (what the sender's statistics count).
        case sent(Int)
        /// Not sent: too large for a slot, or SRTP refused it.
        case tooLarge, srtpFailed
    }

    /// `RtpSender.forward(_:sequenceNumber:…into:)` for a snapshot (not a retransmission): the
    /// same bytes written into the batch's next slot, protected there and queued — without
    /// touching the sender or its transport. Counting is the caller's (`RtpSender.noteForwarded`).
    @inline(__always)
    public func send(_ source: RTPHeaderView, sequenceNumber: UInt16, timestamp: UInt32, payloadType: UInt8,
                     videoOrientationID: UInt8?, into batch: UDPSendBatch) -> Outcome {
        let patch = RTPHeaderPatch(ssrc: ssrc, sequenceNumber: sequenceNumber, timestamp: timestamp, payloadType: payloadType,
                                   midID: midID == 0 ? nil : midID, orientationSourceID: videoOrientationID,
                                   orientationID: orientationID == 0 ? nil : orientationID)
        let slot = batch.slot()
        var midCopy = mid
        let written = withUnsafeBytes(of: &midCopy) { m in
            source.write(patch, mid: UnsafeRawBufferPointer(rebasing: m[0..<Int(midLength)]),
                         into: UnsafeMutableRawBufferPointer(rebasing: slot[0..<(slot.count - 64)]))
        }
        guard let written else { return .tooLarge }
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
