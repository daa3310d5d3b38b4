import RTP
import Media
import Synchronization

/// W3C `RTCRtpReceiver`. Exposes the RTP that arrives for its m-line.
public final class RtpReceiver: @unchecked Sendable {
    // @unchecked: callbacks are set before media flows and called on the loop thread.
    public let kind: MediaKind
    /// The remote track decoded frames arrive on (W3C `receiver.track`), by kind.
    public let videoTrack: VideoTrack?
    public let audioTrack: AudioTrack?
    private let counters = Mutex(RtpStreamCounters())
    private let ssrcs = Mutex<Set<UInt32>>([])
    /// Every RTP packet received for this m-line, after SRTP. Called on the loop thread.
    public var onRTP: (@Sendable (RTPPacket) -> Void)?
    /// RTCP about the remote's stream (sender reports, BYE). Called on the loop thread.
    public var onRTCP: (@Sendable (RTCPPacket) -> Void)?

    init(kind: MediaKind) {
        self.kind = kind
        let id = "remote-\(kind.rawValue)-\(UInt32.random(in: 0...UInt32.max))"
        videoTrack = kind == .video ? VideoTrack(id: id, source: VideoSource()) : nil
        audioTrack = kind == .audio ? AudioTrack(id: id, source: AudioSource()) : nil
    }

    public var stats: RtpStreamCounters { counters.withLock { $0 } }
    /// The remote SSRCs seen on this m-line.
    public var remoteSSRCs: Set<UInt32> { ssrcs.withLock { $0 } }

    /// The same with the packet's plaintext bytes (after SRTP; after RTX unwrapping), for a
    /// forwarder that rewrites them in place instead of re-serializing `RTPPacket`s.
    public var onRTPBytes: (@Sendable (RTPPacket, [UInt8]) -> Void)?

    func deliver(_ packet: RTPPacket, bytes: [UInt8]) {
        counters.withLock {
            $0.packets += 1
            $0.bytes += bytes.count
            $0.payloadTypes.insert(packet.payloadType)
        }
        ssrcs.withLock { _ = $0.insert(packet.ssrc) }
        onRTP?(packet)
        onRTPBytes?(packet, bytes)
    }
}
