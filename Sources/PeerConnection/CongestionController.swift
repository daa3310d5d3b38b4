import BandwidthEstimation
import ICE
import RTP
import RTPMedia
import Synchronization
import Transport

/// How an outgoing RTP packet is treated on its way out.
enum OutgoingRTPKind: Sendable {
    /// Encoded video: paced.
    case video
    /// Encoded audio: never waits behind video.
    case audio
    /// A packet resent for a NACK: ahead of new video.
    case retransmission
    /// Raw RTP from the application and forwarded packets: sent at once (a relay cannot slow
    /// down its publisher's stream, only pass it on).
    case direct
}

/// The connection's bandwidth estimate for its video encoders, readable from their queues.
final class NetworkTarget: Sendable {
    private let estimate = Atomic<Int>(0)
    private let settled = Atomic<Bool>(false)
    private let queueMicros = Atomic<Int>(0)
    /// How long the oldest packet in the pacer's queue has waited.
    var queueDelay: Duration { .microseconds(queueMicros.load(ordering: .relaxed)) }
    func setQueueDelay(_ d: Duration) {
        queueMicros.store(Int(d.components.seconds) * 1_000_000 + Int(d.components.attoseconds / 1_000_000_000_000), ordering: .relaxed)
    }
    /// 0: no estimate (the peer gives no transport-cc or REMB feedback): encoders use their
    /// own defaults.
    var bitrate: Int { estimate.load(ordering: .relaxed) }
    /// Whether the estimate rests on feedback and the start-up probes had their time: only then
    /// may it lower the resolution or the frame rate (the unconfirmed start bitrate may not).
    var isSettled: Bool { settled.load(ordering: .relaxed) }
    func set(_ bps: Int, settled: Bool) {
        estimate.store(bps, ordering: .relaxed)
        self.settled.store(settled, ordering: .relaxed)
    }
}

