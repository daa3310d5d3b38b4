import AudioProcessing
import BandwidthEstimation
import Media
import RTP
import RTPMedia
import Locks
import Transport

/// W3C `RTCRtpSender`: one outgoing RTP stream (and its RTX stream). Frames from an encoder or
/// packets from the application go out through one path on the connection's loop (`transmit`):
/// our SSRC and sequence number, the mid element and the transport-wide placeholder stamped,
/// the packet kept for NACKs and counted for sender reports, then paced and protected by the
/// transport. The stages a stream needs on the send side live here: the history and
/// `NackResponder` (with the RTX writer), `SenderStatistics` (SR counts, RTT) and the keyframe
/// request throttle.
public final class RtpSender: @unchecked Sendable {
    // @unchecked: the loop state below is touched on `loop`'s thread only (checked in debug
    // builds); what other threads read sits behind Mutexes.
    public let kind: MediaKind
    public let ssrc: UInt32
    public let cname: String
    public let streamIds: [String]
    public let trackId: String
    /// The SSRC of our RTX stream (video), used when the peer negotiated rtx.
    public let rtxSSRC: UInt32?
    /// Simulcast: this stream's rid and its place in `parameters.encodings` (the transceiver's
    /// sender is the largest layer, the one that goes alone when the peer refuses simulcast).
    public let rid: String?
    package let encodingIndex: Int
    /// Simulcast: the other layers, each an RTP stream of its own (SSRC, RTX, history, reports,
    /// keyframe requests) sharing this sender's track, parameters and m-line.
    package let otherLayers: [RtpSender]
    private let negotiatedRIDs = Locked<[String]>([])
    let loop: EventLoop
    private let counters = Locked(RtpStreamCounters())
    private let sendParameters: Locked<RtpSendParameters>
    private let handlers = Locked(Handlers())
    private let orientationID = Locked<UInt8?>(nil)

    struct Handlers {
        var onRTCP: (@Sendable (RTCPPacket) -> Void)?
        var onTrackChanged: (@Sendable () -> Void)?
        var onParametersChanged: (@Sendable (RtpSendParameters) -> Void)?
        var onAudioProcessingChanged: (@Sendable (AudioProcessingOptions?) -> Void)?
        var onEncodedVideo: (@Sendable (EncodedFrame) -> Void)?
        var onEncodedAudio: (@Sendable ([UInt8], Int64) -> Void)?
    }

    // MARK: loop state (set at negotiation; what a forwarding snapshot copies bumps `ForwardingEpoch`)

    package weak var transport: MediaTransport? { didSet { ForwardingEpoch.bump() } }
    package var midExtensionID: UInt8? { didSet { ForwardingEpoch.bump() } }
    package var mid: String? {
        didSet {
            midBytes = mid.map { Array($0.utf8) } ?? []
            ForwardingEpoch.bump()
        }
    }
    /// `mid` as the extension element carries it (made once, not per packet).
    package private(set) var midBytes: [UInt8] = []
    /// The id of the transport-wide sequence number extension on this m-line (nil: not
    /// negotiated). Packets carry a 2-byte placeholder the transport fills in as they leave,
    /// so the numbers follow the order on the wire (retransmissions and forwards included).
    package var transportCCExtensionID: UInt8? { didSet { ForwardingEpoch.bump() } }
    /// The id of abs-send-time on this m-line where the answer took it (`Configuration.absSendTime`:
    /// forwarded packets only), stamped with the send time as a forwarded packet leaves.
    package var absSendTimeExtensionID: UInt8? { didSet { ForwardingEpoch.bump() } }
    /// The rtp-stream-id element (RFC 8852) on each packet, and repaired-rtp-stream-id on its
    /// retransmissions: set when the answer took our simulcast.
    package var ridExtensionID: UInt8? { didSet { ForwardingEpoch.bump() } }
    package var repairedRIDExtensionID: UInt8?
    private let ridBytes: [UInt8]
    private var nextSequence = UInt16.random(in: 0...UInt16.max)
    /// What was sent, for NACKs (about 2 s of 720p video; audio keeps the same).
    package private(set) var history = RTPHistory<[UInt8]>(capacity: 2048)
    /// Answers NACKs from `history` (or, on a relay, from a publisher's), on our RTX stream.
    package var nack: NackResponder
    /// SR counts and the RTT the peer's reports on them give.
    package var statistics: SenderStatistics
    /// PLIs and FIRs about this stream, collapsed to one keyframe per interval.
    package var keyframeRequests: KeyframeRequestTracker

