import RTP

/// Send-side congestion control, GoogCC as draft-ietf-rmcat-gcc-02 and libwebrtc describe it,
/// sans-I/O: packets sent, feedback and reports in (each with the time it happened), a target
/// bitrate and probe requests out.
///
/// target = loss-based rate, which is itself kept ≤ min(delay-based estimate, REMB, max) and
/// ≥ min. The delay-based side reacts to queue growth before loss happens; the loss-based
/// side guards against loss the queue does not show (policers, lossy links without queues).
///
/// Drive it from the connection's serial loop: `onPacketSent` for every packet that carries a
/// transport-wide sequence number, `onTransportFeedback` for every transport-cc packet,
/// `process(at:)` every `processInterval`; after each, read `targetBitrate` and hand
/// `takeProbeClusters()` to the pacer.
public struct BandwidthEstimator: Sendable {
    public static let processInterval = Duration.milliseconds(25)
    /// Loss fractions are formed over at least this long (libwebrtc's feedback-only mode).
    static let lossUpdateInterval = Duration.seconds(1)
    /// RTCP receiver-report loss is ignored while transport-cc feedback is this fresh.
    static let transportFeedbackFreshness = Duration.seconds(5)

    // First: what every sent packet touches (`onPacketSent`), so that it shares cache lines
    // with its owner's hot fields (a relay stamps one per player per forwarded packet).
    private var history = SendHistory()
    /// The probe controller has started (its start probes are asked for on the first packet).
    private var started = false
    /// As given to `init`; `setBounds` changes the bounds in force, not this.
    public let configuration: Configuration
    private var minBitrate: Int
    private var maxBitrate: Int
    private var delay: DelayBasedEstimator
    private var loss: LossBasedController
    private var acknowledged = AcknowledgedBitrateEstimator()
    private var delivery = DeliveryMeter()
    private var probeController: ProbeController
    private var probeResults = ProbeBitrateEstimator()
    private var pendingProbes: [ProbeCluster] = []
    private var remb: Int?
    private var explicitRTT: Duration?
    private var feedbackRTT: Duration?
    private var lastTransportFeedback: Moment?
    private var nextLossUpdate: Moment?
    private var lostSinceLossUpdate = 0
    private var reportedSinceLossUpdate = 0
    private var feedbackCount = 0
    private var packetsReported = 0
    private var packetsLost = 0
    private var probeClustersRequested = 0
    private var lastProbeResult: Int?
    /// The last probe's measured rate and when it came (`verifiedBitrate`).
    private var measuredProbe: (bitrate: Int, at: Moment)?
    static let probeEvidence = Duration.seconds(5)

    public init(configuration: Configuration = Configuration()) {
        self.configuration = configuration
        let (low, high) = Self.sanitizedBounds(min: configuration.minBitrate, max: configuration.maxBitrate)
        minBitrate = low
        maxBitrate = high
        let start = Double(min(max(configuration.startBitrate, low), high))
        delay = DelayBasedEstimator(startBitrate: start, minBitrate: Double(low), maxBitrate: Double(high))
        loss = LossBasedController(startBitrate: start, minBitrate: Double(low), maxBitrate: Double(high))
        probeController = ProbeController(enabled: configuration.probing,
                                          periodicInterval: configuration.periodicProbeInterval)
    }

    // MARK: Outputs

    /// What the encoders together should produce, in bits per second.
    public var targetBitrate: Int { Int(loss.bitrate) }

    /// The estimate as W3C stats report it (availableOutgoingBitrate): the target before the
    /// minimum bound, so below `targetBitrate` only when a REMB asks for less than `minBitrate`
    /// (the estimators themselves never go below the minimum, as in libwebrtc).
    public var availableOutgoingBitrate: Int { Int(min(loss.bitrate, loss.upperLimit)) }

    public var delayState: DelayState { delay.state }

    /// Whether transport-cc feedback has come (the estimate is not REMB's alone).
    public var hasTransportFeedback: Bool { lastTransportFeedback != nil }

    /// What the feedback says arrived lately (bits per second); nil before enough of it.
    public var acknowledgedBitrate: Int? { acknowledged.bitrate.map { Int($0) } }

