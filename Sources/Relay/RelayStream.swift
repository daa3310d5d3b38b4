import PeerConnection
import RTP
import RTPMedia

/// One app/stream on the relay: at most one publisher and any number of players. Everything
/// here runs on the relay's event loop (publisher and player callbacks are delivered there).
final class RelayStream: @unchecked Sendable {
    // @unchecked: loop thread only.
    let app: String
    let name: String
    var publisher: RelaySession?
    var players: [String: RelaySession] = [:]
    /// The publisher's recent packets per kind, to answer players' NACKs (about one second of
    /// 720p video; audio is not NACKed by browsers but kept the same way). Never suppressed:
    /// every player may ask for the same packet.
    private var videoHistory = RelayStream.makeHistory()
    private var audioHistory = RelayStream.makeHistory()
    private static func makeHistory() -> RTPHistory<RTPPacket> {
        var h = RTPHistory<RTPPacket>(capacity: 1024)
        h.rtt = .zero
        return h
    }
    private var lastKeyframeRequest: ContinuousClock.Instant?
    /// The id the publisher negotiated for urn:3gpp:video-orientation: forwarded packets keep
    /// that element under each player's own id (a player that did not negotiate it gets the
    /// frames unrotated — the relay does not transcode).
    private var orientationID: UInt8?
    /// Reception statistics of the publisher's streams, for the receiver reports we send it.
    private var reception: [UInt32: ReceiverStatistics] = [:]
    /// The publisher's clock rate per kind, for continuing timestamps across a publisher change.
    private var clockRates: [MediaKind: Int] = [:]
    /// When the publisher's last RTP packet arrived: one silent this long can be replaced.
    private(set) var lastPublisherPacketAt: ContinuousClock.Instant?
    var counters = RelayCounters()
    var packetsIn: Int { counters.packetsIn }
    var packetsOut: Int { counters.packetsOut }
    var bitrate = BitrateMeter()
    var videoSize: (width: Int, height: Int)?
    let created = ContinuousClock.now

    init(app: String, name: String) {
        self.app = app
        self.name = name
    }

    var id: String { "\(app)/\(name)" }

    /// The publisher's negotiated codec for a kind (what players must accept).
    func publishedCodec(_ kind: MediaKind) -> RtpCodecParameters? {
        publisher?.pc.transceivers.first { $0.kind == kind && $0.currentDirection?.receives == true }?.negotiatedCodecs.first
    }

    private func clockRate(_ kind: MediaKind) -> Int { clockRates[kind] ?? (kind == .video ? 90000 : 48000) }

    // MARK: forwarding

    func attachPublisher(_ session: RelaySession) {
        publisher = session
        videoHistory = Self.makeHistory()
        audioHistory = Self.makeHistory()
        reception.removeAll()
        lastPublisherPacketAt = nil
        clockRates = [:]
        for kind in [MediaKind.audio, .video] { clockRates[kind] = publishedCodec(kind)?.clockRate }
        orientationID = session.pc.transceivers.first { $0.kind == .video && $0.currentDirection?.receives == true }?
            .negotiatedHeaderExtensions.first { $0.uri == RTPExtensionURI.videoOrientation }?.id
        for t in session.pc.transceivers {
            let kind = t.kind
            t.receiver.onRTP = { [weak self] packet in self?.forward(packet, kind: kind) }
            // Sender reports give our receiver reports their LSR/DLSR, so the publisher gets an RTT.
            t.receiver.onRTCP = { [weak self] packet in
                guard let self, case .senderReport(let sr) = packet else { return }
                self.reception[sr.ssrc]?.recordSenderReport(sr, arrival: .now)
            }
        }
        for player in players.values { player.mapCodecs(from: self) }
    }

    func attachPlayer(_ session: RelaySession) {
        players[session.id] = session
        session.mapCodecs(from: self)
        for t in session.pc.transceivers {
            let kind = t.kind
            t.sender.onRTCP = { [weak self, weak session] packet in
                guard let self, let session else { return }
                self.feedback(packet, kind: kind, from: session)
            }
        }
    }

    private func forward(_ packet: RTPPacket, kind: MediaKind) {
        let now = ContinuousClock.now
        if reception[packet.ssrc] == nil, reception.count < 8 {
            reception[packet.ssrc] = ReceiverStatistics(ssrc: packet.ssrc, clockRate: kind == .video ? 90000 : 48000)
        }
        reception[packet.ssrc]?.record(packet, arrival: now)
        lastPublisherPacketAt = now
        counters.packetsIn += 1
        counters.bytesIn += packet.payload.count + 12
        bitrate.add(bytes: packet.payload.count + 12)
        switch kind {
        case .video: videoHistory.store(packet, size: packet.payload.count + 12, sequenceNumber: packet.sequenceNumber, sentAt: now)
        case .audio: audioHistory.store(packet, size: packet.payload.count + 12, sequenceNumber: packet.sequenceNumber, sentAt: now)
        }
        if kind == .video, videoSize == nil || packet.payload.count > 0 { noteVideoSize(packet) }
        let orientation = kind == .video ? orientationID : nil
        let clockRate = clockRate(kind)
        for player in players.values where player.connected {
            guard let (sender, pt) = player.route[kind] else { continue }
            guard let out = player.continuous(packet, kind: kind, clockRate: clockRate, now: now) else {
                counters.packetsDropped += 1
                continue
            }
            sender.forward(out, payloadType: pt, videoOrientationID: orientation)
            counters.packetsOut += 1
            counters.bytesOut += packet.payload.count + 12
        }
    }