    init(kind: MediaKind, ssrc: UInt32, cname: String, streamIds: [String], loop: EventLoop, rtxSSRC: UInt32? = nil,
         rid: String? = nil, encodingIndex: Int = 0, otherLayers: [RtpSender] = [],
         parameters: RtpSendParameters = RtpSendParameters()) {
        self.kind = kind
        self.sendParameters = Locked(parameters)
        self.ssrc = ssrc
        self.rtxSSRC = rtxSSRC
        self.rid = rid
        self.ridBytes = rid.map { Array($0.utf8) } ?? []
        self.encodingIndex = encodingIndex
        self.otherLayers = otherLayers
        self.cname = cname
        self.streamIds = streamIds
        self.loop = loop
        self.trackId = "\(kind.rawValue)-\(String(ssrc, radix: 16))"
        nack = NackResponder(rtx: rtxSSRC.map { RTXWriter(ssrc: $0) })
        statistics = SenderStatistics(ssrc: ssrc, clockRate: kind == .video ? 90000 : 48000)
        keyframeRequests = KeyframeRequestTracker(ssrc: ssrc)
    }

    public var stats: RtpStreamCounters { counters.withLock { $0 } }

    /// The simulcast layers the negotiation took, in our `a=simulcast` order (empty: one stream,
    /// this sender's; also when the peer refused simulcast). Any thread.
    public internal(set) var simulcastRIDs: [String] {
        get { negotiatedRIDs.withLock { $0 } }
        set { negotiatedRIDs.withLock { $0 = newValue } }
    }

    /// The rids our offer lists (`a=rid … send`): every layer's, or none without simulcast.
    var offeredRIDs: [String] { otherLayers.isEmpty ? [] : parameters.encodings.compactMap(\.rid) }

    /// The RTP streams that send: this one, and with simulcast the other negotiated layers.
    package var sendingLayers: [RtpSender] {
        let rids = simulcastRIDs
        return [self] + otherLayers.filter { $0.rid.map(rids.contains) ?? false }
    }

    /// This sender or the layer of it that sends as `ssrc`.
    func layer(ssrc: UInt32) -> RtpSender? {
        ssrc == self.ssrc ? self : otherLayers.first { $0.ssrc == ssrc }
    }

    /// Copies what the negotiation set on this sender to its other layers (loop thread).
    func configureLayers() {
        for l in otherLayers {
            l.transport = transport
            l.mid = mid
            l.midExtensionID = midExtensionID
            l.transportCCExtensionID = transportCCExtensionID
            l.absSendTimeExtensionID = absSendTimeExtensionID
            l.videoOrientationExtensionID = videoOrientationExtensionID
            l.rtxPayloadTypes = rtxPayloadTypes
            l.ridExtensionID = ridExtensionID
            l.repairedRIDExtensionID = repairedRIDExtensionID
        }
    }

    /// Media payload type → the rtx payload type negotiated for it (loop thread).
    var rtxPayloadTypes: [UInt8: UInt8] {
        get { nack.rtx?.payloadTypes ?? [:] }
        set { nack.rtx?.payloadTypes = newValue }
    }

    /// The id of urn:3gpp:video-orientation on this m-line (nil: not negotiated). Set on the loop
    /// thread at negotiation, read by the encode queue and when forwarding.
    package var videoOrientationExtensionID: UInt8? {
        get { orientationID.withLock { $0 } }
        set {
            orientationID.withLock { $0 = newValue }
            ForwardingEpoch.bump()
        }
    }

    /// RTCP feedback about what this sender sends (NACK, PLI, FIR, REMB, TWCC, receiver reports).
    /// Called on the connection's loop thread. A packet tap, not an event (see
    /// `RtpReceiver.onRTP`): a closure, called per packet without a hop.
    public var onRTCP: (@Sendable (RTCPPacket) -> Void)? {
        get { handlers.withLock { $0.onRTCP } }
        set { handlers.withLock { $0.onRTCP = newValue } }
    }

    /// Every frame this sender's encoder makes, before packetization (on the encode queue): what
    /// is sent, for a recorder. A tap like `onRTCP`.
    public var onEncodedVideo: (@Sendable (EncodedFrame) -> Void)? {
        get { handlers.withLock { $0.onEncodedVideo } }
        set { handlers.withLock { $0.onEncodedVideo = newValue } }
    }