    /// What the link was seen to carry lately (bits per second): what it delivered, or more if
    /// a probe measured more within `probeEvidence`. An estimate above it is the AIMD's growth,
    /// which reaches 1.5 × what is acknowledged with no evidence at all: a relay steps a player
    /// up only as far as this (`LayerAllocator`).
    public var verifiedBitrate: Int? {
        let probe = measuredProbe.flatMap { p in lastTransportFeedback.map { $0 - p.at <= Self.probeEvidence } == true ? p.bitrate : nil }
        guard let delivered = acknowledgedBitrate else { return probe }
        return max(delivered, probe ?? 0)
    }

    /// What the link delivered of what was sent into it since the first feedback (0…~1; see
    /// `DeliveryMeter`); nil before enough of it. Under a half: the link is evidently full.
    public var deliveryRatio: Double? { delivery.ratio }

    /// Loss fraction (0…1) of the last loss report.
    public var lossRate: Double { loss.lossRate }

    public var stats: Stats {
        Stats(targetBitrate: targetBitrate, availableOutgoingBitrate: availableOutgoingBitrate,
              delayBasedBitrate: lastTransportFeedback == nil ? nil : Int(delay.bitrate),
              acknowledgedBitrate: acknowledgedBitrate,
              rembBitrate: remb, delayState: delayState, lossRate: lossRate, rtt: rtt,
              delayThreshold: delay.detector.threshold, delayTrend: delay.detector.modifiedTrend,
              feedbackCount: feedbackCount, packetsReported: packetsReported, packetsLost: packetsLost,
              probeClustersRequested: probeClustersRequested, lastProbeResult: lastProbeResult)
    }

    /// Probe clusters the pacer should send (see `Pacer.startProbe`), each returned once.
    public mutating func takeProbeClusters() -> [ProbeCluster] {
        defer { pendingProbes.removeAll() }
        return pendingProbes
    }

    // MARK: Inputs

    /// The sender's limits (RtpSender encodings' bounds summed). `max` below `min` is raised to it.
    public mutating func setBounds(min newMin: Int, max newMax: Int) {
        (minBitrate, maxBitrate) = Self.sanitizedBounds(min: newMin, max: newMax)
        delay.setBounds(min: Double(minBitrate), max: Double(maxBitrate))
        loss.setBounds(min: Double(minBitrate), max: Double(maxBitrate))
    }

    /// What the sender would send if the link carried it (bits per second; nil: what the
    /// estimate gives): while the estimate is below it, periodic probes come more often.
    public mutating func setWanted(_ bitrate: Int?) {
        probeController.wanted = bitrate.map(Double.init)
    }

    public mutating func onPacketSent(transportSequence: UInt16, size: Int, at now: Moment,
                                      probeClusterID: Int? = nil) {
        startIfNeeded(at: now)
        history.onPacketSent(transportSequence: transportSequence, size: size, at: now, probeClusterID: probeClusterID)
    }

    /// Where the next `onPacketSent` writes (see `SendHistory.prefetchAddresses`).
    public var historyPrefetchAddresses: (header: UnsafeRawPointer?, tail: UnsafeRawPointer?) { history.prefetchAddresses }

    public mutating func onTransportFeedback(_ feedback: TransportCCFeedback, at now: Moment) {
        startIfNeeded(at: now)
        let results = history.onFeedback(feedback)
        guard !results.isEmpty else { return }
        feedbackCount += 1
        lastTransportFeedback = now

        var received: [PacketResult] = []
        received.reserveCapacity(results.count)
        var lost = 0
        var newestSend: Moment?
        for r in results {
            delivery.add(r)
            if r.isReceived {
                received.append(r)
                newestSend = max(newestSend ?? r.sendTime, r.sendTime)
            } else {
                lost += 1
            }
        }
        packetsReported += results.count
        packetsLost += lost
        if let sent = newestSend { updateFeedbackRTT(now - sent) }

        received.sort {
            ($0.arrivalMicroseconds ?? 0, $0.transportSequence) < ($1.arrivalMicroseconds ?? 0, $1.transportSequence)
        }
        for r in received {
            acknowledged.update(r)
            probeResults.onPacketResult(r)
        }
        let probe = probeResults.takeEstimate()
        if let p = probe, delay.state != .overusing { measuredProbe = (Int(p), now) }

        lostSinceLossUpdate += lost
        reportedSinceLossUpdate += results.count
        if nextLossUpdate.map({ now >= $0 }) ?? true {
            loss.onPacketsLost(lostSinceLossUpdate, of: reportedSinceLossUpdate, at: now)
            lostSinceLossUpdate = 0
            reportedSinceLossUpdate = 0
            nextLossUpdate = now + Self.lossUpdateInterval
        }

        delay.onPacketResults(received, acknowledgedBitrate: acknowledged.bitrate, probeBitrate: probe, at: now)
        loss.delayBasedLimit = delay.bitrate
        // A probe says nothing about loss: while the loss controller is backing off, it wins.
        if let p = probe, delay.state != .overusing, p > loss.bitrate, loss.lossRate <= LossBasedController.highLoss {
            lastProbeResult = Int(p)
            loss.setBitrate(p, at: now)
        }
        loss.update(at: now)
        estimateChanged(at: now)
    }