/// The connection's transport-wide congestion control, on its loop thread (the chain of
/// stages between the streams and SRTP): paces media, stamps transport-wide sequence numbers
/// as packets leave, feeds the GCC estimator with what was sent and what the peer's
/// transport-cc feedback, REMB and receiver reports say, publishes the estimate to the video
/// encoders, and sends transport-cc feedback about what we receive.
package final class CongestionController {
    /// Weak: pacer and tick timers may fire after the transport is gone (a relay session that
    /// ended with packets queued); they then find no transport and send nothing.
    private weak var transport: MediaTransport?
    private let loop: EventLoop
    // The forwarding stamp's fields first, then the estimator (its send history first): a relay
    // stamps one packet per player per forwarded packet, and these lines are what its fan-out
    // prefetches (`forwardingLines`, `forwardingHints`).
    private var nextTransportSequence: UInt16 = 1
    private var firstSent: Moment?
    /// Where the next stamp writes in the estimator's send history (hints, never dereferenced).
    package private(set) var forwardingHints: (header: UnsafeRawPointer?, tail: UnsafeRawPointer?) = (nil, nil)
    private var estimator: BandwidthEstimator
    /// The video encoders' share of the estimate.
    let network = NetworkTarget()
    private var pacer: Pacer
    private var recorder = TransportCCRecorder()
    private var pacerTimer: Int?
    private var ticking = false
    /// Whether the peer gives feedback an estimate can be built on (transport-cc or REMB);
    /// without it nothing is paced and encoders keep their own rates.
    private(set) var estimating = false
    private var receiveExtensionIDs: Set<UInt8> = []
    /// Receive-side estimate of the peer's video for REMB (nil: not wanted).
    private var remoteEstimator: RemoteBitrateEstimator?
    private var negotiatedFeedback = false
    private var gaveUpOnFeedback = false
    /// Bits per second kept for audio out of the estimate.
    private var audioReserve = 0
    private var videoStreams = 1
    /// Builds the padding packets a probe asks for (the video sender's RTX stream), each with
    /// its transport-cc placeholder id; nil: probes go out with media only.
    var makePadding: ((PaddingRequest) -> [(bytes: [UInt8], transportCCID: UInt8)])?
    /// A relay's per-player layer choice: the estimate from the peer's transport-cc feedback
    /// whenever it moved by `announceStep` or more (before it settles, only when the link is
    /// evidently full: `linkIsFull`).
    var onSendSideEstimate: ((SendSideEstimate) -> Void)?
    private var announced = 0
    static let announceStep = 0.03
    private var closed = false
    /// Only forwarded media leaves (a relay's player, `stampForwarded`): see `tickInterval`.
    private var forwardsOnly = false
    private var tickingEvery = BandwidthEstimator.processInterval
    private var lastProcess: Moment?
    /// A forwarding controller's tick once its feedback flows: its estimator's periodic work
    /// rides on the feedback instead (20 a second from Chromium), and the tick is left with
    /// what comes due without it (periodic probes). 480 players ticking every 25 ms were 5% of
    /// a relay's CPU, most of it the ticks' own overhead.
    static let forwardingTickInterval = Duration.milliseconds(250)
    private(set) var stats = CongestionStats()
    private var firstFeedback: Moment?
    /// The estimator as it was when ICE went `disconnected`; put back when the path returns. An
    /// outage says nothing about the path's capacity, but what is sent into it comes back as
    /// loss (and its receiver report as a loss fraction) and would collapse the estimate.
    private var heldEstimator: BandwidthEstimator?
    /// When the held estimate was put back, and the first transport-wide sequence number sent
    /// after: until feedback starts there (or a while has passed), feedback and receiver reports
    /// describe the outage, not the path, and are not used.
    private var resumed: (at: Moment, sequence: UInt16)?
    static let outageAftermath = Duration.seconds(2)
    /// A peer that negotiated feedback but sends none within this long (aiortc takes the
    /// extension and never reports) is treated as giving none: encoders go back to their own rates.
    static let feedbackTimeout = Duration.seconds(2)
    /// How long after the first feedback the estimate is trusted to degrade the picture.
    static let settleTime = Duration.milliseconds(1500)

    init(transport: MediaTransport, startBitrate: Int) {
        self.transport = transport
        loop = transport.loop
        estimator = BandwidthEstimator(configuration: .init(startBitrate: startBitrate))
        pacer = Pacer(configuration: .init(initialTargetBitrate: startBitrate))
    }

    /// The estimator's inner numbers (transport stats, not W3C); nil while not estimating.
    var estimatorStats: BandwidthEstimator.Stats? { estimating ? estimator.stats : nil }

    /// W3C candidate-pair `availableOutgoingBitrate`: nil until the peer's feedback gives one.
    var availableOutgoingBitrate: Int? { estimating && firstFeedback != nil ? estimator.availableOutgoingBitrate : nil }

    // MARK: configuration (loop thread)

    /// After each negotiation: the ids the peer's packets carry transport-wide sequence numbers
    /// under, the SSRC our feedback is sent from, and whether the peer sends feedback on ours.
    func configure(receiveExtensionIDs: Set<UInt8>, feedbackSSRC: UInt32, sendFeedback: Bool, sendREMB: Bool) {
        self.receiveExtensionIDs = receiveExtensionIDs
        remoteEstimator = sendREMB ? (remoteEstimator ?? RemoteBitrateEstimator()) : nil
        recorder.senderSSRC = feedbackSSRC
        negotiatedFeedback = sendFeedback
        if sendFeedback && !estimating && !gaveUpOnFeedback {
            estimating = true
            publishTarget()
        }
        scheduleTick()
    }

    /// The senders' limits (W3C minBitrate/maxBitrate summed) and what audio takes. Bounds
    /// `nil`: no active video sender (none yet, all stopped or inactive) — the estimator keeps
    /// the bounds and the estimate it has, so a video sender added later starts from what the
    /// path carries. (Clamping it to the audio share made a track added after a stop start at
    /// 30 kbit/s and crawl up at 1 kbit/s per second.)
    func setBounds(minBitrate: Int?, maxBitrate: Int?, audioReserve: Int, videoStreams: Int) {
        self.audioReserve = audioReserve
        self.videoStreams = max(1, videoStreams)
        if let minBitrate, let maxBitrate {
            estimator.setBounds(min: minBitrate + audioReserve, max: maxBitrate + audioReserve)
        }
        publishTarget()
    }

    /// What the sender would send if the link carried it (a relay's player below the layer it
    /// asked for); nil: what the estimate gives. See `BandwidthEstimator.setWanted`.
    func setWanted(_ bitrate: Int?) {
        estimator.setWanted(bitrate)
    }

    // MARK: sending

    func send(_ packet: [UInt8], transportCCID: UInt8?, kind: OutgoingRTPKind, now: Moment) {
        loop.preconditionInLoop()
        let paced: PacedPacket.Kind
        switch kind {
        case .direct:
            transmit(packet, transportCCID: transportCCID, probeClusterID: nil, now: now)
            return
        case .audio: paced = .audio
        case .video: paced = estimating ? .video : .audio   // unpaced: nothing to pace at
        case .retransmission: paced = .retransmission
        }
        pacer.enqueue(PacedPacket(bytes: packet, kind: paced, tag: Int(transportCCID ?? 0)), at: now)
        drainPacer(now: now)
    }

    /// How long what is queued now takes to leave at the pacing rate (zero when not pacing).
    var expectedQueueTime: Duration { estimating ? pacer.expectedQueueTime : .zero }

    private func drainPacer(now: Moment) {
        guard !closed else { return }
        var rounds = 0
        while rounds < 2 {
            while let p = pacer.poll(at: now) {
                let id = UInt8(truncatingIfNeeded: p.tag)
                transmit(p.bytes, transportCCID: id == 0 ? nil : id, probeClusterID: p.probeClusterID, now: now)
            }
            // A probe with no media to carry it asks for padding.
            guard let wanted = pacer.paddingWanted(at: now), let padding = makePadding?(wanted), !padding.isEmpty else { break }
            for p in padding { pacer.enqueue(PacedPacket(bytes: p.bytes, kind: .padding, tag: Int(p.transportCCID)), at: now) }
            rounds += 1
        }
        network.setQueueDelay(pacer.oldestQueueDelay(now: now) ?? .zero)
        if let id = pacerTimer { loop.cancelTimer(id) }
        pacerTimer = nil
        if let next = pacer.nextSendTime(after: now) {
            pacerTimer = loop.schedule(at: max(next, now.advanced(by: .microseconds(200))).instant) { [weak self] in
                guard let self else { return }
                self.pacerTimer = nil
                self.drainPacer(now: Moment(loop.now))
            }
        }
    }

    private func transmit(_ packet: [UInt8], transportCCID: UInt8?, probeClusterID: Int?, now: Moment) {
        var bytes = packet
        if firstSent == nil { firstSent = now }
        if let id = transportCCID, let seq = stamp(&bytes, id: id) {
            // SRTP adds its tag; the estimator wants what the wire carries (IP/UDP aside).
            estimator.onPacketSent(transportSequence: seq, size: bytes.count + 10, at: now, probeClusterID: probeClusterID)
        }
        _ = transport?.transmitRTP(bytes)
    }

    /// The forwarding fast path's stamp: the next transport-wide sequence number into the
    /// 2 placeholder bytes at `offset` of a packet written in place, `wireSize` bytes once protected.
    package func stampForwarded(_ p: UnsafeMutableRawBufferPointer, at offset: Int, wireSize: Int, now: Moment) {
        guard offset + 2 <= p.count else { return }
        let seq = nextTransportSequence
        nextTransportSequence &+= 1
        p[offset] = UInt8(truncatingIfNeeded: seq >> 8)
        p[offset + 1] = UInt8(truncatingIfNeeded: seq)
        if firstSent == nil { firstSent = now }
        forwardsOnly = true   // start probes' padding may have left through the pacer first
        estimator.onPacketSent(transportSequence: seq, size: wireSize, at: now, probeClusterID: nil)
        forwardingHints = estimator.historyPrefetchAddresses
    }

    /// Cache lines from the object's start that `stampForwarded` touches (its own fields and
    /// the send history's), for a fan-out that prefetches them.
    package static let forwardingLines = 3

    /// Writes the next transport-wide sequence number into the packet's placeholder.
    private func stamp(_ bytes: inout [UInt8], id: UInt8) -> UInt16? {
        let seq = nextTransportSequence
        let stamped = bytes.withUnsafeMutableBytes { p -> Bool in
            guard let view = try? RTPHeaderView(UnsafeRawBufferPointer(p)), let range = view.extensionRange(id: id),
                  range.count == 2 else { return false }
            p[range.lowerBound] = UInt8(truncatingIfNeeded: seq >> 8)
            p[range.lowerBound + 1] = UInt8(truncatingIfNeeded: seq)
            return true
        }
        guard stamped else { return nil }
        nextTransportSequence &+= 1
        return seq
    }

    // MARK: feedback about what we send

    func handleTransportFeedback(_ feedback: TransportCCFeedback, now: Moment) {
        loop.preconditionInLoop()
        feedbackArrived(now: now)
        if describesOutage(now: now) {
            // Sequence-number order (mod 2^16): from before the path came back, or after.
            guard let resumed, Int16(bitPattern: feedback.baseSequence &- resumed.sequence) >= 0 else { return }
            self.resumed = nil
        }
        estimator.onTransportFeedback(feedback, at: now)
        if tickingEvery > BandwidthEstimator.processInterval, lastProcess.map({ now - $0 >= BandwidthEstimator.processInterval }) ?? true {
            process(now: now)
        }
        estimateUpdated(now: now)
    }

    func handleREMB(_ remb: REMB, now: Moment) {
        feedbackArrived(now: now)
        estimator.onREMB(bitrate: Int(clamping: remb.bitrate), at: now)
        estimateUpdated(now: now)
    }

    func handleReceiverReport(fractionLost: UInt8, rtt: Duration?, now: Moment) {
        if describesOutage(now: now) { return }
        estimator.onReceiverReport(fractionLost: fractionLost, rtt: rtt, at: now)
        estimateUpdated(now: now)
    }

    /// ICE lost its path (`disconnected`) or has it again (`connected`/`completed`): the
    /// estimate is held over the outage. Packets sent into it are numbered after the held
    /// history, so feedback about them matches nothing (they are gaps, not losses).
    func iceStateChanged(_ state: ICEConnectionState, now: Moment) {
        switch state {
        case .disconnected:
            if heldEstimator == nil { heldEstimator = estimator }
        case .connected, .completed:
            guard let held = heldEstimator else { return }
            heldEstimator = nil
            estimator = held
            resumed = (now, nextTransportSequence)
            publishTarget(now: now)
        default:
            heldEstimator = nil
        }
    }

    private func describesOutage(now: Moment) -> Bool {
        guard let resumed else { return false }
        if now - resumed.at < Self.outageAftermath { return true }
        self.resumed = nil
        return false
    }

    private func feedbackArrived(now: Moment) {
        guard firstFeedback == nil else { return }
        firstFeedback = now
        if negotiatedFeedback { estimating = true }
    }

    private func estimateUpdated(now: Moment) {
        for cluster in estimator.takeProbeClusters() { pacer.startProbe(cluster, at: now) }
        publishTarget()
        if pacer.hasWork(at: now) { drainPacer(now: now) }
    }

    private func publishTarget(now: Moment? = nil) {
        guard estimating else {
            network.set(0, settled: false)
            pacer.setTargetBitrate(1_000_000_000)   // whatever is still queued leaves now
            return
        }
        let target = estimator.targetBitrate
        pacer.setTargetBitrate(target)
        let now = now ?? Moment(loop.now)
        let settled = firstFeedback.map { now - $0 >= Self.settleTime } ?? false
        network.set(max(30_000, (target - audioReserve) / videoStreams), settled: settled)
        // Before it settles, only an estimate that says the link is full: a relay then steps a
        // player that joined on too large a layer down at once, not after `settleTime` of
        // frames lost in its queue.
        if let announce = onSendSideEstimate, settled || linkIsFull(), estimator.hasTransportFeedback,
           abs(Double(target - announced)) >= Self.announceStep * Double(announced) {
            announced = target
            announce(SendSideEstimate(bitrate: target, settled: settled, delivered: estimator.acknowledgedBitrate,
                                      verified: estimator.verifiedBitrate, loss: estimator.lossRate))
        }
    }

    /// What the feedback says before the estimate settles: the link delivered under half of
    /// what was sent into it, over the same packets (`BandwidthEstimator.deliveryRatio`). A
    /// 400 kbit/s link sent 1.5 Mbit/s shows it within ~0.3 s (simulation); a clean link does
    /// not, bursts and probes included. Not the delay detector: it saw the same link only at
    /// ~0.85 s, and on a clean link it can fire on a busy receiver's late arrival times. Not
    /// everything sent against a windowed throughput either: bytes in flight and the window's
    /// lag read a clean player's join as full (a keyframe after a quiet start) and moved it down.
    private func linkIsFull() -> Bool {
        estimator.deliveryRatio.map { $0 < Self.fullRatio } ?? false
    }

    static let fullRatio = 0.5

    // MARK: receiving

    /// A video packet from the peer (after RTX unwrapping), for the REMB estimate.
    func receivedVideo(_ packet: RTPPacket, size: Int, absSendTime: UInt32? = nil, now: Moment) {
        remoteEstimator?.onPacket(rtpTimestamp: packet.timestamp, clockRate: 90000, size: size, ssrc: packet.ssrc,
                                  absSendTime: absSendTime, at: now)
    }

    func received(_ packet: RTPPacket, now: Moment) {
        guard !receiveExtensionIDs.isEmpty else { return }
        for id in receiveExtensionIDs {
            guard let data = packet.extensionData(id: id), data.count == 2 else { continue }
            if recorder.mediaSSRC == 0 { recorder.mediaSSRC = packet.ssrc }
            recorder.record(transportSequence: UInt16(data[0]) << 8 | UInt16(data[1]), at: now.instant)
            return
        }
    }

    // MARK: the periodic tick: estimator work and our transport-cc feedback

    /// Joins the loop's shared 25 ms ticker (one timer for all of a relay's players) while
    /// there is periodic work: estimating, or feedback to send about what we receive.
    private func scheduleTick() {
        guard !ticking, tickWanted else { return }
        ticking = true
        join(every: tickInterval)
    }

    private func join(every interval: Duration) {
        tickingEvery = interval
        loop.ticker(every: interval).join { [weak self] in
            guard let self, self.ticking, self.tickWanted else {
                self?.ticking = false
                return false
            }
            self.tick(now: Moment(self.loop.now))
            let wanted = self.tickInterval
            guard wanted == interval else {
                self.join(every: wanted)
                return false
            }
            return true
        }
    }

    private var tickWanted: Bool { !closed && (estimating || !receiveExtensionIDs.isEmpty || remoteEstimator != nil) }

    /// `processInterval`, or `forwardingTickInterval` for a controller that only forwards, has
    /// had feedback, and has no feedback of its own to send (nothing it receives is recorded)
    /// and no REMB to make.
    private var tickInterval: Duration {
        forwardsOnly && estimating && firstFeedback != nil && recorder.mediaSSRC == 0 && remoteEstimator == nil
            ? Self.forwardingTickInterval : BandwidthEstimator.processInterval
    }

    private func process(now: Moment) {
        lastProcess = now
        estimator.process(at: now)
    }

    private func tick(now: Moment) {
        if estimating, firstFeedback == nil, let first = firstSent, now - first > Self.feedbackTimeout {
            estimating = false
            gaveUpOnFeedback = true
            publishTarget(now: now)
            drainPacer(now: now)
        }
        if estimating {
            process(now: now)
            estimateUpdated(now: now)
        }
        let feedback = recorder.poll(at: now.instant)
        if !feedback.isEmpty {
            stats.feedbackSent += feedback.count
            transport?.sendRTCP(RTCPPacket.serializeCompound(feedback.map { .transportCC($0) }))
        }
        if let remb = remoteEstimator?.remb(now: now) {
            stats.rembSent += 1
            let packet = REMB(senderSSRC: recorder.senderSSRC, bitrate: UInt64(remb.bitrate), ssrcs: remb.ssrcs)
            transport?.sendRTCP(RTCPPacket.serializeCompound([.remb(packet)]))
        }
    }

    func close() {
        closed = true
        if let id = pacerTimer { loop.cancelTimer(id) }
        pacerTimer = nil
    }
}

/// What the controller sent about the peer's media (transport stats).
struct CongestionStats: Sendable {
    var feedbackSent = 0
    var rembSent = 0
}

/// What a peer's transport-cc feedback says of its link (`CongestionController.onSendSideEstimate`).
package struct SendSideEstimate: Sendable, Equatable {
    /// The estimate, bits per second.
    package var bitrate: Int
    /// False for an early one, before the estimator settled, given because the link is evidently full.
    package var settled = true
    /// What the link delivered lately, bits per second (`BandwidthEstimator.acknowledgedBitrate`).
    package var delivered: Int?
    /// What the link was seen to carry: `delivered`, or a recent probe's measured rate if more
    /// (`BandwidthEstimator.verifiedBitrate`).
    package var verified: Int?
    /// What the link lost of what it was sent, over the last loss update (0…1, before resends).
    package var loss = 0.0

    package init(bitrate: Int, settled: Bool = true, delivered: Int? = nil, verified: Int? = nil, loss: Double = 0) {
        self.bitrate = bitrate
        self.settled = settled
        self.delivered = delivered
        self.verified = verified ?? delivered
        self.loss = loss
    }
}