    /// Every Opus packet this sender's encoder makes, with its capture time (CLOCK_MONOTONIC ns).
    public var onEncodedAudio: (@Sendable ([UInt8], Int64) -> Void)? {
        get { handlers.withLock { $0.onEncodedAudio } }
        set { handlers.withLock { $0.onEncodedAudio = newValue } }
    }

    /// Called when the track changes so the media stream can move its sink. Loop or caller thread.
    var onTrackChanged: (@Sendable () -> Void)? {
        get { handlers.withLock { $0.onTrackChanged } }
        set { handlers.withLock { $0.onTrackChanged = newValue } }
    }

    /// Called (on the caller's thread) after `setParameters` changed something; media streams
    /// apply it to the encoder.
    var onParametersChanged: (@Sendable (RtpSendParameters) -> Void)? {
        get { handlers.withLock { $0.onParametersChanged } }
        set { handlers.withLock { $0.onParametersChanged = newValue } }
    }

    var onAudioProcessingChanged: (@Sendable (AudioProcessingOptions?) -> Void)? {
        get { handlers.withLock { $0.onAudioProcessingChanged } }
        set { handlers.withLock { $0.onAudioProcessingChanged = newValue } }
    }

    // MARK: tracks and parameters (any thread)

    private let tracks = Locked<(video: VideoTrack?, audio: AudioTrack?)>((nil, nil))

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

    private let processing = Locked<(set: Bool, options: AudioProcessingOptions?)>((false, nil))

    /// Echo cancellation, gain control and noise suppression for this audio sender, switchable
    /// while sending (the reference app's googEchoCancellation / googAutoGainControl /
    /// googNoiseSuppression constraints; `AudioProcessingOptions(constraints:)` maps them). nil: off.
    public func setAudioProcessing(_ options: AudioProcessingOptions?) {
        processing.withLock { $0 = (true, options) }
        onAudioProcessingChanged?(options)
    }

    /// The per-sender setting if one was made (else the connection's configuration applies).
    var audioProcessingOverride: AudioProcessingOptions?? {
        processing.withLock { $0.set ? .some($0.options) : Optional.none }
    }

    /// W3C `getParameters()`.
    public var parameters: RtpSendParameters { sendParameters.withLock { $0 } }

    /// W3C `setParameters()`: applied to the encoder at run time (bitrate, frame rate, scale,
    /// active, degradation preference).
    public func setParameters(_ parameters: RtpSendParameters) throws {
        try parameters.validate()
        // W3C InvalidModificationError: the encodings are fixed by the transceiver.
        let rids = self.parameters.encodings.map(\.rid)
        guard parameters.encodings.map(\.rid) == rids else {
            throw PeerConnectionError(.invalidArgument,
                                      "setParameters: the encodings and their rids are fixed (\(rids.map { $0 ?? "-" }))")
        }
        sendParameters.withLock { $0 = parameters }
        onParametersChanged?(parameters)
    }

    // MARK: sending

    /// Sends one packet the application built: our SSRC, the next sequence number, the mid
    /// extension. Any thread; it goes out on the connection's loop, unpaced.
    public func send(payloadType: UInt8, payload: [UInt8], timestamp: UInt32, marker: Bool = false) {
        onLoop { [self] in
            guard canSend(1) else { return }
            let packet = RTPPacket(marker: marker, payloadType: payloadType, sequenceNumber: takeSequence(),
                                   timestamp: timestamp, ssrc: ssrc, payload: payload)
            transmit(packet, kind: .direct, now: loop.now)
        }
    }