    /// A REMB from the receiver: an upper bound until the next one.
    public mutating func onREMB(bitrate: Int, at now: Moment) {
        startIfNeeded(at: now)
        remb = max(0, bitrate)
        loss.receiverLimit = Double(max(0, bitrate))
        loss.update(at: now)
    }

    /// An RTCP receiver report block for our stream. Its loss drives the loss-based controller
    /// only while no transport-cc feedback arrives (feedback counts loss per packet and sooner).
    public mutating func onReceiverReport(fractionLost: UInt8, rtt: Duration?, at now: Moment) {
        startIfNeeded(at: now)
        if let rtt { onRTT(rtt) }
        if let last = lastTransportFeedback, now - last < Self.transportFeedbackFreshness { return }
        loss.onFractionLost(fractionLost, at: now)
        estimateChanged(at: now)
    }

    /// A measured round-trip time (RTCP SR/RR DLSR, STUN); used instead of the feedback-based one.
    public mutating func onRTT(_ rtt: Duration) {
        guard rtt >= .zero, rtt < .seconds(60) else { return }
        explicitRTT = rtt
        applyRTT()
    }

    /// Periodic work: the loss-based increase and periodic probing. Call every `processInterval`.
    public mutating func process(at now: Moment) {
        startIfNeeded(at: now)
        loss.update(at: now)
        let clusters = probeController.process(estimate: loss.bitrate, maxBitrate: probeCeiling, state: delay.state,
                                               allowPeriodic: loss.lossRate <= LossBasedController.highLoss, at: now)
        addProbes(clusters, at: now)
    }

    // MARK: Internals

    private var rtt: Duration? { explicitRTT ?? feedbackRTT }

    private var probeCeiling: Double { Double(min(maxBitrate, remb ?? .max)) }

    private mutating func startIfNeeded(at now: Moment) {
        guard !started else { return }
        started = true
        addProbes(probeController.start(startBitrate: loss.bitrate, maxBitrate: probeCeiling, at: now), at: now)
    }

    private mutating func estimateChanged(at now: Moment) {
        addProbes(probeController.onEstimate(loss.bitrate, maxBitrate: probeCeiling, at: now), at: now)
    }

    private mutating func addProbes(_ clusters: [ProbeCluster], at now: Moment) {
        for c in clusters {
            probeResults.register(c, at: now)
            pendingProbes.append(c)
            probeClustersRequested += 1
        }
    }

    /// Feedback round trip: arrival of feedback minus the send time of the newest packet it
    /// acknowledges. It includes the receiver's feedback interval, so it overestimates a little,
    /// as libwebrtc's feedback-only RTT does.
    private mutating func updateFeedbackRTT(_ sample: Duration) {
        guard sample >= .zero, sample < .seconds(60) else { return }
        feedbackRTT = feedbackRTT.map { ($0 * 7 + sample) / 8 } ?? sample
        applyRTT()
    }

    private mutating func applyRTT() {
        guard let rtt else { return }
        delay.setRTT(rtt)
        loss.rtt = rtt
    }

    private static func sanitizedBounds(min low: Int, max high: Int) -> (Int, Int) {
        let low = max(1000, low)
        return (low, max(low, high))
    }
}
