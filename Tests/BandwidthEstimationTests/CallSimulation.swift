import RTP
@testable import BandwidthEstimation

/// A closed loop on a fake clock in 1 ms steps: a 30 fps "encoder" producing exactly the
/// estimator's target, the `Pacer`, a `SimulatedLink` bottleneck, a `SimulatedReceiver`
/// returning transport-cc feedback every 50 ms after `returnDelay`, and the estimator.
struct CallSimulation {
    struct Result {
        /// (seconds, target bps) every 100 ms.
        var targets: [(t: Double, bps: Int)] = []
        /// (seconds, `verifiedBitrate`) every 100 ms.
        var verified: [(t: Double, bps: Int?)] = []
        /// (send seconds, ms spent in the bottleneck queue incl. transmission).
        var queueDelays: [(t: Double, ms: Double)] = []
        /// (arrival seconds, ms from entering the pacer to arriving at the receiver).
        var endToEnd: [(t: Double, ms: Double)] = []
        /// (arrival seconds, bytes).
        var received: [(t: Double, bytes: Int)] = []
        var probeClusters = 0
        /// (seconds, probe bitrate) for each probe cluster requested.
        var probeLog: [(t: Double, bps: Int)] = []
        /// (seconds, stats) every 100 ms.
        var statsLog: [(t: Double, stats: BandwidthEstimator.Stats)] = []
        var paddingBytes = 0
        var droppedByQueue = 0
        var finalStats: BandwidthEstimator.Stats?

        func targets(from: Double, to: Double) -> [Int] {
            targets.filter { $0.t >= from && $0.t < to }.map(\.bps)
        }

        func target(at t: Double) -> Int { targets.last { $0.t <= t }?.bps ?? 0 }

        /// First time at or after `from` that `condition` holds for the target.
        func firstTime(from: Double = 0, where condition: (Int) -> Bool) -> Double? {
            targets.first { $0.t >= from && condition($0.bps) }?.t
        }

        /// Received bits per second over [from, to).
        func throughput(from: Double, to: Double) -> Double {
            let bytes = received.filter { $0.t >= from && $0.t < to }.reduce(0) { $0 + $1.bytes }
            return Double(bytes) * 8 / (to - from)
        }

        func queueDelayP95(from: Double, to: Double) -> Double {
            percentile(queueDelays.filter { $0.t >= from && $0.t < to }.map(\.ms), 0.95)
        }

        func endToEndP95(from: Double, to: Double) -> Double {
            percentile(endToEnd.filter { $0.t >= from && $0.t < to }.map(\.ms), 0.95)
        }
    }

    var estimatorConfiguration = BandwidthEstimator.Configuration()
    var pacerConfiguration = Pacer.Configuration()
    /// Bottleneck rate from each time on (seconds).
    var capacity: [(at: Double, bps: Int)] = [(0, 1_000_000)]
    var rembs: [(at: Double, bps: Int)] = []
    /// The most the encoder makes from each time on (seconds), whatever the target: a simple
    /// picture at its size is application-limited.
    var encoderLimit: [(at: Double, bps: Int)] = []
    var bounds: [(at: Double, min: Int, max: Int)] = []
    var lossRate = 0.0
    /// Random loss changes: from `at` seconds on, `rate`.
    var lossChanges: [(at: Double, rate: Double)] = []
    var propagation = Duration.milliseconds(20)
    var returnDelay = Duration.milliseconds(20)
    var queueLimit = Duration.milliseconds(200)
    var feedbackInterval = 50
    /// Spans (seconds) in which the receiver is too busy to read: what arrives is stamped at
    /// the span's end, as a batch (a loaded host's network thread).
    var receiveStalls: [(from: Double, to: Double)] = []
    /// Spans in which the sender's loop does not run (a starved CPU): no feedback is read and
    /// the pacer sends nothing; frames still queue (the capture thread), and leave at the end.
    var sendStalls: [(from: Double, to: Double)] = []
    var seed: UInt64 = 1
    var firstSequence: Int64 = 65_000

