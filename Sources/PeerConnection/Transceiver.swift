import RTP
import AudioProcessing
import Media
import RTPMedia
import Transport
import Locks

/// W3C `RTCRtpTransceiverInit`.
public struct TransceiverInit: Sendable {
    public var direction: TransceiverDirection
    public var streamIds: [String]
    /// The sender's encodings; more than one (each with a `rid`, video only) is simulcast
    /// (RFC 8853): one RTP stream, scaler and encoder per layer. Empty: one default encoding.
    public var sendEncodings: [RtpEncodingParameters]
    public init(direction: TransceiverDirection = .sendrecv, streamIds: [String] = [],
                sendEncodings: [RtpEncodingParameters] = []) {
        self.direction = direction
        self.streamIds = streamIds
        self.sendEncodings = sendEncodings
    }
}

/// Counters a sender or receiver keeps; read from any thread.
public struct RtpStreamCounters: Sendable, Equatable {
    public var packets: Int = 0
    public var bytes: Int = 0
    public var payloadTypes: Set<UInt8> = []
    public var dropped: Int = 0
}

/// W3C `RTCRtpTransceiver`: one m-line's worth of sending and receiving.
public final class RtpTransceiver: @unchecked Sendable {
    // @unchecked: mutable fields are written on the owning PeerConnection's loop thread only;
    // the few read from other threads (mid, currentDirection, codecs) go through `shared`.
    public let kind: MediaKind
    public let sender: RtpSender
    public let receiver: RtpReceiver
    var mLineIndex: Int?
    /// Made by `addTrack` (not `addTransceiver`): a remote offer's new m-line of this kind may take
    /// it over while it has no mid (JSEP §5.10).
    var createdByAddTrack = false
    /// Negotiated rtx payload type → the payload type it repairs (loop thread).
    var rtxAssociations: [UInt8: UInt8] = [:]
    /// The peer's RTX SSRC → the SSRC it repairs, from its `a=ssrc-group:FID` (loop thread).
    var rtxRepairs: [UInt32: UInt32] = [:]
    /// Negotiated payload types that take generic NACK (loop thread; read per packet).
    var nackPayloadTypes: Set<UInt8> = []
    /// Simulcast we receive: the ids of the rtp-stream-id extensions (RFC 8852), and each
    /// rid's media SSRC as its packets named it (loop thread).
    var ridExtensionID: UInt8?
    var repairedRIDExtensionID: UInt8?
    var ssrcByRID: [String: UInt32] = [:]
    private let shared: Locked<Shared>

    struct Shared {
        var mid: String?
        var current: TransceiverDirection?
        var codecs: [RtpCodecParameters] = []
        var headerExtensions: [RtpHeaderExtensionParameters] = []
        var direction: TransceiverDirection
        var preferences: [RtpCodecCapability]
        var stopped = false
        var receiveRIDs: [String] = []
    }

    /// Set by the PeerConnection: a change the next offer must carry (any thread).
    var onNegotiationChange: (@Sendable () -> Void)?

    init(kind: MediaKind, init options: TransceiverInit, codecs: [RtpCodecCapability], ssrc: UInt32, cname: String, loop: EventLoop) {
        self.kind = kind
        self.shared = Locked(Shared(direction: options.direction, preferences: codecs))
        let encodings = options.sendEncodings.isEmpty ? [RtpEncodingParameters()] : options.sendEncodings
        let parameters = RtpSendParameters(encodings: encodings)
        let rtx = { kind == .video ? UInt32.random(in: 1...UInt32.max) : nil }
        if kind == .video, encodings.count > 1 {
            // The largest layer is the transceiver's sender: it goes alone if simulcast is refused.
            let main = encodings.indices.min { (encodings[$0].scaleResolutionDownBy ?? 1, $0) < (encodings[$1].scaleResolutionDownBy ?? 1, $1) }!
            var ssrcs: Set<UInt32> = [ssrc]
            let others = encodings.indices.filter { $0 != main }.map { i in
                var layerSSRC = UInt32.random(in: 1...UInt32.max)
                while !ssrcs.insert(layerSSRC).inserted { layerSSRC = UInt32.random(in: 1...UInt32.max) }
                return RtpSender(kind: kind, ssrc: layerSSRC, cname: cname, streamIds: options.streamIds, loop: loop,
                                 rtxSSRC: rtx(), rid: encodings[i].rid, encodingIndex: i)
            }
            self.sender = RtpSender(kind: kind, ssrc: ssrc, cname: cname, streamIds: options.streamIds, loop: loop,
                                    rtxSSRC: rtx(), rid: encodings[main].rid, encodingIndex: main, otherLayers: others,
                                    parameters: parameters)
        } else {
            self.sender = RtpSender(kind: kind, ssrc: ssrc, cname: cname, streamIds: options.streamIds, loop: loop,
                                    rtxSSRC: rtx(), parameters: parameters)
        }
        self.receiver = RtpReceiver(kind: kind)
    }

    /// The rids of the simulcast the peer sends on this m-line, in its `a=simulcast` order
    /// (empty: none; see `Configuration.receiveSimulcast`).
    public internal(set) var receiveRIDs: [String] {
        get { shared.withLock { $0.receiveRIDs } }
        set { shared.withLock { $0.receiveRIDs = newValue } }
    }

    /// The media id, known once a description is applied.
    public internal(set) var mid: String? {
        get { shared.withLock { $0.mid } }
        set { shared.withLock { $0.mid = newValue } }
    }

    /// The negotiated direction (nil before negotiation, like the W3C attribute).
    public internal(set) var currentDirection: TransceiverDirection? {
        get { shared.withLock { $0.current } }
        set { shared.withLock { $0.current = newValue } }
    }

    /// The codecs negotiated for this m-line, in preference order.
    public internal(set) var negotiatedCodecs: [RtpCodecParameters] {
        get { shared.withLock { $0.codecs } }
        set { shared.withLock { $0.codecs = newValue } }
    }

    /// The RTP header extensions negotiated for this m-line, with their ids (W3C
    /// `getParameters().headerExtensions`): mid, and for video urn:3gpp:video-orientation when
    /// both sides use it.
    public internal(set) var negotiatedHeaderExtensions: [RtpHeaderExtensionParameters] {
        get { shared.withLock { $0.headerExtensions } }
        set { shared.withLock { $0.headerExtensions = newValue } }
    }

    /// The direction we want (W3C `direction`); takes effect at the next offer/answer.
    public var direction: TransceiverDirection {
        get { shared.withLock { $0.direction } }
        set {
            let changed = shared.withLock { s in
                defer { s.direction = newValue }
                return s.direction != newValue
            }
            if changed { onNegotiationChange?() }
        }
    }

    /// W3C `stopped`/`stop()`: the m-line is rejected (port 0) at the next negotiation; final.
    public var isStopped: Bool { shared.withLock { $0.stopped } }

    public func stop() {
        let changed = shared.withLock { s in
            defer { s.stopped = true; s.direction = .inactive }
            return !s.stopped
        }
        if changed { onNegotiationChange?() }
    }

    /// Marks the transceiver stopped without asking for a negotiation (the peer rejected it).
    func markStopped() {
        shared.withLock { $0.stopped = true; $0.direction = .inactive }
    }

    /// The codecs the next offer/answer may use, in preference order.
    public var codecCapabilities: [RtpCodecCapability] { shared.withLock { $0.preferences } }

    /// W3C `setCodecPreferences`: restricts and orders what the next offer/answer uses.
    public func setCodecPreferences(_ codecs: [RtpCodecCapability]) {
        shared.withLock { $0.preferences = codecs }
    }
}

