import BandwidthEstimation
import CShim
import Media
import PeerConnection
import RTP
import RTPMedia
import Transport

/// One app/stream on the relay: at most one publisher and any number of players. Everything
/// here runs on the relay's event loop (publisher and player callbacks are delivered there).
final class RelayStream: @unchecked Sendable {
    // @unchecked: loop thread only.
    let app: String
    let name: String
    var publisher: RelaySession?
    var players: [String: RelaySession] = [:] { didSet { invalidateForwarding() } }
    /// Per kind, one flat record per connected player with a route: what a forwarded packet
    /// needs for that player (`ForwardingRecord`), so the fan-out loop walks this array and the
    /// players' SRTP contexts instead of each player's session, sender, transport and ICE
    /// agent. Remade when `ForwardingEpoch` moves (a player connects, a path, keys, mid or
    /// extension ids change, codecs are mapped, a connection closes) or the players change.
    private var videoTable: [ForwardingRecord] = []
    private var audioTable: [ForwardingRecord] = []
    /// What the records point at (sessions, senders, SRTP sessions, sockets), kept alive here.
    private var tableOwners: [AnyObject] = []
    private var tableEpoch: UInt64?
    /// How often the tables were made (tests).
    private(set) var tableRebuilds = 0
    /// The publisher's video streams (one per simulcast layer), each with its recent packets
    /// (their plaintext bytes, as they arrived) to answer players' NACKs without copies; audio's
    /// the same way (not NACKed by browsers, but kept). Resends are deduped per player
    /// (`PlayerOutput`): every player may ask for the same packet.
    private var videoLayers = VideoLayers()
    private var audioHistory = RTPHistory<[UInt8]>(capacity: 1024)
    /// What the publisher's audio takes of a player's link, with each packet's IP, UDP and SRTP
    /// overhead (`audioOverhead`): a third of an Opus packet's size, and half of a 100 kbit/s
    /// viewer's link. A player's estimate covers its audio too; its video gets the rest.
    private var audioRate = BitrateMeter()
    static let audioOverhead = 20 + 8 + 10
    /// The publisher's video codec (to find keyframes) and receiver (the rids of its layers).
    private var videoCodec: VideoCodecType?
    private weak var videoReceiver: RtpReceiver?
    /// Simulcast: the layer the recording takes (the largest when it starts), kept throughout.
    private var recordedLayer: UInt32?
    /// A publisher silent this long that sends again gets a keyframe request (see `forward`).
    static let resumeAfter: Duration = .milliseconds(500)
    /// No keyframe this long after that request: it is made once more (`askAgainUnlessKeyframe`).
    static let resumeRetry: Duration = .milliseconds(400)
    /// A held-back request goes this long after the window seen here ends: the publisher's own
    /// began when it expected the keyframe's last packet to leave its pacer, an estimate.
    static let publisherWindowSlack: Duration = .milliseconds(30)
    /// When the publisher's last keyframe started (video).
    private var lastKeyframeAt: ContinuousClock.Instant?
    /// When the publisher last came back from a silence (and was asked for a keyframe).
    private var resumedAt: ContinuousClock.Instant?
    /// Simulcast: when the publisher's packets were last looked at for a layer that stopped or
    /// started again (`layersChecked`).
    private var layersCheckedAt: ContinuousClock.Instant?
    static let layerCheckInterval: Duration = .milliseconds(100)
    /// PLIs to the publisher, per video SSRC (each simulcast layer its own): at most one per
    /// 300 ms (the keyframe on its way answers the players that ask meanwhile). A player asks
    /// for its own layer only: a keyframe of another would cost every viewer of that one.
    private var keyframeRequests: [UInt32: KeyframeRequestTracker] = [:]
    /// The SSRCs a held-back PLI is scheduled for (when the throttle allows it).
    private var keyframeRetryScheduled: Set<UInt32> = []
    /// When a PLI last went to the publisher, per SSRC (a keyframe is on its way after it), and
    /// whether a player asked for it (its join or its own request).
    private var keyframeAskedAt: [UInt32: (at: ContinuousClock.Instant, forPlayer: Bool)] = [:]
    /// The publisher's NTP ↔ RTP mapping per kind and SSRC (its sender reports; a simulcast
    /// layer has its own), for players' reports.
    private var senderReports: [MediaKind: [UInt32: SenderReportTranslator]] = [:]
    /// One packet's fan-out to every player, written in place and sent with one sendmmsg.
    private let batch = UDPSendBatch()
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
    /// The relay's loop: its clock is the stream's (simulated in tests).
    let loop: EventLoop
    let created: ContinuousClock.Instant
    /// `--record`: the publisher's packets to a file (RelayRecording.swift); nil when off.
    private(set) var recording: StreamRecording?

    /// The server's log (layer switches); nil: none.
    let log: (@Sendable (String) -> Void)?

    init(app: String, name: String, loop: EventLoop, dvr: RelayDVR? = nil, log: (@Sendable (String) -> Void)? = nil) {
        self.app = app
        self.name = name
        self.loop = loop
        self.log = log
        created = loop.now
        // The recorder's keyframe requests take the same throttled path as players'.
        recording = dvr.map { dvr in
            StreamRecording(dvr: dvr, app: app, name: name) { [weak self] in
                guard let self else { return }
                self.requestKeyframe(now: self.loop.now, untilSent: true)
            }
        }
    }

    var id: String { "\(app)/\(name)" }

    /// The publisher's negotiated codec for a kind (what players must accept).
    func publishedCodec(_ kind: MediaKind) -> RtpCodecParameters? {
        publisher?.pc.transceivers.first { $0.kind == kind && $0.currentDirection?.receives == true }?.negotiatedCodecs.first
    }

    private func clockRate(_ kind: MediaKind) -> Int { clockRates[kind] ?? (kind == .video ? 90000 : 48000) }

    // MARK: forwarding

    func attachPublisher(_ session: RelaySession) {
        loop.preconditionInLoop()
        publisher = session
        audioHistory = RTPHistory<[UInt8]>(capacity: 1024)
        videoCodec = publishedCodec(.video).flatMap { VideoCodecType(mimeType: $0.mimeType) }
        let video = session.pc.transceivers.first { $0.kind == .video && $0.currentDirection?.receives == true }
        videoLayers = VideoLayers()
        videoLayers.rids = video?.receiveRIDs ?? []
        videoReceiver = video?.receiver
        recordedLayer = nil
        senderReports = [:]
        reception.removeAll()
        lastPublisherPacketAt = nil
        lastKeyframeAt = nil
        resumedAt = nil
        clockRates = [:]
        for kind in [MediaKind.audio, .video] { clockRates[kind] = publishedCodec(kind)?.clockRate }
        orientationID = session.pc.transceivers.first { $0.kind == .video && $0.currentDirection?.receives == true }?
            .negotiatedHeaderExtensions.first { $0.uri == RTPExtensionURI.videoOrientation }?.id
        for t in session.pc.transceivers {
            let kind = t.kind
            t.receiver.onRTPBytes = { [weak self] packet, bytes in self?.forward(packet, bytes: bytes, kind: kind) }
            // Sender reports give our receiver reports their LSR/DLSR, so the publisher gets an
            // RTT, and players' sender reports their NTP ↔ RTP mapping.
            t.receiver.onRTCP = { [weak self] packet in
                guard let self, case .senderReport(let sr) = packet else { return }
                let now = self.loop.now
                self.reception[sr.ssrc]?.recordSenderReport(sr, arrival: now)
                // Bounded like the streams: a report on an SSRC that never sent is not kept.
                guard kind == .audio || self.videoLayers[sr.ssrc] != nil else { return }
                if (self.senderReports[kind]?.count ?? 0) >= VideoLayers.limit, self.senderReports[kind]?[sr.ssrc] == nil { return }
                self.senderReports[kind, default: [:]][sr.ssrc, default: SenderReportTranslator(clockRate: self.clockRate(kind))]
                    .record(sr, arrival: now)
                self.recording?.senderReport(sr, video: kind == .video)
            }
        }
        for player in players.values { player.mapCodecs(from: self) }
        recording?.start(session, video: publishedCodec(.video), audio: publishedCodec(.audio))
    }

