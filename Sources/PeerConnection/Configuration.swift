import BandwidthEstimation
import AudioProcessing
import DTLS
import SRTP
import STUN
import Transport

extension PeerConnection {
    /// W3C `RTCConfiguration`, plus what a server-side endpoint needs.
    public struct Configuration: Sendable {
        /// `stun:`, `turn:` URLs (host names resolved when the PeerConnection is made).
        public var iceServers: [IceServer] = []
        /// `relay`: only TURN relay candidates are gathered and used.
        public var iceTransportPolicy: IceTransportPolicy = .all
        /// Only max-bundle is implemented: every m-line shares one transport.
        public var bundlePolicy: BundlePolicy = .maxBundle
        /// Act as an ICE-lite endpoint (servers: the echo endpoint, the relay).
        public var iceLite = false
        /// DTLS role we take when answering an actpass offer: `.client` answers `a=setup:active`
        /// like browsers; servers answer `passive` like SRS.
        public var answererDTLSRole: DTLSRole = .client
        public var certificate: DTLSCertificate?
        /// Local addresses to gather on; nil means every up interface (loopback included).
        public var interfaceAddresses: [SocketAddress]?
        public var srtpBackend: SRTPBackend = .openssl
        /// Codecs for transceivers that a remote offer creates.
        public var audioCodecs: [RtpCodecCapability] = RtpCodecCapability.defaultAudio
        public var videoCodecs: [RtpCodecCapability] = RtpCodecCapability.defaultVideo
        /// The order of the codecs in an answer: the offerer's (as libwebrtc answers, so a peer
        /// that can only encode its first choice gets it), or ours (`audioCodecs`/`videoCodecs`
        /// order, like `setCodecPreferences` on the answering side), or the offerer's between
        /// codecs and ours among one codec's formats (`CodecOrder.offererCodecsLocalFormats`).
        public var answerCodecOrder: CodecOrder = .offerer
        /// Direction of transceivers that a remote offer creates (W3C: recvonly until a track is added).
        public var remoteTransceiverDirection: TransceiverDirection = .recvonly
        /// Encode tracks and decode what arrives. Pass-through endpoints (echo, relay) turn it off
        /// and only forward RTP.
        public var mediaPipeline = true
        /// Accept a remote offer's simulcast (RFC 8853 `a=simulcast:send`, RFC 8851 rids) on a
        /// video m-line we receive: the answer takes its rids and the rtp-stream-id extensions,
        /// and every layer's packets reach the receiver's `onRTPBytes` (`RtpReceiver.rid(ofSSRC:)`
        /// tells them apart). For forwarders (the relay's publishers): a decoder takes one stream.
        public var receiveSimulcast = false
        /// Where encoders and decoders run (`.inline` for simulated-time tests).
        public var codecExecution: CodecExecution = .queues
        /// Echo cancellation, gain control, noise suppression for audio senders (nil: off, as for
        /// file and synthetic sources; microphones want `.all`). Per sender: `setAudioProcessing`.
        public var audioProcessing: AudioProcessingOptions? = nil
        /// Offer `a=ice-options:trickle`.
        public var trickle = true
        /// Where the bandwidth estimate starts before the peer's feedback says more (bits/s).
        /// As libwebrtc: 300 kbit/s, the first frames sized for it (`BandwidthAdaptation.start`:
        /// 480x270 from a 720p30 source), then raised as the start probes (3× and 6×) confirm
        /// more. A 1 Mbit/s start with a 720p keyframe overflowed a 500 kbit/s uplink's queue.
        public var startBitrate = BandwidthEstimator.Configuration().startBitrate
        /// Answer transport-wide-cc (the extension, hence the peer's transport-cc feedback and a
        /// send-side estimate per connection). A relay's players turn it off: forwarding cannot
        /// follow a per-player estimate (no layers to pick), so it would only cost CPU.
        public var transportWideCC = true
        /// Answer abs-send-time on video where a peer offers it without transport-wide-cc:
        /// forwarded packets (`RtpSender.forward`, the relay's) then carry the time they leave,
        /// which a receiver that estimates only from it needs before it sends REMB (aiortc).
        /// Off by default: our own senders do not stamp it.
        public var absSendTime = false
        /// Whether the host's interfaces are watched after the first gathering (the Google SDK's
        /// `continualGatheringPolicy`): an address that appears becomes a new host candidate
        /// (trickled, with srflx/relay ones where servers are configured), one that goes away is
        /// withdrawn with its pairs, and an ICE restart is asked for when the selected pair used
        /// it. Clients gather continually; ICE-lite endpoints (servers), connections given fixed
        /// `interfaceAddresses` and simulated loops without an injected monitor never watch.
        public var continualGatheringPolicy: ContinualGatheringPolicy = .gatherContinually
        /// ICE `disconnected` this long: `restartIce()` is called (`negotiationNeeded` follows; the
        /// signaling carries the restart). Once per disconnection; nil: never.
        public var iceRestartAfter: Duration? = .seconds(3)
        /// Seeds the connection's timing randomness (RTCP report intervals, ICE consent jitter):
        /// the same seed, the same schedule. Simulations set it so that a run replays; nil draws
        /// from the system. Identifiers and keys (SSRCs, credentials, DTLS) stay random.
        public var timingSeed: UInt64?
        public init() {}
    }
}

/// The Google SDK's `RTCContinualGatheringPolicy`.
public enum ContinualGatheringPolicy: String, Sendable, CaseIterable {
    /// Gather once, when the first local description is set.
    case gatherOnce
    /// Gather, then keep watching the interfaces (see `Configuration.continualGatheringPolicy`).
    case gatherContinually
}

/// Makes the datagram path for a connection on its loop thread; `ufrag` is the local ICE ufrag
/// (a shared server socket routes by it).
public typealias PacketIOFactory = @Sendable (_ loop: EventLoop, _ ufrag: String) throws -> PacketIO

func defaultPacketIO(addresses: [SocketAddress]?) -> PacketIOFactory {
    { loop, _ in
        let bases = addresses ?? localInterfaceAddresses()
        return try SocketSet(loop: loop, addresses: bases.map { SocketAddress(ip: $0.ip, port: 0) })
    }
}
