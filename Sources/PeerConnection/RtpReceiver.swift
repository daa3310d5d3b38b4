import RTP
import Media
import Locks

/// W3C `RTCRtpReceiver`. Exposes the RTP that arrives for its m-line.
public final class RtpReceiver: @unchecked Sendable {
    // @unchecked: counters and taps sit behind locks (a tap may be set from any thread while
    // packets flow on the loop).
    public let kind: MediaKind
    /// The remote track decoded frames arrive on (W3C `receiver.track`), by kind.
    public let videoTrack: VideoTrack?
    public let audioTrack: AudioTrack?
    private let counters = Locked(RtpStreamCounters())
    private let ssrcs = Locked<Set<UInt32>>([])
    /// Simulcast: each layer's SSRC → its rid, as the packets named them.
    private let rids = Locked<[UInt32: String]>([:])
    private let taps = Locked(Taps())

    struct Taps {
        var onRTP: (@Sendable (RTPPacket) -> Void)?
        var onRTCP: (@Sendable (RTCPPacket) -> Void)?
        var onRTPBytes: (@Sendable (RTPPacket, [UInt8]) -> Void)?
    }
    /// Every RTP packet received for this m-line, after SRTP. Called on the loop thread.
    /// A packet tap, not an event, so a closure rather than `events`/a delegate: it runs per
    /// packet on the hot path (the relay forwards from it), where a stream would add a hop and
    /// a buffer per packet and a delegate a weak load; one owner sets it before media flows.
    public var onRTP: (@Sendable (RTPPacket) -> Void)? {
        get { taps.withLock { $0.onRTP } }
        set { taps.withLock { $0.onRTP = newValue } }
    }
    /// RTCP about the remote's stream (sender reports, BYE). Called on the loop thread; a packet
    /// tap like `onRTP`.
    public var onRTCP: (@Sendable (RTCPPacket) -> Void)? {
        get { taps.withLock { $0.onRTCP } }
        set { taps.withLock { $0.onRTCP = newValue } }
    }

    init(kind: MediaKind) {
        self.kind = kind
        let id = "remote-\(kind.rawValue)-\(UInt32.random(in: 0...UInt32.max))"
        videoTrack = kind == .video ? VideoTrack(id: id, source: VideoSource()) : nil
        audioTrack = kind == .audio ? AudioTrack(id: id, source: AudioSource()) : nil
    }

    public var stats: RtpStreamCounters { counters.withLock { $0 } }
    /// The remote SSRCs seen on this m-line.
    public var remoteSSRCs: Set<UInt32> { ssrcs.withLock { $0 } }

    /// The rid (simulcast layer) a remote SSRC's packets carried; nil: none (yet).
    public func rid(ofSSRC ssrc: UInt32) -> String? { rids.withLock { $0[ssrc] } }

    func noteRID(_ rid: String, ssrc: UInt32) { rids.withLock { $0[ssrc] = rid } }

    /// The same with the packet's plaintext bytes (after SRTP; after RTX unwrapping), for a
    /// forwarder that rewrites them in place instead of re-serializing `RTPPacket`s. A packet
    /// tap like `onRTP`.
    public var onRTPBytes: (@Sendable (RTPPacket, [UInt8]) -> Void)? {
        get { taps.withLock { $0.onRTPBytes } }
        set { taps.withLock { $0.onRTPBytes = newValue } }
    }

    func deliver(_ packet: RTPPacket, bytes: [UInt8]) {
        counters.withLock {
            $0.packets += 1
            $0.bytes += bytes.count
            $0.payloadTypes.insert(packet.payloadType)
        }
        ssrcs.withLock { _ = $0.insert(packet.ssrc) }
        let taps = taps.withLock { $0 }
        taps.onRTP?(packet)
        taps.onRTPBytes?(packet, bytes)
    }
}