    /// The publisher left (ended, failed, replaced): its recording ends.
    func publisherLeft() {
        publisher = nil
        recording?.stop()
    }

    func attachPlayer(_ session: RelaySession) {
        loop.preconditionInLoop()
        players[session.id] = session
        session.output(.video) { output in
            output.layerPreference = LayerPreference(query: session.param) ?? .high
            output.temporalPreference = temporalCap(query: session.param)
            output.temporal = TemporalLayerFilter(cap: output.temporalPreference)
        }
        session.mapCodecs(from: self)
        for t in session.pc.transceivers {
            let kind = t.kind
            t.sender.onRTCP = { [weak self, weak session] packet in
                guard let self, let session else { return }
                self.feedback(packet, kind: kind, from: session)
            }
        }
    }

    /// What a player's NACK is answered from: for video, the layer it is being sent now.
    private func history(_ kind: MediaKind, for player: RelaySession) -> (history: RTPHistory<[UInt8]>, keyframeStart: UInt16?)? {
        guard kind == .video else { return (audioHistory, nil) }
        guard let source = player.output(.video, { $0.rewriter.currentSource }), let layer = videoLayers[source] else { return nil }
        return (layer.history, layer.keyframeStart)
    }

    // MARK: the forwarding table

    /// The tables as they are now (made again first if anything they copy may have changed).
    func forwardingTable(_ kind: MediaKind) -> [ForwardingRecord] {
        refreshForwarding()
        return kind == .video ? videoTable : audioTable
    }

    private func refreshForwarding() {
        let epoch = ForwardingEpoch.current
        guard epoch != tableEpoch else { return }
        noteForwarded()
        var video: [ForwardingRecord] = [], audio: [ForwardingRecord] = []
        var owners: [AnyObject] = []
        video.reserveCapacity(players.count)
        audio.reserveCapacity(players.count)
        for player in players.values where player.connected {
            for kind in [MediaKind.audio, .video] {
                guard let (sender, pt) = player.route(kind) else { continue }
                let snapshot = sender.forwardingTarget()
                let record = ForwardingRecord(target: snapshot?.target, sender: .passUnretained(sender),
                                              output: player.outputPointer(kind), payloadType: pt)
                owners.append(player)
                owners.append(sender)
                if let snapshot { owners.append(contentsOf: snapshot.owners) }
                if kind == .video { video.append(record) } else { audio.append(record) }
            }
        }
        videoTable = video
        audioTable = audio
        tableOwners = owners
        tableEpoch = epoch
        tableRebuilds += 1
    }

    /// The players changed: the tables go at once (they would keep a departed player alive).
    private func invalidateForwarding() {
        noteForwarded()
        videoTable = []
        audioTable = []
        tableOwners = []
        tableEpoch = nil
    }

    /// Adds what the tables sent since last time to each sender's statistics (in bulk: the
    /// per-packet loop does not touch the senders).
    private func noteForwarded() {
        for table in [audioTable, videoTable] {
            for record in table where record.output.pointee.unnotedPackets > 0 {
                record.sender.takeUnretainedValue().noteForwarded(packets: record.output.pointee.unnotedPackets,
                                                                  bytes: record.output.pointee.unnotedBytes,
                                                                  payloadType: record.payloadType)
                record.output.pointee.unnotedPackets = 0
                record.output.pointee.unnotedBytes = 0
            }
        }
    }