    /// Sends the payloads of one media frame as consecutive packets (an encoder's output; any
    /// thread): everything about the header is decided on the loop, so the encode queue reads
    /// nothing the loop writes. `lastPacketExtensions` go on the frame's last packet only
    /// (video orientation, as libwebrtc does). A keyframe's answers the keyframe requests that
    /// come while it waits in the pacer (`KeyframeRequestTracker.keyframeQueued`).
    /// `captureTimeNs`: when the payloads' frame was captured (CLOCK_MONOTONIC, the instant
    /// their timestamp stands for), for the sender reports.
    func sendPayloads(_ payloads: [RTPPayload], payloadType: UInt8, timestamp: UInt32,
                      lastPacketExtensions: [RTPHeaderExtension] = [], isKeyframe: Bool = false, captureTimeNs: Int64? = nil) {
        let kind: OutgoingRTPKind = self.kind == .video ? .video : .audio
        onLoop { [self] in
            guard canSend(payloads.count) else { return }
            let now = loop.now
            // Placed on the loop's clock by its age now. A time on another clock (a synthetic
            // source) or over a second old gives none.
            let age = captureTimeNs.map { MonotonicClock.nanoseconds() - $0 }
            let capturedAt = age.flatMap { (0...1_000_000_000).contains($0) ? now - .nanoseconds($0) : nil }
            for (i, payload) in payloads.enumerated() {
                var packet = RTPPacket(marker: payload.marker, payloadType: payloadType, sequenceNumber: takeSequence(),
                                       timestamp: timestamp, ssrc: ssrc, payload: payload.bytes)
                if i == payloads.count - 1 {
                    for e in lastPacketExtensions { packet.setExtension(id: e.id, data: e.data) }
                }
                if i == 0, isKeyframe { nack.supersededBefore = packet.sequenceNumber }
                transmit(packet, kind: kind, now: now, capturedAt: capturedAt)
            }
            if isKeyframe, let transport { keyframeRequests.keyframeQueued(leavingBy: now + transport.congestion.expectedQueueTime) }
        }
    }

    /// Sends a packet another connection received as ours (the echo endpoint): our SSRC and
    /// mid, its own sequence number (so a gap upstream stays a gap the far end NACKs, and a
    /// retransmission that fills it lands in place); header extensions dropped (their ids were
    /// negotiated with another peer) except video orientation (`videoOrientationID`: its id in
    /// `packet`), kept under our id; `payloadType` rewrites the payload type when this peer
    /// numbered the codec differently. Loop thread.
    package func forward(_ packet: RTPPacket, payloadType: UInt8? = nil, videoOrientationID: UInt8? = nil) {
        loop.preconditionInLoop()
        var packet = packet
        packet.ssrc = ssrc
        if let payloadType { packet.payloadType = payloadType }
        let orientation = videoOrientationID.flatMap { packet.extensionData(id: $0) }
        packet.extensions = []
        packet.extensionProfile = nil
        if let orientation, let id = videoOrientationExtensionID { packet.setExtension(id: id, data: orientation) }
        transmit(packet, kind: .direct, now: loop.now)
    }

    /// The one exit of our own packets (loop thread): the mid and transport-wide elements, the
    /// history, the SR counts, then the transport.
    private func transmit(_ packet: RTPPacket, kind: OutgoingRTPKind, now: ContinuousClock.Instant,
                          capturedAt: ContinuousClock.Instant? = nil) {
        loop.preconditionInLoop()
        var packet = packet
        if let id = midExtensionID, mid != nil { packet.setExtension(id: id, data: midBytes) }
        if let id = transportCCExtensionID { packet.setExtension(id: id, data: [0, 0]) }
        if let id = ridExtensionID, !ridBytes.isEmpty { packet.setExtension(id: id, data: ridBytes) }
        guard let transport, transport.canSendMedia else {
            counters.withLock { $0.dropped += 1 }
            return
        }
        let bytes = packet.serialize()
        history.store(bytes, sequenceNumber: packet.sequenceNumber, sentAt: now)
        statistics.record(packet, sentAt: now, capturedAt: capturedAt)
        count(bytes.count, payloadType: packet.payloadType)
        transport.sendRTP(bytes, transportCCID: transportCCExtensionID, kind: kind)
    }

    /// A NACK from the receiver (loop thread): what the history still holds goes again, on the
    /// RTX stream when negotiated, ahead of new video, with a new transport-wide number.
    /// Returns how many went.
    @discardableResult
    func handleNack(_ sequenceNumbers: [UInt16], now: ContinuousClock.Instant) -> Int {
        loop.preconditionInLoop()
        guard let transport else { return 0 }
        var sent = 0
        for (_, bytes) in nack.respond(to: sequenceNumbers, from: history, now: now) {
            guard let rewritten = nack.retransmission(of: bytes, midID: mid == nil ? nil : midExtensionID, mid: midBytes,
                                                      orientationID: videoOrientationExtensionID,
                                                      transportCCID: transportCCExtensionID) else { continue }
            let packet = withRepairedRID(rewritten)
            count(packet.count, payloadType: packet[1] & 0x7F)
            transport.sendRTP(packet, transportCCID: transportCCExtensionID, kind: .retransmission)
            sent += 1
        }
        return sent
    }

