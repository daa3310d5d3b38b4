import BandwidthEstimation
import Codecs
import Recording
import PeerConnection
import RTP
import RTPMedia

/// A publisher's or player's connection to the relay.
final class RelaySession: @unchecked Sendable {
    // @unchecked: `route` and `connected` are used on the relay's loop thread only.
    enum Role: String { case publisher, player }
    /// Public: listed by the API, logged.
    let id: String
    /// The capability for this session's resource (WHIP/WHEP DELETE): 128 random bits that
    /// appear only in the Location given to the client who created it.
    let secret: String
    let role: Role
    let pc: PeerConnection
    let stream: String
    let remoteAddress: String
    let created: ContinuousClock.Instant
    /// The query the client published or played with (SRS's hook `param`).
    let param: String
    /// Its connection's delegate (the connection holds it weakly). Set once, on the loop thread.
    var delegate: (any PeerConnectionDelegate)?
    /// Whether media goes to it (a player) or comes from it; changing it remakes the
    /// streams' forwarding tables.
    var connected = false { didSet { ForwardingEpoch.bump() } }
    /// Player only: per kind, our sender on this player's connection and the payload type the
    /// player numbered the publisher's codec with.
    func route(_ kind: MediaKind) -> (RtpSender, UInt8)? { kind == .video ? videoRoute : audioRoute }
    private var audioRoute: (RtpSender, UInt8)?
    private var videoRoute: (RtpSender, UInt8)?
    /// Player only: per kind (audio, video), what the relay keeps about the stream it sends
    /// this player. Its own allocation at a fixed address: a stream's forwarding table points
    /// here, so a forwarded packet touches this and the table, not the session.
    let outputs: UnsafeMutablePointer<PlayerOutput>

    init(id: String, secret: String, role: Role, pc: PeerConnection, stream: String, remoteAddress: String,
         created: ContinuousClock.Instant, param: String = "") {
        self.id = id
        self.secret = secret
        self.role = role
        self.pc = pc
        self.stream = stream
        self.remoteAddress = remoteAddress
        self.created = created
        self.param = param
        outputs = .allocate(capacity: 2)
        outputs.initialize(repeating: PlayerOutput(), count: 2)
    }

    deinit {
        outputs.deinitialize(count: 2)
        outputs.deallocate()
    }

    func output<R>(_ kind: MediaKind, _ body: (inout PlayerOutput) -> R) -> R {
        body(&outputs[kind == .audio ? 0 : 1])
    }

    /// Where `output(kind)` lives (for the forwarding table).
    func outputPointer(_ kind: MediaKind) -> UnsafeMutablePointer<PlayerOutput> { outputs + (kind == .audio ? 0 : 1) }

    /// This player's continuous sequence number and timestamp for a source packet; nil to drop it.
    func continuous(ssrc: UInt32, sequenceNumber: UInt16, timestamp: UInt32, kind: MediaKind, clockRate: Int,
                    now: ContinuousClock.Instant) -> (sequenceNumber: UInt16, timestamp: UInt32)? {
        output(kind) { $0.rewriter.rewrite(ssrc: ssrc, sequenceNumber: sequenceNumber, timestamp: timestamp, clockRate: clockRate, now: now) }
    }

    /// Matches this player's negotiated codecs to what the publisher sends.
    func mapCodecs(from stream: RelayStream) {
        defer { ForwardingEpoch.bump() }
        audioRoute = nil
        videoRoute = nil
        for t in pc.transceivers where t.currentDirection?.sends == true {
            guard let published = stream.publishedCodec(t.kind),
                  let mine = RelayCodecs.route(for: published, among: t.negotiatedCodecs) else { continue }
            if t.kind == .video { videoRoute = (t.sender, mine.payloadType) } else { audioRoute = (t.sender, mine.payloadType) }
        }
        // Answered transport-cc (a simulcast's player, unless `--player-remb`): its estimate is the relay's own.
        guard let sender = videoRoute?.0, sender.transportCCExtensionID != nil else { return }
        sender.followSendSideEstimate(maxBitrate: RelayStream.playerMaxBitrate) { [weak self, weak stream] request in
            guard let self, let stream else { return [] }
            return stream.probePadding(for: self, request)
        } onChange: { [weak self, weak stream] estimate in
            guard let self, let stream else { return }
            stream.sendSideEstimate(estimate, of: self)
        }
    }
}