    /// One publisher packet to every player: its header is validated once (`RTPHeaderView`),
    /// then per player written in place with the player's SSRC, continuous sequence number and
    /// timestamp, payload type and extensions, protected, and all of them sent with one sendmmsg.
    private func forward(_ packet: RTPPacket, bytes: [UInt8], kind: MediaKind) {
        loop.preconditionInLoop()
        let now = loop.now
        if reception[packet.ssrc] == nil, reception.count < 8 {
            reception[packet.ssrc] = ReceiverStatistics(ssrc: packet.ssrc, clockRate: kind == .video ? 90000 : 48000)
        }
        reception[packet.ssrc]?.record(packet, arrival: loop.arrivalTime)
        // Back after a silence (an outage, a NAT rebinding): the players lost what was sent into
        // it and resends of it are too late, so a keyframe is asked for at once rather than
        // when the first player's own request comes.
        if let last = lastPublisherPacketAt, now - last >= Self.resumeAfter {
            resumedAt = now
            requestKeyframe(now: now, untilSent: true)
            askAgainUnlessKeyframe(since: now)
            for player in players.values { player.output(.video) { $0.estimate.publisherResumed(now: now) } }
        }
        lastPublisherPacketAt = now
        counters.packetsIn += 1
        counters.bytesIn += bytes.count
        bitrate.add(bytes: bytes.count, now: now)
        // A packet already here: a publisher's probe re-sends recent packets on RTX (libwebrtc's
        // payload padding), and a path may duplicate one. Forwarded, every player on its layer was
        // sent it twice (its SRTP drops the copy as a replay: bytes for nothing), and a player
        // waiting for a keyframe started on one long gone (Chromium re-sent
        // its low layer's keyframe 1.24 s on: a joining player's first frame, then a gap of 26
        // packets it counted as lost). A repair of a packet lost on the way is forwarded (players
        // fill their gap with it) but starts no keyframe: the rest of that one went by already.
        if alreadyHere(packet, kind: kind) {
            counters.duplicatesDropped += 1
            return
        }
        var startsKeyframe = false
        // VP8, read once: simulcast players' PictureID/TL0PICIDX continue across their layer
        // switches, and with temporal layers each player's frames above its layer are left out.
        let vp8 = kind == .video && videoCodec == .vp8 ? packet.payload.withUnsafeBytes { VP8Numbers(payload: $0) } : nil
        let mark: TemporalMark?   // the players' filters' (`forwardingMark`)
        switch kind {
        case .video:
            let inOrder = videoLayers[packet.ssrc]?.newestSequence.map { packet.sequenceNumber.isNewer(than: $0) } ?? true
            startsKeyframe = inOrder && (videoCodec.map { VideoPacketInfo(codec: $0, payload: packet.payload).startsKeyframe } ?? false)
            if startsKeyframe { lastKeyframeAt = now }
            let read = packet.payload.withUnsafeBytes { temporalMark($0, vp8: vp8) }
            noteVideo(packet, bytes: bytes, inOrder: inOrder, startsKeyframe: startsKeyframe, temporalLayer: read?.layer, now: now)
            mark = forwardingMark(read, ssrc: packet.ssrc, vp8: vp8)
        case .audio:
            mark = nil
            audioHistory.store(bytes, sequenceNumber: packet.sequenceNumber, sentAt: now)
            audioRate.add(bytes: bytes.count + Self.audioOverhead, now: now)
        }
        // Simulcast: each player takes one layer, changing to the one its allocator chose at
        // that layer's keyframe (the rewriter keeps its sequence numbers and timestamps continuous).
        let simulcast = kind == .video && videoLayers.isSimulcast
        if simulcast { layersChecked(now: now) }
        if simulcast, startsKeyframe { allocateUnassigned(now: now) }
        let orientation = kind == .video ? orientationID : nil
        let clockRate = clockRate(kind)
        let payloadBytes = UInt32(truncatingIfNeeded: packet.payload.count)
        let table = forwardingTable(kind)
        var sent = 0
        // A player waiting for its layer's keyframe (none yet, or a switch) is sent nothing of
        // it, so its own decoder never asks: the relay asks (throttled) until one comes.
        var waitingFor: [UInt32] = []   // their layers (no allocation while none waits)
        bytes.withUnsafeBytes { raw in
            guard let view = try? RTPHeaderView(raw) else { return }   // parsed once already: cannot fail
            let editsVP8 = rewritesVP8Numbers || vp8?.layer != nil
            table.withUnsafeBufferPointer { records in
                for record in records.prefix(2) { record.prefetch() }
                for (i, record) in records.enumerated() {
                    // Every player's state is cold by the time a packet comes (the last fan-out's
                    // sends flushed it): ask for the player after next's while this one is worked
                    // on, and for what the next one's (now cached) state points at.
                    if i == 0 { records[0].prefetchIndirect() }
                    if i + 2 < records.count { records[i + 2].prefetch() }
                    if i + 1 < records.count { records[i + 1].prefetchIndirect() }
                    let output = record.output
                    if simulcast, output.pointee.layer != view.ssrc {
                        guard startsKeyframe, output.pointee.target == view.ssrc else {
                            if let target = output.pointee.target, target != output.pointee.layer, !waitingFor.contains(target) {
                                waitingFor.append(target)
                            }
                            continue
                        }
                        output.pointee.layer = view.ssrc
                        if let vp8 { output.pointee.vp8.switched(to: vp8) }
                    }
                    let seq: UInt16, ts: UInt32, edit: RTPHeaderPatch.PayloadEdit?
                    switch output.pointee.outgoing(view, vp8: vp8, mark: mark, editsVP8: editsVP8, clockRate: clockRate, now: now) {
                    case .send(let s, let t, let e): (seq, ts, edit) = (s, t, e)
                    case .unplaceable:
                        counters.packetsDropped += 1
                        continue
                    case .aboveLayer: continue
                    }
                    if let target = record.target {
                        switch target.send(view, sequenceNumber: seq, timestamp: ts, payloadType: record.payloadType,
                                           videoOrientationID: orientation, payloadEdit: edit, into: batch, now: now) {
                        case .sent(let length):
                            output.pointee.unnotedPackets += 1
                            output.pointee.unnotedBytes += length
                        case .tooLarge:
                            record.sender._withUnsafeGuaranteedRef { $0.noteForwardingFailure(srtp: false) }
                            continue
                        case .srtpFailed:
                            record.sender._withUnsafeGuaranteedRef { $0.noteForwardingFailure(srtp: true) }
                            continue
                        }
                    } else {
                        let forwarded = record.sender._withUnsafeGuaranteedRef {
                            $0.forward(view, sequenceNumber: seq, timestamp: ts, payloadType: record.payloadType,
                                       videoOrientationID: orientation, payloadEdit: edit, into: batch, now: now)
                        }
                        guard forwarded else { continue }
                    }
                    output.pointee.packetsSent &+= 1
                    output.pointee.octetsSent &+= payloadBytes
                    sent += 1
                    if output.pointee.paddingRatio > 0 || output.pointee.burst != nil {
                        pad(record, with: view, size: bytes.count, sequenceNumber: seq, timestamp: ts, orientation: orientation,
                            edit: edit, now: now)
                    }
                }
            }
        }
        counters.packetsOut += sent
        counters.bytesOut += sent * bytes.count
        batch.flush()
        for layer in waitingFor where keyframeRequests[layer]?.allows(now: now) ?? true {
            requestKeyframe(now: now, layer: layer, forPlayer: true)
        }
        // After the players: the recorder only enqueues it for its own queue.
        if let recording {
            if kind == .audio {
                recording.audio(packet, now: now)
            } else if !simulcast || recordedLayer == packet.ssrc {
                recording.video(packet, now: now)
            } else if recordedLayer == nil, startsKeyframe, videoLayers.choice(.high, in: videoLayers.ranked) == packet.ssrc {
                recordedLayer = packet.ssrc
                recording.video(packet, now: now)
            }
        }
    }

    /// Players' feedback: NACKs are answered from the publisher's history by the player's
    /// sender (`NackResponder`: deduped within the player's RTT, on its RTX stream when it
    /// negotiated rtx), keyframe requests go to the publisher (the player's sender throttles its
    /// own, the stream throttles what reaches the publisher), receiver reports give the RTT.
    private func feedback(_ packet: RTCPPacket, kind: MediaKind, from player: RelaySession) {
        loop.preconditionInLoop()
        let now = loop.now
        switch packet {
        case .nack(let nack):
            guard let (sender, pt) = player.route(kind) else { return }
            let rtt = player.output(kind) { $0.roundTrip.rtt }
            sender.nack.rtt = rtt ?? .milliseconds(100)
            sender.nack.inFlight = rtt   // a repair forwarded since the player asked is on its way
            let clockRate = clockRate(kind)
            let orientation = kind == .video ? orientationID : nil
            guard let (history, keyframeStart) = history(kind, for: player) else { return }
            let before = sender.nack.statistics
            sender.nack.supersededBefore = keyframeStart
            // The player asks by the sequence numbers it saw, which continue across publishers.
            let resends = sender.nack.respond(to: nack.lostSequenceNumbers, from: history, now: now) { output in
                player.output(kind) { $0.rewriter.sourceSequence(forOutput: $0.temporal.input(forOutput: output)) }
            }
            counters.nacksReceived += sender.nack.statistics.requested - before.requested
            counters.retransmissionsSuppressed += sender.nack.statistics.suppressed - before.suppressed
            // Resends come out of what the player's link has beyond its layer (at least a tenth
            // of it): a viewer whose link is full is not sent its stream again in answers.
            let budget = kind == .video ? resendBitrate(for: player, now: now) : nil
            for (_, bytes) in resends {
                if let budget, !player.output(.video, { $0.resendBudget.take(bytes.count, bitrate: budget, now: now) }) {
                    counters.retransmissionsOverBudget += 1
                    continue
                }
                bytes.withUnsafeBytes { raw in
                    guard let view = try? RTPHeaderView(raw), let again = again(view, to: player, kind: kind, clockRate: clockRate, now: now),
                          sender.forward(view, sequenceNumber: again.sequenceNumber, timestamp: again.timestamp, payloadType: pt,
                                         videoOrientationID: orientation, payloadEdit: again.edit, retransmission: true,
                                         into: batch, now: now) else { return }
                    counters.retransmissionsSent += 1
                }
            }
            batch.flush()
        case .pli, .fir:
            // The player's sender first: a FIR repeating its command number is not a new request.
            guard let sender = player.route(.video)?.0, sender.keyframeRequests.handle(packet, now: now) else { return }
            // Simulcast: the layer it is getting, or the one it is to get (waiting for its keyframe).
            requestKeyframe(now: now, layer: player.output(.video) { $0.target ?? $0.layer }, forPlayer: true)
        case .receiverReport(let rr):
            guard let ssrc = player.route(kind)?.0.ssrc else { return }
            var reported = false
            let sending = kind == .video ? sendingRate(of: player, now: now) : 0
            for block in rr.reports where block.ssrc == ssrc {
                reported = true
                player.output(kind) { output in
                    output.roundTrip.handle(block, arrival: now)
                    if kind == .video { output.estimate.report(block, sending: sending, now: now) }
                }
            }
            if kind == .video, reported { allocate(player, now: now) }
        case .remb(let remb) where kind == .video:   // it comes to every sender: taken once
            player.output(.video) { $0.estimate.remb(remb.bitrate) }
            allocate(player, now: now)
        default:
            break
        }
    }

