import RTP
import AudioProcessing
import Media
import RTPMedia
import Transport
import Synchronization

/// W3C `RTCRtpTransceiverInit`.
public struct TransceiverInit: Sendable {
    public var direction: TransceiverDirection
    public var streamIds: [String]
    public init(direction: TransceiverDirection = .sendrecv, streamIds: [String] = []) {
        self.direction = direction
        self.streamIds = streamIds
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
    private let shared: Mutex<Shared>

    struct Shared {
        var mid: String?
        var current: TransceiverDirection?
        var codecs: [RtpCodecParameters] = []
        var headerExtensions: [RtpHeaderExtensionParameters] = []
        var direction: TransceiverDirection
        var preferences: [RtpCodecCapability]
        var stopped = false
    }

    /// Set by the PeerConnection: a change the next offer must carry (any thread).
    var onNegotiationChange: (@Sendable () -> Void)?

    init(kind: MediaKind, init options: TransceiverInit, codecs: [RtpCodecCapability], ssrc: UInt32, cname: String) {
        self.kind = kind
        self.shared = Mutex(Shared(direction: options.direction, preferences: codecs))
        self.sender = RtpSender(kind: kind, ssrc: ssrc, cname: cname, streamIds: options.streamIds,
                                rtxSSRC: kind == .video ? UInt32.random(in: 1...UInt32.max) : nil)
        self.receiver = RtpReceiver(kind: kind)
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

/// W3C `RTCRtpSender`. Until encoders exist it sends RTP the application builds.
public final class RtpSender: @unchecked Sendable {
    // @unchecked: see RtpTransceiver; `transport` is set on the loop thread before media flows.
    public let kind: MediaKind
    public let ssrc: UInt32
    public let cname: String
    public let streamIds: [String]
    public let trackId: String
    private let counters = Mutex(RtpStreamCounters())
    private let sendParameters = Mutex(RtpSendParameters())
    /// Called (on the caller's thread) after `setParameters` changed something; media streams
    /// apply it to the encoder.
    var onParametersChanged: (@Sendable (RtpSendParameters) -> Void)?
    private let nextSequence = Mutex<UInt16>(UInt16.random(in: 0...UInt16.max))
    // Everything a forwarding snapshot (`forwardingTarget`) copies bumps `ForwardingEpoch` when set.
    weak var transport: MediaTransport? { didSet { ForwardingEpoch.bump() } }
    var midExtensionID: UInt8? { didSet { ForwardingEpoch.bump() } }
    var mid: String? {
        didSet {
            midBytes = mid.map { Array($0.utf8) } ?? []
            ForwardingEpoch.bump()
        }
    }
    /// `mid` as the extension element carries it (made once, not per packet).
    private var midBytes: [UInt8] = []
    /// The fast path's last payload type (loop thread).
    private var lastForwardedPayloadType: UInt8?
    private let orientationID = Mutex<UInt8?>(nil)
    /// The id of urn:3gpp:video-orientation on this m-line (nil: not negotiated). Set on the loop
    /// thread at negotiation, read by the encode queue and when forwarding.
    var videoOrientationExtensionID: UInt8? {
        get { orientationID.withLock { $0 } }
        set {
            orientationID.withLock { $0 = newValue }
            ForwardingEpoch.bump()
        }
    }
    private let transportCCID = Mutex<UInt8?>(nil)
    /// The id of the transport-wide sequence number extension on this m-line (nil: not
    /// negotiated). Packets carry a 2-byte placeholder the transport fills in as they leave,
    /// so the numbers follow the order on the wire (retransmissions and forwards included).
    var transportCCExtensionID: UInt8? {
        get { transportCCID.withLock { $0 } }
        set {
            transportCCID.withLock { $0 = newValue }
            ForwardingEpoch.bump()
        }
    }
    /// RTCP feedback about what this sender sends (NACK, PLI, FIR, REMB, TWCC, receiver reports).
    /// Called on the connection's loop thread.
    public var onRTCP: (@Sendable (RTCPPacket) -> Void)?

    /// The SSRC of our RTX stream (video), used when the peer negotiated rtx.
    public let rtxSSRC: UInt32?
    private let rtx = Mutex<(payloadTypes: [UInt8: UInt8], sequence: UInt16)>(([:], UInt16.random(in: 0...UInt16.max)))
    /// Media payload type → the rtx payload type negotiated for it (empty: resend as is).
    var rtxPayloadTypes: [UInt8: UInt8] {
        get { rtx.withLock { $0.payloadTypes } }
        set { rtx.withLock { $0.payloadTypes = newValue } }
    }

    init(kind: MediaKind, ssrc: UInt32, cname: String, streamIds: [String], rtxSSRC: UInt32? = nil) {
        self.kind = kind
        self.ssrc = ssrc
        self.rtxSSRC = rtxSSRC
        self.cname = cname
        self.streamIds = streamIds
        self.trackId = "\(kind.rawValue)-\(String(ssrc, radix: 16))"
    }

    public var stats: RtpStreamCounters { counters.withLock { $0 } }

    private let tracks = Mutex<(video: VideoTrack?, audio: AudioTrack?)>((nil, nil))
    /// Called when the track changes so the media stream can move its sink. Loop or caller thread.
    var onTrackChanged: (@Sendable () -> Void)?

    /// The video track this sender encodes (nil: raw RTP via `send`).
    public var videoTrack: VideoTrack? { tracks.withLock { $0.video } }
    /// The audio track this sender encodes.
    public var audioTrack: AudioTrack? { tracks.withLock { $0.audio } }

    /// W3C `replaceTrack`: no renegotiation; the encoder adapts to the new track's frames.
    public func replaceTrack(_ track: VideoTrack?) {
        tracks.withLock { $0.video = track }
        onTrackChanged?()
    }

    public func replaceTrack(_ track: AudioTrack?) {
        tracks.withLock { $0.audio = track }
        onTrackChanged?()
    }

    private let processing = Mutex<(set: Bool, options: AudioProcessingOptions?)>((false, nil))
    var onAudioProcessingChanged: (@Sendable (AudioProcessingOptions?) -> Void)?

    /// Echo cancellation, gain control and noise suppression for this audio sender, switchable
    /// while sending (the reference app's googEchoCancellation / googAutoGainControl /
    /// googNoiseSuppression constraints; `AudioProcessingOptions(constraints:)` maps them). nil: off.
    public func setAudioProcessing(_ options: AudioProcessingOptions?) {
        processing.withLock { $0 = (true, options) }
        onAudioProcessingChanged?(options)
    }

    /// The per-sender setting if one was made (else the connection's configuration applies).
    var audioProcessingOverride: AudioProcessingOptions?? {
        processing.withLock { $0.set ? .some($0.options) : .none }
    }

    /// W3C `getParameters()`.
    public var parameters: RtpSendParameters { sendParameters.withLock { $0 } }

    /// W3C `setParameters()`: applied to the encoder at run time (bitrate, frame rate, scale,
    /// active, degradation preference).
    public func setParameters(_ parameters: RtpSendParameters) throws {
        try parameters.validate()
        sendParameters.withLock { $0 = parameters }
        onParametersChanged?(parameters)
    }

    /// Sends one packet: fills in our SSRC, the next sequence number and the mid extension.
    /// Safe from any thread; the packet is protected and sent on the connection's loop.
    public func send(payloadType: UInt8, payload: [UInt8], timestamp: UInt32, marker: Bool = false) {
        let seq = nextSequence.withLock { s -> UInt16 in defer { s &+= 1 }; return s }
        var packet = RTPPacket(marker: marker, payloadType: payloadType, sequenceNumber: seq,
                               timestamp: timestamp, ssrc: ssrc, payload: payload)
        if let id = midExtensionID, let mid { packet.setExtension(id: id, data: Array(mid.utf8)) }
        sendPrepared(packet)
    }

    /// Sends the payloads of one media frame as consecutive packets; `lastPacketExtensions` go
    /// on the frame's last packet only (video orientation, as libwebrtc does); `onSent` runs on
    /// the loop thread for each (history, statistics). Any thread.
    func sendPayloads(_ payloads: [RTPPayload], payloadType: UInt8, timestamp: UInt32,
                      lastPacketExtensions: [RTPHeaderExtension] = [],
                      onSent: @escaping @Sendable (RTPPacket, [UInt8], ContinuousClock.Instant) -> Void) {
        guard let transport else {
            counters.withLock { $0.dropped += payloads.count }
            return
        }
        let first = nextSequence.withLock { s -> UInt16 in defer { s &+= UInt16(truncatingIfNeeded: payloads.count) }; return s }
        let transportCC = transportCCExtensionID
        var packets: [RTPPacket] = []
        packets.reserveCapacity(payloads.count)
        for (i, payload) in payloads.enumerated() {
            var packet = RTPPacket(marker: payload.marker, payloadType: payloadType, sequenceNumber: first &+ UInt16(truncatingIfNeeded: i),
                                   timestamp: timestamp, ssrc: ssrc, payload: payload.bytes)
            if let id = midExtensionID, let mid { packet.setExtension(id: id, data: Array(mid.utf8)) }
            if let transportCC { packet.setExtension(id: transportCC, data: [0, 0]) }
            if i == payloads.count - 1 {
                for e in lastPacketExtensions { packet.setExtension(id: e.id, data: e.data) }
            }
            packets.append(packet)
        }
        transport.loop.execute { [self, packets] in
            let now = ContinuousClock.now
            for packet in packets {
                let bytes = packet.serialize()
                counters.withLock {
                    $0.packets += 1
                    $0.bytes += bytes.count
                    $0.payloadTypes.insert(packet.payloadType)
                }
                transport.sendRTP(bytes, transportCCID: transportCC, kind: kind == .video ? .video : .audio)
                onSent(packet, bytes, now)
            }
        }
    }

    /// Sends a packet as given but with this sender's SSRC (for forwarding: the echo keeps the
    /// original sequence numbers so the far end's NACKs map one to one).
    /// Header extensions are dropped (their ids were negotiated with another peer) and our mid
    /// is set; `payloadType` rewrites the payload type when this peer numbered the codec differently.
    /// `videoOrientationID` is the id the video-orientation element has in `packet` (as its
    /// source negotiated it): the element is kept, under the id this peer negotiated. When this
    /// peer did not negotiate it the element is dropped and the peer shows the frames unrotated
    /// (turning pixels would take a transcode).
    public func forward(_ packet: RTPPacket, payloadType: UInt8? = nil, videoOrientationID: UInt8? = nil) {
        var packet = packet
        packet.ssrc = ssrc
        if let payloadType { packet.payloadType = payloadType }
        let orientation = videoOrientationID.flatMap { packet.extensionData(id: $0) }
        packet.extensions = []
        packet.extensionProfile = nil
        if let id = midExtensionID, let mid { packet.setExtension(id: id, data: Array(mid.utf8)) }
        if let orientation, let id = videoOrientationExtensionID { packet.setExtension(id: id, data: orientation) }
        sendPrepared(packet)
    }

    /// The forwarding fast path (a relay's fan-out; loop thread): writes `source` — a validated
    /// view of another connection's plaintext packet — as this peer receives it straight into
    /// the next slot of `batch` (our SSRC, `sequenceNumber`, `timestamp`, `payloadType`; our mid,
    /// the video-orientation element under our id, a transport-wide sequence number), protects
    /// it there and queues it for the batch's sendmmsg. The same bytes as `forward(_:)` would
    /// send, without an `RTPPacket` or any allocation. `retransmission`: a NACKed packet, sent
    /// on our RTX stream (RFC 4588) when the peer negotiated rtx for `payloadType`, else as is.
    /// False when it did not go out (no path or keys yet, packet too large).
    @discardableResult
    public func forward(_ source: RTPHeaderView, sequenceNumber: UInt16, timestamp: UInt32, payloadType: UInt8,
                        videoOrientationID: UInt8?, retransmission: Bool = false, into batch: UDPSendBatch,
                        now: ContinuousClock.Instant) -> Bool {
        guard let transport else {
            counters.withLock { $0.dropped += 1 }
            return false
        }
        var patch = RTPHeaderPatch(ssrc: ssrc, sequenceNumber: sequenceNumber, timestamp: timestamp, payloadType: payloadType,
                                   midID: mid == nil ? nil : midExtensionID, mid: midBytes,
                                   orientationSourceID: videoOrientationID, orientationID: videoOrientationExtensionID,
                                   transportCCID: transportCCExtensionID)
        var osn: UInt16?
        if retransmission, let rtxSSRC, let rtxPT = rtx.withLock({ state -> (UInt8, UInt16)? in
            guard let pt = state.payloadTypes[payloadType] else { return nil }
            defer { state.sequence &+= 1 }
            return (pt, state.sequence)
        }) {
            osn = sequenceNumber
            patch.ssrc = rtxSSRC
            patch.payloadType = rtxPT.0
            patch.sequenceNumber = rtxPT.1
        }
        let slot = batch.slot()
        guard let written = source.write(patch, rtxOriginalSequence: osn,
                                         into: UnsafeMutableRawBufferPointer(rebasing: slot[0..<(slot.count - 64)])),
              transport.queueForwarded(slot: slot, length: written.length, transportCCOffset: written.transportCCOffset,
                                       batch: batch, now: now) else {
            counters.withLock { $0.dropped += 1 }
            return false
        }
        // The payload type set is only touched when it changes (hashing per packet showed).
        let newType = patch.payloadType != lastForwardedPayloadType
        lastForwardedPayloadType = patch.payloadType
        counters.withLock {
            $0.packets += 1
            $0.bytes += written.length
            if newType { $0.payloadTypes.insert(patch.payloadType) }
        }
        return true
    }

    /// A snapshot of what `forward(_:sequenceNumber:…into:)` reads of this sender and its
    /// transport, for a forwarder that sends to many senders per packet from a flat array
    /// (`RtpForwardingTarget.send`): nothing here is touched per packet then. Valid until
    /// `ForwardingEpoch.current` changes; `owners` must be kept alive as long as it is used.
    /// Nil when this sender's packets must take `forward(_:…into:)` (no keys or path yet,
    /// TURN, transport-wide sequence numbers to stamp, a mid over 16 bytes). Loop thread.
    public func forwardingTarget() -> (target: RtpForwardingTarget, owners: [AnyObject])? {
        guard transportCCExtensionID == nil, let transport, let path = transport.forwardingPath(),
              midBytes.count <= 16 else { return nil }
        var target = RtpForwardingTarget(ssrc: ssrc, srtp: Unmanaged.passUnretained(path.srtp),
                                         socket: Unmanaged.passUnretained(path.socket))
        if mid != nil, let id = midExtensionID {
            target.midID = id
            target.midLength = UInt8(midBytes.count)
            withUnsafeMutableBytes(of: &target.mid) { $0.copyBytes(from: midBytes) }
        }
        target.orientationID = videoOrientationExtensionID ?? 0
        guard target.setName(path.remote) else { return nil }
        return (target, [path.srtp, path.socket, self])
    }

    /// Packets sent from a forwarding snapshot, counted in bulk: as `forward(_:…into:)`
    /// counts each (packets, plaintext bytes, payload type; the transport's RTP sent).
    public func noteForwarded(packets: Int, bytes: Int, payloadType: UInt8) {
        guard packets > 0 else { return }
        let newType = payloadType != lastForwardedPayloadType
        lastForwardedPayloadType = payloadType
        counters.withLock {
            $0.packets += packets
            $0.bytes += bytes
            if newType { $0.payloadTypes.insert(payloadType) }
        }
        transport?.noteForwarded(packets)
    }

    /// A packet a forwarding snapshot could not send: dropped, as `forward(_:…into:)` counts it.
    public func noteForwardingFailure(srtp: Bool) {
        counters.withLock { $0.dropped += 1 }
        if srtp { transport?.noteForwardingSRTPError() }
    }

    /// Resends a packet this sender sent before (its plaintext bytes from the history): on the
    /// RTX stream when the peer negotiated rtx for its payload type (RFC 4588), else as it was;
    /// either way with a new transport-wide sequence number. Any thread.
    func resend(_ bytes: [UInt8]) {
        var packet = bytes
        if bytes.count >= 2, let rtxSSRC {
            let wrapped = rtx.withLock { state -> [UInt8]? in
                guard let pt = state.payloadTypes[bytes[1] & 0x7F] else { return nil }
                defer { state.sequence &+= 1 }
                return try? RTXPayload.wrap(original: bytes, rtxSSRC: rtxSSRC, rtxPayloadType: pt, rtxSequenceNumber: state.sequence)
            }
            if let wrapped { packet = wrapped }
        }
        transport?.sendRTP(packet, transportCCID: transportCCExtensionID, kind: .retransmission)
    }

    /// Padding-only packets on the RTX stream for a bandwidth probe (RFC 4588 receivers drop
    /// them; RFC 3550 §5.1 padding, at most 255 bytes a packet), about `bytes` in all. Empty
    /// when the peer negotiated no rtx or no transport-cc (a probe nobody measures is waste).
    func paddingPackets(bytes: Int) -> [(bytes: [UInt8], transportCCID: UInt8)] {
        guard let rtxSSRC, let transportCC = transportCCExtensionID else { return [] }
        return rtx.withLock { state -> [(bytes: [UInt8], transportCCID: UInt8)] in
            guard let pt = state.payloadTypes.values.min() else { return [] }
            var out: [(bytes: [UInt8], transportCCID: UInt8)] = []
            var left = bytes
            while left > 0, out.count < 50 {
                var packet = RTPPacket(marker: false, payloadType: pt, sequenceNumber: state.sequence, timestamp: 0,
                                       ssrc: rtxSSRC, payload: [])
                state.sequence &+= 1
                if let id = midExtensionID, let mid { packet.setExtension(id: id, data: Array(mid.utf8)) }
                packet.setExtension(id: transportCC, data: [0, 0])
                var wire = packet.serialize()
                wire[0] |= 0x20
                wire.append(contentsOf: [UInt8](repeating: 0, count: 254) + [255])
                out.append((wire, transportCC))
                left -= wire.count
            }
            return out
        }
    }

    private func sendPrepared(_ packet: RTPPacket) {
        var packet = packet
        let transportCC = transportCCExtensionID
        if let transportCC { packet.setExtension(id: transportCC, data: [0, 0]) }
        guard let transport else {
            counters.withLock { $0.dropped += 1 }
            return
        }
        let bytes = packet.serialize()
        counters.withLock {
            $0.packets += 1
            $0.bytes += bytes.count
            $0.payloadTypes.insert(packet.payloadType)
        }
        transport.sendRTP(bytes, transportCCID: transportCC, kind: .direct)
    }
}

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