    func run(seconds: Double) -> Result {
        let t0 = Moment(.now)
        var bwe = BandwidthEstimator(configuration: estimatorConfiguration)
        var pacer = Pacer(configuration: pacerConfiguration)
        var link = SimulatedLink(bitrate: capacity.first?.bps ?? 1_000_000, propagation: propagation,
                                 queueLimit: queueLimit, lossRate: lossRate, seed: seed)
        var receiver = SimulatedReceiver(t0: t0)
        var feedbackQueue: [(due: Moment, feedback: TransportCCFeedback)] = []
        var enqueueTimes: [Int: Moment] = [:]
        var tagEnqueued: [Moment] = []
        var sequence = firstSequence
        var result = Result()
        var capacityIndex = 0, rembIndex = 0, boundsIndex = 0, lossIndex = 0
        var nextFrameMs = 0.0
        let steps = Int(seconds * 1000)

        for step in 0...steps {
            let now = t0 + .milliseconds(step)
            let t = Double(step) / 1000
            while capacityIndex < capacity.count, capacity[capacityIndex].at <= t {
                link.bitrate = capacity[capacityIndex].bps
                capacityIndex += 1
            }
            while lossIndex < lossChanges.count, lossChanges[lossIndex].at <= t {
                link.lossRate = lossChanges[lossIndex].rate
                lossIndex += 1
            }
            while rembIndex < rembs.count, rembs[rembIndex].at <= t {
                bwe.onREMB(bitrate: rembs[rembIndex].bps, at: now)
                rembIndex += 1
            }
            while boundsIndex < bounds.count, bounds[boundsIndex].at <= t {
                bwe.setBounds(min: bounds[boundsIndex].min, max: bounds[boundsIndex].max)
                boundsIndex += 1
            }

            // Far end: arrivals and periodic feedback.
            for var d in link.deliver(until: now) {
                let arrival = (d.arrival - t0).s
                if let stall = receiveStalls.first(where: { arrival >= $0.from && arrival < $0.to }) {
                    d.arrival = t0 + .seconds(stall.to)
                }
                receiver.receive(d)
                let at = (d.arrival - t0).s
                result.received.append((at, d.size))
                if let queued = enqueueTimes.removeValue(forKey: Int(d.sequence - firstSequence)) {
                    result.endToEnd.append((at, (d.arrival - queued).ms))
                }
            }
            if step % feedbackInterval == 0, let fb = receiver.makeFeedback() {
                feedbackQueue.append((now + returnDelay, fb))
            }
            let senderStalled = sendStalls.contains { t >= $0.from && t < $0.to }
            while !senderStalled, let first = feedbackQueue.first, first.due <= now {
                bwe.onTransportFeedback(first.feedback, at: now)
                feedbackQueue.removeFirst()
            }
            if step % 25 == 0 { bwe.process(at: now) }
            for cluster in bwe.takeProbeClusters() {
                pacer.startProbe(cluster, at: now)
                result.probeClusters += 1
                result.probeLog.append((t, cluster.bitrate))
            }
            pacer.setTargetBitrate(bwe.targetBitrate)

            // Encoder: one frame per 1/30 s sized to the target, cut into 1200-byte packets.
            if Double(step) >= nextFrameMs {
                nextFrameMs += 1000.0 / 30
                let limit = encoderLimit.last { $0.at <= t }?.bps ?? .max
                var frameBytes = min(bwe.targetBitrate, limit) / 8 / 30
                while frameBytes > 0 {
                    let size = min(1200, frameBytes)
                    frameBytes -= size
                    pacer.enqueue(PacedPacket(bytes: [UInt8](repeating: 0, count: size), kind: .video,
                                              tag: tagEnqueued.count), at: now)
                    tagEnqueued.append(now)
                }
            }

            // Pacer → network.
            while !senderStalled {
                while let packet = pacer.poll(at: now) {
                    if packet.kind != .padding, tagEnqueued.indices.contains(packet.tag) {
                        enqueueTimes[Int(sequence - firstSequence)] = tagEnqueued[packet.tag]
                    }
                    bwe.onPacketSent(transportSequence: UInt16(truncatingIfNeeded: sequence), size: packet.size,
                                     at: now, probeClusterID: packet.probeClusterID)
                    link.send(sequence: sequence, size: packet.size, at: now)
                    sequence += 1
                }
                guard let padding = pacer.paddingWanted(at: now) else { break }
                // Full-size padding, as libwebrtc's RTX payload padding is, where the cluster takes it.
                let size = min(1200, padding.largestPacket)
                result.paddingBytes += size
                pacer.enqueue(PacedPacket(bytes: [UInt8](repeating: 0, count: size), kind: .padding, tag: -1), at: now)
            }

            if step % 100 == 0 {
                result.targets.append((t, bwe.targetBitrate))
                result.verified.append((t, bwe.verifiedBitrate))
                result.statsLog.append((t, bwe.stats))
            }
        }
        result.queueDelays = link.queueDelays.map { (($0.at - t0).s, $0.delay.ms) }
        result.droppedByQueue = link.droppedByQueue
        result.finalStats = bwe.stats
        return result
    }
}