    /// A publisher's packet sent to `player` again (a NACK's answer, a probe's payload): its
    /// numbers in the player's stream and, for VP8 simulcast, the player's PictureID/TL0PICIDX.
    /// Nil when it is from before the player's current source.
    private func again(_ view: RTPHeaderView, to player: RelaySession, kind: MediaKind, clockRate: Int,
                       now: ContinuousClock.Instant) -> (sequenceNumber: UInt16, timestamp: UInt32, edit: RTPHeaderPatch.PayloadEdit?)? {
        guard case (var seq, let ts)? = player.continuous(ssrc: view.ssrc, sequenceNumber: view.sequenceNumber, timestamp: view.timestamp,
                                                kind: kind, clockRate: clockRate, now: now) else { return nil }
        let numbers = kind == .video && videoCodec == .vp8 ? VP8Numbers(payload: view.payload) : nil
        if kind == .video, let mark = peekTemporalMark(view, vp8: numbers) {
            // A layer the player no longer gets is not sent again; the rest where it went out.
            guard let sent = player.output(.video, { $0.temporal.sends(layer: mark.layer) ? $0.temporal.output(forInput: seq) : nil })
            else { return nil }
            seq = sent
        }
        let edit = rewritesVP8Numbers || numbers?.layer != nil
            ? numbers.map { numbers in player.output(.video) { $0.vp8.resend(numbers) } } : nil
        return (seq, ts, edit)
    }

    /// The padding of a probe cluster of `player`'s send-side estimator (`request`): the newest
    /// video packets it was sent no larger than the cluster takes, again on its RTX stream (libwebrtc's
    /// payload padding).
    /// Five full-size copies make a cluster ~50 ms long at 1 Mbit/s; 5 of RTP padding's
    /// ~290-byte packets made it ~12 ms, which packets held up by 10–20 ms on the way (a busy
    /// receiver or emulator) left with no spread to measure (`RelayAllocationTests`, 4 ms of
    /// jitter: 8–19 s back on the high layer before, 3–9 s now). Empty when it was sent none yet
    /// (padding-only packets then).
    func probePadding(for player: RelaySession, _ request: PaddingRequest) -> [(bytes: [UInt8], transportCCID: UInt8)] {
        loop.preconditionInLoop()
        let now = loop.now
        guard players[player.id] === player, let (sender, pt) = player.route(.video), let (history, _) = history(.video, for: player),
              let newest = player.output(.video, { $0.rewriter.lastOutputSequence }) else { return [] }
        let clockRate = clockRate(.video)
        var out: [(bytes: [UInt8], transportCCID: UInt8)] = []
        var total = 0
        for back in 0..<Self.probePaddingReach where total < request.bytes {
            guard let source = player.output(.video, { $0.rewriter.sourceSequence(forOutput: newest &- UInt16(back)) }),
                  let (packet, _) = history.sent(sequenceNumber: source), packet.count + 2 <= request.largestPacket else { continue }
            let copy = packet.withUnsafeBytes { raw -> (bytes: [UInt8], transportCCID: UInt8)? in
                guard let view = try? RTPHeaderView(raw), let again = again(view, to: player, kind: .video, clockRate: clockRate, now: now)
                else { return nil }
                return sender.paddingCopy(of: view, sequenceNumber: again.sequenceNumber, timestamp: again.timestamp, payloadType: pt,
                                          videoOrientationID: orientationID, payloadEdit: again.edit)
            }
            guard let copy else { continue }
            out.append(copy)
            total += copy.bytes.count
        }
        counters.paddingSent += out.count
        return out
    }

    /// How many of a player's newest packets a probe's padding may copy.
    static let probePaddingReach = 32

    /// Sender reports to every player, per kind: the publisher's NTP ↔ RTP mapping in the
    /// player's rewritten timestamps (so it can line audio up with video), with this player's
    /// packet and octet counts; its receiver reports on them give its RTT.
    func sendPlayerReports(now: ContinuousClock.Instant) {
        loop.preconditionInLoop()
        noteForwarded()
        releasePlayersFromStoppedLayers(now: now)
        for player in players.values where player.connected {
            allocate(player, now: now)
            var reports: [SenderReport] = []
            var cname: String?
            for kind in [MediaKind.audio, .video] {
                let output = player.output(kind) { $0 }
                guard let (sender, _) = player.route(kind), let source = output.rewriter.currentSource,
                      let translator = senderReports[kind]?[source], let offset = output.rewriter.timestampOffset(forSource: source),
                      let sr = translator.report(ssrc: sender.ssrc, source: source, timestampOffset: offset,
                                                 packetCount: output.packetsSent, octetCount: output.octetsSent, now: now) else { continue }
                player.output(kind) { $0.roundTrip.sent(sr, at: now) }
                reports.append(sr)
                cname = cname ?? sender.cname
            }
            let packets = RTCPReportComposer.compound(senderReports: reports, receptionBlocks: [], reporterSSRC: nil, cname: cname)
            if !packets.isEmpty { player.pc.sendRTCP(packets) }
        }
    }

    /// Receiver reports (loss, jitter) and a REMB to the publisher: without any feedback a
    /// browser stays at its start bitrate (about 300 kbit/s).
    func sendPublisherFeedback(maxBitrate: UInt64, now: ContinuousClock.Instant) {
        guard let publisher, publisher.connected,
              let t = publisher.pc.transceivers.first(where: { $0.currentDirection?.receives == true }) else { return }
        let blocks = reception.keys.sorted().compactMap { reception[$0]?.receptionReport(now: now) }
        var packets = RTCPReportComposer.compound(senderReports: [], receptionBlocks: blocks, reporterSSRC: t.sender.ssrc,
                                                  cname: t.sender.cname)
        guard !packets.isEmpty else { return }
        let video = publisher.pc.transceivers.filter { $0.kind == .video }.flatMap { $0.receiver.remoteSSRCs }
        if !video.isEmpty { packets.append(.remb(REMB(senderSSRC: t.sender.ssrc, bitrate: maxBitrate, ssrcs: video.sorted()))) }
        publisher.pc.sendRTCP(packets)
    }

    /// The request made on a publisher's return can be lost (on the way back, or sent to the old
    /// port of a NAT rebinding: that case is asked again when the path moves, `publisherPathMoved`).
    /// Asked once more unless a keyframe started meanwhile.
    private func askAgainUnlessKeyframe(since requested: ContinuousClock.Instant) {
        loop.schedule(at: requested + Self.resumeRetry) { [weak self] in
            guard let self, self.publisher != nil, self.lastKeyframeAt.map({ $0 < requested }) ?? true else { return }
            self.requestKeyframe(now: self.loop.now, untilSent: true)
        }
    }

    /// The publisher's path moved (a NAT rebinding): the request made on its return went to the
    /// old port unless a keyframe has come since, so it is made again now (not held back by the
    /// lost one's throttle) rather than at the retry (`resumeRetry`).
    func publisherPathMoved(now: ContinuousClock.Instant) {
        loop.preconditionInLoop()
        guard let resumedAt, now - resumedAt < .seconds(5), lastKeyframeAt.map({ $0 < resumedAt }) ?? true else { return }
        for ssrc in keyframeRequests.keys { keyframeRequests[ssrc]?.lastRequestLost() }
        requestKeyframe(now: now, untilSent: true)
    }