    /// A simulcast layer's retransmission names the layer it repairs (RFC 8852), so a receiver
    /// without our SSRCs in the SDP knows where it goes.
    private func withRepairedRID(_ bytes: [UInt8]) -> [UInt8] {
        guard let id = repairedRIDExtensionID, !ridBytes.isEmpty, nack.rtx != nil,
              var packet = try? RTPPacket(parsing: bytes), packet.ssrc == rtxSSRC else { return bytes }
        packet.setExtension(id: id, data: ridBytes)
        return packet.serialize()
    }

    /// Padding-only packets on the RTX stream for a bandwidth probe, about `bytes` in all (the
    /// pacer sends them). Empty when the peer negotiated no rtx or no transport-cc (a probe
    /// nobody measures is waste). Loop thread.
    func paddingPackets(_ request: PaddingRequest) -> [(bytes: [UInt8], transportCCID: UInt8)] {
        loop.preconditionInLoop()
        guard let transportCC = transportCCExtensionID, nack.rtx != nil else { return [] }
        let packets = nack.rtx?.padding(bytes: request.bytes, largestPacket: request.largestPacket,
                                        midID: mid == nil ? nil : midExtensionID, mid: midBytes, transportCCID: transportCC) ?? []
        return packets.map { ($0, transportCC) }
    }

    /// A relay's player (no media pipeline of its own): its transport's send-side estimate —
    /// from the player's transport-cc feedback on what it is forwarded — goes to `onChange`
    /// (loop thread, once settled, on each change of a few percent, with what the link
    /// delivered and lost lately), and the estimator's probe
    /// clusters go out on this sender's RTX stream: `padding(request)` (copies of what the player
    /// was sent), else padding-only packets. Loop thread.
    /// `maxBitrate`: the most the player may be sent (the estimator's bound, and its probes').
    package func followSendSideEstimate(maxBitrate: Int, padding: @escaping (PaddingRequest) -> [(bytes: [UInt8], transportCCID: UInt8)],
                                        onChange: @escaping (SendSideEstimate) -> Void) {
        loop.preconditionInLoop()
        guard let congestion = transport?.congestion else { return }
        congestion.setBounds(minBitrate: 30_000, maxBitrate: maxBitrate, audioReserve: 0, videoStreams: 1)
        congestion.onSendSideEstimate = onChange
        congestion.makePadding = { [weak self] request in
            let copies = padding(request)
            return copies.isEmpty ? self?.paddingPackets(request) ?? [] : copies
        }
    }

    /// A relay's player (`followSendSideEstimate`): what it would be sent if its link carried it
    /// (the layer it asked for), or nil once it has that. Loop thread.
    package func wantSendSide(_ bitrate: Int?) {
        loop.preconditionInLoop()
        transport?.congestion.setWanted(bitrate)
    }

    /// Whether `count` new packets can leave now. Before DTLS has made the keys (or ICE a path)
    /// they are dropped here, before they take sequence numbers, and counted as dropped, not
    /// sent: a sender's first frames can race the handshake's end, and the receiver then sees
    /// a stream that starts later, not one with a hole it would NACK.
    private func canSend(_ count: Int) -> Bool {
        guard transport?.canSendMedia == true else {
            counters.withLock { $0.dropped += count }
            return false
        }
        return true
    }

    package func takeSequence() -> UInt16 {
        defer { nextSequence &+= 1 }
        return nextSequence
    }

    /// Counts a packet that left (also the relay's forwards, in bulk through `count(packets:…)`).
    package func count(_ bytes: Int, payloadType: UInt8) {
        counters.withLock {
            $0.packets += 1
            $0.bytes += bytes
            $0.payloadTypes.insert(payloadType)
        }
    }

    package func count(packets: Int, bytes: Int, payloadType: UInt8) {
        counters.withLock {
            $0.packets += packets
            $0.bytes += bytes
            $0.payloadTypes.insert(payloadType)
        }
    }

    package func countDropped(_ n: Int = 1) {
        counters.withLock { $0.dropped += n }
    }

    /// Runs `body` on the loop: at once when already there.
    private func onLoop(_ body: @escaping @Sendable () -> Void) {
        if loop.inLoop { body() } else { loop.execute(body) }
    }
}