    /// Players' feedback: NACKs are answered from the history, keyframe requests go to the publisher.
    private func feedback(_ packet: RTCPPacket, kind: MediaKind, from player: RelaySession) {
        switch packet {
        case .nack(let nack):
            guard let (sender, pt) = player.route[kind] else { return }
            // One request per sequence number, however often a (hostile) NACK repeats it.
            // The player asks by the sequence numbers it saw, which continue across publishers.
            var seen = Set<UInt16>()
            let wanted = nack.lostSequenceNumbers.filter { seen.insert($0).inserted }
                .compactMap { player.rewriters[kind]?.sourceSequence(forOutput: $0) }
            counters.nacksReceived += wanted.count
            let now = ContinuousClock.now
            let packets = kind == .video ? videoHistory.packets(for: wanted, now: now) : audioHistory.packets(for: wanted, now: now)
            let clockRate = clockRate(kind)
            for p in packets {
                guard let out = player.continuous(p, kind: kind, clockRate: clockRate, now: now) else { continue }
                sender.forward(out, payloadType: pt, videoOrientationID: kind == .video ? orientationID : nil)
                counters.retransmissionsSent += 1
            }
        case .pli, .fir:
            requestKeyframe()
        default:
            break
        }
    }

    /// Receiver reports (loss, jitter) and a REMB to the publisher, once a second: without any
    /// feedback a browser stays at its start bitrate (about 300 kbit/s).
    func sendPublisherFeedback(maxBitrate: UInt64) {
        guard let publisher, publisher.connected,
              let t = publisher.pc.transceivers.first(where: { $0.currentDirection?.receives == true }) else { return }
        let now = ContinuousClock.now
        let reports = reception.keys.sorted().compactMap { reception[$0]?.receptionReport(now: now) }
        guard !reports.isEmpty else { return }
        var packets: [RTCPPacket] = [.receiverReport(ReceiverReport(ssrc: t.sender.ssrc, reports: reports))]
        let video = publisher.pc.transceivers.filter { $0.kind == .video }.flatMap { $0.receiver.remoteSSRCs }
        if !video.isEmpty { packets.append(.remb(REMB(senderSSRC: t.sender.ssrc, bitrate: maxBitrate, ssrcs: video.sorted()))) }
        publisher.pc.sendRTCP(packets)
    }

    /// PLI to the publisher (at most a few per second), e.g. when a player joins.
    func requestKeyframe() {
        let now = ContinuousClock.now
        if let last = lastKeyframeRequest, now - last < .milliseconds(200) { return }
        guard let publisher, let t = publisher.pc.transceivers.first(where: { $0.kind == .video }),
              let source = t.receiver.remoteSSRCs.first else { return }
        lastKeyframeRequest = now
        publisher.pc.sendRTCP([.pli(senderSSRC: t.sender.ssrc, mediaSSRC: source)])
    }

    private func noteVideoSize(_ packet: RTPPacket) {
        guard let codec = publishedCodec(.video), let size = keyframeSize(codec: codec.mimeType, payload: packet.payload) else { return }
        videoSize = size
    }
}

/// Bytes over a sliding window of about two seconds.
struct BitrateMeter {
    private var buckets: [(second: Int, bytes: Int)] = []

    mutating func add(bytes: Int) {
        let second = Int(ContinuousClock.now.elapsedSeconds)
        if let last = buckets.last, last.second == second {
            buckets[buckets.count - 1].bytes += bytes
        } else {
            buckets.append((second, bytes))
            if buckets.count > 4 { buckets.removeFirst() }
        }
    }

    /// kbit/s over the last two complete seconds.
    var kbps: Int {
        let now = Int(ContinuousClock.now.elapsedSeconds)
        let total = buckets.filter { $0.second < now && $0.second >= now - 2 }.reduce(0) { $0 + $1.bytes }
        return total * 8 / 2 / 1000
    }
}

extension ContinuousClock.Instant {
    /// Seconds since an arbitrary fixed origin (for bucketing).
    var elapsedSeconds: Double {
        let d = self - ContinuousClock.Instant.origin
        return Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18
    }
    static let origin = ContinuousClock.now
}