    /// PLI to the publisher (throttled per SSRC: the keyframe on its way answers players that
    /// ask meanwhile), e.g. when a player joins. `layer`: the simulcast layer (SSRC) wanted; nil,
    /// or one the publisher no longer sends: every layer (a player not yet on one, the
    /// publisher back after a silence). `untilSent` (a player joining, or a publisher taking
    /// over): a request the throttle holds back goes out when the throttle allows, since the
    /// keyframe that was on its way may have passed before this player was there to get it (a
    /// viewer back on a new session would wait for the next request of someone else).
    /// `forPlayer`: a player's join or request (a keyframe it brings may be replayed to the next
    /// player that joins, `replayKeyframe`).
    func requestKeyframe(now: ContinuousClock.Instant, untilSent: Bool = false, layer: UInt32? = nil, forPlayer: Bool = false) {
        loop.preconditionInLoop()
        guard let publisher, let t = publisher.pc.transceivers.first(where: { $0.kind == .video }),
              let source = t.receiver.remoteSSRCs.min() else { return }
        let all = videoLayers.isSimulcast ? Set(videoLayers.bySSRC.keys).union([source]) : [source]
        if keyframeRequests.keys.contains(where: { !all.contains($0) }) {
            keyframeRequests = keyframeRequests.filter { all.contains($0.key) }
            keyframeAskedAt = keyframeAskedAt.filter { all.contains($0.key) }
        }
        var plis: [RTCPPacket] = []
        for ssrc in layer.flatMap({ all.contains($0) ? [$0] : nil }) ?? all.sorted() {
            let pli = RTCPPacket.pli(senderSSRC: t.sender.ssrc, mediaSSRC: ssrc)
            var tracker = keyframeRequests[ssrc] ?? KeyframeRequestTracker(ssrc: ssrc)
            let asks = tracker.handle(pli, now: now)
            keyframeRequests[ssrc] = tracker
            if asks {
                plis.append(pli)
                keyframeAskedAt[ssrc] = (now, forPlayer)
            } else if untilSent, !keyframeRetryScheduled.contains(ssrc), let next = tracker.nextAllowed {
                keyframeRetryScheduled.insert(ssrc)
                loop.schedule(at: next + Self.publisherWindowSlack) { [weak self] in
                    guard let self else { return }
                    self.keyframeRetryScheduled.remove(ssrc)
                    // A keyframe that started since reached whoever was waiting.
                    if let started = self.videoLayers[ssrc]?.keyframeAt, started > now { return }
                    self.requestKeyframe(now: self.loop.now, untilSent: true, layer: ssrc, forPlayer: forPlayer)
                }
            }
        }
        if !plis.isEmpty { publisher.pc.sendRTCP(plis) }
    }

    /// A player connected: it is sent its layer's keyframe that just went by (`replayKeyframe`),
    /// or else one is asked for (held back until the publisher's window allows it).
    func playerConnected(_ player: RelaySession, now: ContinuousClock.Instant) {
        loop.preconditionInLoop()
        if replayKeyframe(to: player, now: now) { return }
        requestKeyframe(now: now, untilSent: true, forPlayer: true)
    }

    /// How long after a keyframe started a joining player is sent it from the history: the
    /// publisher's window (a request inside it is dropped there), seen from here.
    static let replayReach: Duration = KeyframeRequestTracker.defaultInterval + publisherWindowSlack
    /// At most this many packets are replayed (a keyframe and the window's frames at ~8 Mbit/s).
    static let replayLimit = 400
    /// The keyframe replayed answered a player's request made at most this long before it.
    static let replayAnswerWithin: Duration = .seconds(1)

    /// A player that connects just after its layer's keyframe went by would wait out the
    /// publisher's window (it drops requests for 300 ms after a keyframe): the second of two
    /// viewers back from an outage saw video 0.43 s after the path returned, the first 0.1 s.
    /// So it is sent that keyframe and the packets since from the history at once: frames at most
    /// the window old, which a receiver shows as they complete, then it plays on live. Only for a
    /// keyframe another player's join or request brought (viewers arriving together): the video
    /// of one starts up to the window before its audio, and Chromium drops the stale frames it
    /// skips (a lone viewer of a publisher that had just started got both). Not when a request
    /// was made since that keyframe (the one on its way serves this player too), nor after the
    /// window (a request goes out at once then). True when it was sent.
    private func replayKeyframe(to player: RelaySession, now: ContinuousClock.Instant) -> Bool {
        guard players[player.id] === player, let (sender, pt) = player.route(.video), let videoCodec,
              player.output(.video, { $0.rewriter.currentSource }) == nil else { return false }
        let simulcast = videoLayers.isSimulcast
        if simulcast { allocate(player, now: now) }
        let chosen = simulcast ? player.output(.video) { $0.target } : videoLayers.bySSRC.count == 1 ? videoLayers.bySSRC.first?.key : nil
        guard let ssrc = chosen, let layer = videoLayers[ssrc], let start = layer.keyframeStart, let at = layer.keyframeAt,
              let newest = layer.newestSequence, now - at <= Self.replayReach,
              !(keyframeRequests[ssrc]?.allows(now: now) ?? true),
              let asked = keyframeAskedAt[ssrc], asked.forPlayer, asked.at <= at, at - asked.at < Self.replayAnswerWithin,
              case let count = Int(newest &- start) + 1, count <= Self.replayLimit,
              layer.history.packet(sequenceNumber: start) != nil else { return false }
        let clockRate = clockRate(.video)
        if simulcast { player.output(.video) { $0.layer = ssrc } }
        var sent = 0
        for i in 0..<count {
            // One lost on the way (its repair not here yet) is left out: the player NACKs it.
            guard let bytes = layer.history.packet(sequenceNumber: start &+ UInt16(i)) else { continue }
            bytes.withUnsafeBytes { raw in
                guard let view = try? RTPHeaderView(raw) else { return }
                let vp8 = videoCodec == .vp8 ? VP8Numbers(payload: view.payload) : nil
                // Simulcast: its PictureID/TL0PICIDX continue from this layer's keyframe, as at a switch.
                if i == 0, simulcast, let vp8 { player.output(.video) { $0.vp8.switched(to: vp8) } }
                let editsVP8 = rewritesVP8Numbers || vp8?.layer != nil
                let mark = peekTemporalMark(view, vp8: vp8)
                guard case .send(let seq, let ts, let edit) = player.output(.video, {
                          $0.outgoing(view, vp8: vp8, mark: mark, editsVP8: editsVP8, clockRate: clockRate, now: now)
                      }),
                      sender.forward(view, sequenceNumber: seq, timestamp: ts, payloadType: pt, videoOrientationID: orientationID,
                                     payloadEdit: edit, into: batch, now: now) else { return }
                player.output(.video) { output in
                    output.packetsSent &+= 1
                    output.octetsSent &+= UInt32(truncatingIfNeeded: view.payload.count)
                }
                sent += 1
                counters.bytesOut += bytes.count
            }
        }
        batch.flush()
        counters.packetsOut += sent
        guard sent > 0 else { return false }
        counters.keyframesReplayed += 1
        log?("replay: player \(player.id) of \(id) sent the keyframe of \(Int((now - at) / .milliseconds(1))) ms ago and \(sent - 1) packets since")
        return true
    }