/// One player's output stream of one kind. What every forwarded packet touches comes first.
struct PlayerOutput {
    // What every forwarded packet reads and writes comes first, in the cache lines the fan-out
    // prefetches (`ForwardingRecord.prefetch`); everything here has a layout known at
    // compile time (no `ContinuousClock.Instant`), so its offsets are constants.
    /// Simulcast: the publisher's layer (SSRC) this player is sent, and the one it asked for.
    var layer: UInt32?
    /// Simulcast: the layer it should have now (its allocator's choice); `layer` follows at
    /// that layer's keyframe.
    var target: UInt32?
    /// What the sender report counts (RFC 3550 §6.4.1: packets, payload octets).
    var packetsSent: UInt32 = 0
    var octetsSent: UInt32 = 0
    /// Sent from the forwarding table and not yet added to the sender's statistics
    /// (`RtpSender.noteForwarded`): packets and their plaintext bytes.
    var unnotedPackets = 0
    var unnotedBytes = 0
    /// Padding sent along with its layer (a probe for the next one): bytes per forwarded byte,
    /// a higher ratio until a time (the probe's burst), and what is owed of it.
    var paddingRatio = 0.0
    var burst: (ratio: Double, until: Moment)?
    var paddingOwed = 0.0
    /// Sequence numbers and timestamps that continue when the stream's publisher is replaced
    /// (the player keeps its SSRC and SRTP state throughout).
    var rewriter = SourceSwitchRewriter()
    /// VP8 simulcast: its PictureID/TL0PICIDX, continuous across layer switches.
    var vp8 = VP8Numbering()
    var layerPreference = LayerPreference.high
    /// VP8 temporal layers: the frames above its layer are not sent, the rest numbered on.
    /// Its cap is the player's own (`?temporal=N`) or else its allocator's.
    var temporal = TemporalLayerFilter()
    var temporalPreference: UInt8?
    /// RTT from the player's reports on our sender reports.
    var roundTrip = SenderReportRoundTrip()
    /// Video only: what the player's link carries, the layer that fits it, and what its NACKs
    /// may be answered with beyond its layer.
    var estimate = ViewerEstimate()
    var allocator = LayerAllocator()
    /// Simulcast: since when its link has delivered under its smallest layer (`RelayStream.thins`).
    var underLayerSince: Moment?
    var resendBudget = RateBudget()
}

extension PlayerOutput {
    /// What a publisher's packet is in this player's stream, the first time it goes out.
    enum Outgoing {
        case send(sequenceNumber: UInt16, timestamp: UInt32, edit: RTPHeaderPatch.PayloadEdit?)
        /// From a source its stream cannot continue.
        case unplaceable
        /// A VP8 frame above its temporal layer.
        case aboveLayer
    }

    /// A publisher's packet in this player's stream (the fan-out and a replayed keyframe alike):
    /// its continuous sequence number and timestamp, with VP8 temporal layers the frames above
    /// its layer left out and the rest numbered on, and the PictureID/TL0PICIDX edit when
    /// `editsVP8` (simulcast or temporal layers).
    @inline(__always)
    mutating func outgoing(_ view: RTPHeaderView, vp8: VP8Numbers?, mark: TemporalMark?, editsVP8: Bool, clockRate: Int,
                           now: ContinuousClock.Instant) -> Outgoing {
        guard case (var seq, let ts)? = rewriter.rewrite(ssrc: view.ssrc, sequenceNumber: view.sequenceNumber,
                                                         timestamp: view.timestamp, clockRate: clockRate, now: now) else { return .unplaceable }
        if let mark {
            guard let sent = temporal.filter(sequenceNumber: seq, layer: mark.layer, sync: mark.sync, startsFrame: mark.startsFrame) else {
                if let vp8 { self.vp8.dropped(vp8) }
                return .aboveLayer
            }
            seq = sent
        }
        return .send(sequenceNumber: seq, timestamp: ts, edit: editsVP8 ? vp8.map { self.vp8.edit($0) } : nil)
    }
}

/// Width and height from a keyframe's first packet (H.264 SPS, VP8 keyframe header).
func keyframeSize(codec: String, payload: [UInt8]) -> (width: Int, height: Int)? {
    guard let first = payload.first else { return nil }
    if codec.lowercased().hasSuffix("h264") {
        var nals: [ArraySlice<UInt8>] = []
        switch first & 0x1f {
        case 7: nals = [payload[...]]
        case 24:
            var i = 1
            while i + 2 <= payload.count {
                let size = Int(payload[i]) << 8 | Int(payload[i + 1])
                i += 2
                guard size > 0, i + size <= payload.count else { break }
                nals.append(payload[i..<(i + size)])
                i += size
            }
        default: return nil
        }
        for nal in nals where (nal.first ?? 0) & 0x1f == 7 {
            if let sps = try? H264SPS(nal: Array(nal)) { return (sps.width, sps.height) }
        }
        return nil
    }
    if codec.lowercased().hasSuffix("vp8") {
        guard let (descriptor, size) = try? VP8PayloadDescriptor.parse(payload), descriptor.startsFrame else { return nil }
        return KeyframeSize.of(Array(payload[size...]), codec: .vp8)
    }
    return nil
}