    /// A publisher video packet into its layer: the history, and from a keyframe where it
    /// starts and the picture's size. `inOrder`: ahead of its newest (which it becomes).
    private func noteVideo(_ packet: RTPPacket, bytes: [UInt8], inOrder: Bool, startsKeyframe: Bool, temporalLayer: UInt8?,
                           now: ContinuousClock.Instant) {
        let ssrc = packet.ssrc
        let receiver = videoLayers.isSimulcast ? videoReceiver : nil
        guard videoLayers.touch(ssrc, rid: receiver?.rid(ofSSRC: ssrc)) else { return }
        if videoLayers.firstPacketAt == nil { videoLayers.firstPacketAt = now }
        videoLayers[ssrc]?.history.store(bytes, sequenceNumber: packet.sequenceNumber, sentAt: now)
        if inOrder { videoLayers[ssrc]?.newestSequence = packet.sequenceNumber }
        videoLayers[ssrc]?.lastPacketAt = now
        videoLayers[ssrc]?.meter.add(bytes: bytes.count, now: now)
        if let tid = temporalLayer {
            let i = Int(tid), have = videoLayers[ssrc]?.temporalMeters.count ?? 0
            if have <= i { videoLayers[ssrc]?.temporalMeters += Array(repeating: BitrateMeter(), count: i + 1 - have) }
            videoLayers[ssrc]?.temporalMeters[i].add(bytes: bytes.count, now: now)
        }
        // H.264 marks more than one packet of a keyframe so (a STAP-A with SPS and PPS, then the
        // IDR's first FU-A): the keyframe starts at the first. From the second, a replay to a
        // joining player began without SPS and PPS (undecodable: it waited 0.35 s for a keyframe
        // of its own), and a NACK for the first was "superseded" and never answered.
        let newKeyframe = startsKeyframe && videoLayers[ssrc]?.keyframeTimestamp != packet.timestamp
        if newKeyframe {
            videoLayers[ssrc]?.keyframeTimestamp = packet.timestamp
            videoLayers[ssrc]?.keyframeAt = now
        }
        // A publisher drops requests for 300 ms after a keyframe leaves (ours and libwebrtc's
        // throttle): one made then is lost, and a player joining just after a keyframe passed
        // waited for its own request (0.75 s after a 40 s outage). So the window is mirrored
        // here from the keyframe's packets, and a held-back join request goes after it.
        if packet.timestamp == videoLayers[ssrc]?.keyframeTimestamp {
            keyframeRequests[ssrc, default: KeyframeRequestTracker(ssrc: ssrc)].keyframeQueued(leavingBy: now)
        }
        guard startsKeyframe || videoLayers[ssrc]?.size == nil else { return }
        if newKeyframe { videoLayers[ssrc]?.keyframeStart = packet.sequenceNumber }
        if let codec = publishedCodec(.video), let size = keyframeSize(codec: codec.mimeType, payload: packet.payload) {
            videoLayers[ssrc]?.size = size
            videoSize = videoLayers.largestSize
        }
    }

    /// Whether this packet (SSRC and sequence number) is in the history already.
    private func alreadyHere(_ packet: RTPPacket, kind: MediaKind) -> Bool {
        let stored = kind == .video ? videoLayers[packet.ssrc]?.history.packet(sequenceNumber: packet.sequenceNumber)
            : audioHistory.packet(sequenceNumber: packet.sequenceNumber)
        guard let stored, stored.count >= 12 else { return false }
        return stored[8..<12].reduce(UInt32(0)) { $0 << 8 | UInt32($1) } == packet.ssrc
    }

    /// Simulcast, on the publisher's packets (at most every `layerCheckInterval`): a layer that
    /// went silent `VideoLayers.stoppedAfter` ago, or sends again, moves its players now, not at
    /// the next round of sender reports (up to a second later: with a publisher's uplink cut to
    /// 700 kbit/s its player waited 3.1 s for another layer, the interop check allows 3).
    private func layersChecked(now: ContinuousClock.Instant) {
        if let last = layersCheckedAt, now - last < Self.layerCheckInterval { return }
        layersCheckedAt = now
        guard videoLayers.retirementChanged(silentSince: now - VideoLayers.stoppedAfter) else { return }
        releasePlayersFromStoppedLayers(now: now)
        for player in players.values where player.connected { allocate(player, now: now) }
    }

    /// Simulcast: a layer the publisher stopped sending (its estimate no longer carries it) is
    /// no longer chosen, and its players wait for the keyframe of the one they get now.
    private func releasePlayersFromStoppedLayers(now: ContinuousClock.Instant) {
        guard videoLayers.isSimulcast else { return }
        videoLayers.retire(silentSince: now - VideoLayers.stoppedAfter)
        for player in players.values {
            player.output(.video) { output in
                if let layer = output.layer, videoLayers[layer]?.retired ?? true { output.layer = nil }
            }
        }
    }

    /// The most a publisher is asked to send (its REMB), all layers together.
    static let publisherMaxBitrate = 5_000_000
    /// The bound of a player's send-side estimate: any one layer fits under it.
    static let playerMaxBitrate = Int(Double(publisherMaxBitrate) / LayerAllocator.headroom)

    /// Whether a player can be given less than the whole stream: simulcast, or VP8 temporal
    /// layers (known from its packets so far).
    var publishesLayers: Bool { videoLayers.isSimulcast || publishesTemporalLayers }

    private var publishesTemporalLayers: Bool {
        videoLayers.bySSRC.values.contains { $0.hasTemporalLayers }
    }

    /// A publisher video packet's temporal layer: VP8's from its payload descriptor, H.264's
    /// from nal_ref_idc (`H264TemporalReader`).
    private func temporalMark(_ payload: UnsafeRawBufferPointer, vp8: VP8Numbers?) -> TemporalMark? {
        if let vp8 { return vp8.temporalMark }
        return videoCodec == .h264 ? H264TemporalReader.mark(payload) : nil
    }

    /// The mark players' filters take: an H.264 stream that has shown one layer only (every
    /// slice referenced) is not filtered per player.
    private func forwardingMark(_ mark: TemporalMark?, ssrc: UInt32, vp8: VP8Numbers?) -> TemporalMark? {
        vp8 != nil || videoLayers[ssrc]?.hasTemporalLayers == true ? mark : nil
    }

    /// The temporal layer of a packet sent before (a resend, a replay), as players' filters take it.
    private func peekTemporalMark(_ view: RTPHeaderView, vp8: VP8Numbers?) -> TemporalMark? {
        forwardingMark(temporalMark(view.payload, vp8: vp8), ssrc: view.ssrc, vp8: vp8)
    }

    /// `player`'s transport-cc feedback moved its send-side estimate: it replaces its REMB.
    func sendSideEstimate(_ estimate: SendSideEstimate, of player: RelaySession) {
        guard players[player.id] === player else { return }
        player.output(.video) {
            $0.estimate.sendSide(estimate.bitrate, settled: estimate.settled, delivered: estimate.delivered,
                                 verified: estimate.verified, loss: estimate.loss)
        }
        allocate(player, now: loop.now)
    }

    /// One choice of the allocator: a spatial layer (SSRC), whole or up to a temporal layer.
    private struct Rung {
        /// The allocator's name for it: the SSRC, or for a temporal choice one made from it.
        let id: UInt32
        let ssrc: UInt32
        let temporal: UInt8?
        let bitrate: Int
    }

    /// What `player` may be given, smallest first: the spatial layers up to the one it asked
    /// for and below the smallest of them its temporal layers up to TL0 and TL1 — half or a
    /// quarter of the frames is better than a frozen picture, and needs no keyframe to change.
    /// Not on an early estimate ("link full" before the estimator settled): it moves a player
    /// to the smallest choice at once. Under a simulcast's smallest layer only as `thins` says.
    private func rungs(for player: RelaySession, audio: Int, now: ContinuousClock.Instant) -> [Rung]? {
        let spatial: [VideoLayer]
        if videoLayers.isSimulcast {
            let ranked = videoLayers.ranked
            guard let cap = videoLayers.choice(player.output(.video, { $0.layerPreference }), in: ranked),
                  let capIndex = ranked.firstIndex(where: { $0.ssrc == cap }) else { return nil }
            spatial = Array(ranked[...capIndex])
        } else {
            let long = now - .seconds(60)
            guard let only = videoLayers.bySSRC.values.max(by: { ($0.lastPacketAt ?? long) < ($1.lastPacketAt ?? long) })
            else { return nil }
            spatial = [only]
        }
        var rungs: [Rung] = []
        if let lowest = spatial.first, player.output(.video, { output in
            output.temporalPreference == nil && !output.estimate.provisional
                && (!videoLayers.isSimulcast || Self.thins(&output, lowest: lowest, audio: audio, now: now))
        }) {
            for (tid, rate) in lowest.temporalRates(now: now).enumerated() {
                let id = lowest.ssrc ^ (Self.temporalRungTag | UInt32(tid))
                guard videoLayers[id] == nil else { break }   // a real SSRC: no name for it
                rungs.append(Rung(id: id, ssrc: lowest.ssrc, temporal: UInt8(tid), bitrate: rate))
            }
        }
        return rungs + spatial.map { Rung(id: $0.ssrc, ssrc: $0.ssrc, temporal: nil, bitrate: $0.meter.recentKbps(now: now) * 1000) }
    }

    static let temporalRungTag: UInt32 = 0x7E5A_0100

    /// Bits per second of `player`'s link its audio takes (none if it gets none): its estimate
    /// and what its link delivered, less this, is what its video has.
    private func audioShare(of player: RelaySession, now: ContinuousClock.Instant) -> Int {
        player.route(.audio) == nil ? 0 : audioRate.recentKbps(now: now) * 1000
    }

    /// Whether a simulcast player may be given less than the smallest layer's every frame: it
    /// is on that layer and its link evidently does not carry it — for `thinHold` it delivered
    /// under `carriedShare` of the layer or lost more than `lowLoss` of what it was sent (its
    /// transport-cc feedback), or loss sets its estimate (its reports) — or it is on one of that
    /// layer's temporal choices already. A low estimate alone is not enough: a clean player
    /// whose first estimates were low (a busy receiver's feedback at its join: 248 kbit/s early,
    /// 165 settled while l was still ramping) went to l/T0 and played 5–7 fps for seconds (CI,
    /// 2 of 4 `test_simulcast` runs); nor is one reading (a clean join reads ~0.82 of its layer).
    private static func thins(_ output: inout PlayerOutput, lowest: VideoLayer, audio: Int, now: ContinuousClock.Instant) -> Bool {
        guard output.target == lowest.ssrc, output.temporal.cap == nil else {
            output.underLayerSince = nil
            return output.target == lowest.ssrc
        }
        let estimate = output.estimate
        if estimate.limitedByLoss || estimate.lossy { return true }
        let rate = Double(lowest.meter.recentKbps(now: now) * 1000)
        let under = estimate.delivered.map { Double($0 - audio) < rate * LayerAllocator.carriedShare } ?? false
        guard under || estimate.linkLoss > ViewerEstimate.lowLoss else {
            output.underLayerSince = nil
            return false
        }
        let since = output.underLayerSince ?? Moment(now)
        output.underLayerSince = since
        return Moment(now) - since >= Self.thinHold
    }

    static let thinHold: Duration = .seconds(1)

    /// The layer `player` is to get now (`LayerAllocator`: the largest up to the one it asked
    /// for that its estimate carries), and the padding of a probe for the next: a simulcast's
    /// spatial layers, or one stream's temporal layers (`rungs`).
    private func allocate(_ player: RelaySession, now: ContinuousClock.Instant) {
        guard publishesLayers else { return }
        if player.output(.video, { $0.target }) == nil, videoLayers.isSimulcast, !videoLayers.isComplete(now: now) { return }
        let audio = audioShare(of: player, now: now)
        guard let rungs = rungs(for: player, audio: audio, now: now), rungs.count > 1 || videoLayers.isSimulcast else { return }
        let layers = rungs.map { LayerAllocator.Layer(ssrc: $0.id, bitrate: $0.bitrate) }
        let switched: (from: UInt32?, to: UInt32, estimate: String)? = player.output(.video) { output in
            let current = output.target.flatMap { target in
                rungs.first { $0.ssrc == target && $0.temporal == (output.temporalPreference == nil ? output.temporal.cap : nil) }?.id
            }
            guard let decision = output.allocator.decide(layers: layers, current: current,
                                                         estimate: output.estimate.bitrate.map { max(0, $0 - audio) },
                                                         limitedByLoss: output.estimate.limitedByLoss,
                                                         provisional: output.estimate.provisional,
                                                         delivered: output.estimate.delivered.map { max(0, $0 - audio) },
                                                         verified: output.estimate.verified.map { max(0, $0 - audio) }, now: now),
                  let rung = rungs.first(where: { $0.id == decision.ssrc })
            else { return nil }
            let previous = current
            output.target = rung.ssrc
            if output.temporalPreference == nil { output.temporal.cap = rung.temporal }
            // Nothing more of the current layer: the player waits for the new one's keyframe.
            if decision.stopCurrent, output.layer != rung.ssrc { output.layer = nil }
            let rate = layers.first { $0.ssrc == decision.ssrc }?.bitrate ?? 0
            let ratio = { (padding: Int) in rate > 0 ? min(Self.maxPaddingRatio, Double(padding) / Double(rate)) : 0 }
            output.paddingRatio = ratio(decision.padding)
            output.burst = decision.burst.map { (ratio($0.padding), Moment($0.until)) }
            if output.paddingRatio == 0, output.burst == nil { output.paddingOwed = 0 }
            guard previous != decision.ssrc else { return nil }
            // Why, for the log: an early estimate (the link is full) or one loss set.
            let estimate = output.estimate
            let why = estimate.provisional ? ", early: link full" : estimate.limitedByLoss ? ", from loss" : ""
            return (previous, decision.ssrc, estimate.bitrate.map { "\($0 / 1000) kbps\(why)" } ?? "none yet")
        }
        // What the layer it asked for needs: while its estimate is below that (below the layer,
        // or on it and holding) its estimator probes more often.
        let largest = layers.last.map { Int(Double($0.bitrate) / LayerAllocator.headroom) }
        player.route(.video)?.0.wantSendSide(largest)
        if let switched, let log {
            let name = { (id: UInt32?) -> String in
                guard let rung = rungs.first(where: { $0.id == id }) else { return "-" }
                let layer = self.videoLayers[rung.ssrc]?.rid ?? "video"
                return rung.temporal.map { "\(layer)/T\($0)" } ?? layer
            }
            let rates = layers.map { "\(name($0.ssrc)) \($0.bitrate / 1000)" }.joined(separator: ", ")
            log("serve: player \(player.id) layer \(name(switched.from)) → \(name(switched.to)) (\(id); estimate "
                + "\(switched.estimate); layers \(rates) kbps)")
        }
    }

    /// Padding at most this many times the layer's own rate (a low layer probing for a high one).
    static let maxPaddingRatio = 8.0

    /// Players with no layer decided yet (joined before the layers were known).
    private func allocateUnassigned(now: ContinuousClock.Instant) {
        for player in players.values where player.connected && player.output(.video, { $0.target }) == nil {
            allocate(player, now: now)
        }
    }

    /// Padding for a probing player, after a packet of its layer was sent to it: that packet
    /// again, as a retransmission (on its RTX stream when negotiated), as many times as the
    /// probe's share owes. The receiver counts it towards what it estimates and discards it.
    private func pad(_ record: ForwardingRecord, with view: RTPHeaderView, size: Int, sequenceNumber: UInt16, timestamp: UInt32,
                     orientation: UInt8?, edit: RTPHeaderPatch.PayloadEdit?, now: ContinuousClock.Instant) {
        let output = record.output
        if let burst = output.pointee.burst, Moment(now) >= burst.until { output.pointee.burst = nil }
        let ratio = output.pointee.burst?.ratio ?? output.pointee.paddingRatio
        output.pointee.paddingOwed = min(output.pointee.paddingOwed + ratio * Double(size),
                                         (Self.maxPaddingRatio + 1) * Double(size))
        while output.pointee.paddingOwed >= Double(size) {
            output.pointee.paddingOwed -= Double(size)
            let sent = record.sender._withUnsafeGuaranteedRef {
                $0.forward(view, sequenceNumber: sequenceNumber, timestamp: timestamp, payloadType: record.payloadType,
                           videoOrientationID: orientation, payloadEdit: edit, retransmission: true, into: batch, now: now)
            }
            guard sent else { return }
            counters.paddingSent += 1
        }
    }

    /// Bits per second `player`'s resends may take once its reports show a full link (over 10%
    /// stays lost after resends, which random loss of a few percent cannot reach however its
    /// resends are held): what its estimate has beyond its layer, at least a tenth of the
    /// estimate. Nil (no limit) otherwise. Limiting before that evidence (a tenth of a
    /// receiver's first REMBs, or a quarter of the layer) starved Chromium's NACK answers at 5%
    /// random loss in 1 of 3 runs (CI: 235 answers over budget, 84% of frames decoded).
    private func resendBitrate(for player: RelaySession, now: ContinuousClock.Instant) -> Int? {
        let (estimate, lossy) = player.output(.video) { ($0.estimate.bitrate, $0.estimate.lossy) }
        guard let estimate, lossy else { return nil }
        return max(estimate - sendingRate(of: player, now: now), estimate / 10)
    }

    /// Bits per second of the layer `player` is sent now (0 before its first packet).
    private func sendingRate(of player: RelaySession, now: ContinuousClock.Instant) -> Int {
        let (source, cap) = player.output(.video) { ($0.rewriter.currentSource, $0.temporal.current) }
        guard let source, let layer = videoLayers[source] else { return 0 }
        // Up to a temporal layer: that share of it.
        if let cap, case let rates = layer.temporalRates(now: now), Int(cap) < rates.count { return rates[Int(cap)] }
        return layer.meter.recentKbps(now: now) * 1000
    }

    /// VP8 simulcast: each player's PictureID/TL0PICIDX are its own (`VP8Numbering`).
    private var rewritesVP8Numbers: Bool { videoLayers.isSimulcast && videoCodec == .vp8 }

    /// The rid of the simulcast layer `player` is sent; nil without simulcast or before its first.
    func layerRID(of player: RelaySession) -> String? {
        guard videoLayers.isSimulcast, let ssrc = player.output(.video, { $0.layer }) else { return nil }
        return videoLayers[ssrc]?.rid
    }

    /// The publisher's simulcast layers as the API shows them (smallest first); empty without.
    /// `keyframeRequests`: PLIs sent to the publisher for the layer (the current publisher's).
    var layers: [(rid: String, width: Int?, height: Int?, kbps: Int, keyframeRequests: Int)] {
        guard videoLayers.isSimulcast else { return [] }
        return videoLayers.ranked.map {
            ($0.rid ?? "", $0.size?.width, $0.size?.height, $0.meter.kbps(now: loop.now), keyframeRequests[$0.ssrc]?.keyframesRequested ?? 0)
        }
    }
}

/// One destination in a stream's forwarding table: a connected player's route of one kind.
/// Trivial: what it points at is kept alive by the table's owners.
struct ForwardingRecord {
    /// The fast path's snapshot of the player's sender and transport; nil: through
    /// `RtpSender.forward(_:…into:)` (no keys or path yet, TURN, transport-cc).
    let target: RtpForwardingTarget?
    let sender: Unmanaged<RtpSender>
    /// The player's `PlayerOutput` of this kind (rewriter, counts).
    let output: UnsafeMutablePointer<PlayerOutput>
    /// The payload type the player numbered the publisher's codec with.
    let payloadType: UInt8

    /// Brings what forwarding to this player touches into cache, without waiting for it.
    @inline(__always)
    func prefetch() {
        swiftrtc_prefetch(output, 3)   // the counters and rewriter; not the estimate or allocator
        guard let target else { return }
        let set = target.workingSet
        swiftrtc_prefetch(set.session, 1)
        swiftrtc_prefetch(set.engine, 2)
        swiftrtc_prefetch(set.cipher, 3)
        if let congestion = target.congestion {
            swiftrtc_prefetch(congestion.toOpaque(), CongestionController.forwardingLines)
        }
    }

    /// After `prefetch` had its time: what the transport-cc stamp will write, found through
    /// the (by now cached) congestion controller — its send history's header and next slot.
    @inline(__always)
    func prefetchIndirect() {
        guard let hints = target?.congestion?._withUnsafeGuaranteedRef({ $0.forwardingHints }) else { return }
        swiftrtc_prefetch(hints.header, 1)
        swiftrtc_prefetch(hints.tail, 1)
    }
}

/// Bytes over a sliding window of about two seconds, bucketed by whole seconds of the loop's
/// clock.
struct BitrateMeter {
    private var buckets: [(second: Int64, bytes: Int)] = []
    private var origin: ContinuousClock.Instant?

    private mutating func second(_ now: ContinuousClock.Instant) -> Int64 {
        let start = origin ?? now
        origin = start
        return (now - start).components.seconds
    }

    mutating func add(bytes: Int, now: ContinuousClock.Instant) {
        let second = second(now)
        if let last = buckets.last, last.second == second {
            buckets[buckets.count - 1].bytes += bytes
        } else {
            buckets.append((second, bytes))
            if buckets.count > 4 { buckets.removeFirst() }
        }
    }

    /// The larger of the last complete second's kbit/s and `kbps(now:)`: a stream that is
    /// ramping up (a browser turning a simulcast layer on) is not taken for smaller than it is.
    func recentKbps(now: ContinuousClock.Instant) -> Int {
        guard let origin else { return 0 }
        let last = (now - origin).components.seconds - 1
        let bytes = buckets.last { $0.second == last }?.bytes ?? 0
        return max(bytes * 8 / 1000, kbps(now: now))
    }

    /// kbit/s over the last two complete seconds before `now`.
    func kbps(now: ContinuousClock.Instant) -> Int {
        guard let origin else { return 0 }
        let current = (now - origin).components.seconds
        let total = buckets.filter { $0.second < current && $0.second >= current - 2 }.reduce(0) { $0 + $1.bytes }
        return total * 8 / 2 / 1000
    }
}
