/// The delay-based half of GCC: packet groups → trendline → overuse detector → AIMD
/// (libwebrtc `DelayBasedBwe`).
struct DelayBasedEstimator: Sendable {
    private var interArrival = InterArrival()
    private(set) var trendline = TrendlineFilter()
    private(set) var detector = OveruseDetector()
    private(set) var rateControl: AIMDRateControl
    /// Local send times are measured from here (the first packet reported).
    private var epoch: Moment?

    init(startBitrate: Double, minBitrate: Double, maxBitrate: Double) {
        rateControl = AIMDRateControl(startBitrate: startBitrate, minBitrate: minBitrate, maxBitrate: maxBitrate)
    }

    var bitrate: Double { rateControl.bitrate }
    var state: DelayState { detector.state }

    mutating func setBounds(min: Double, max: Double) { rateControl.setBounds(min: min, max: max) }

    mutating func setRTT(_ rtt: Duration) { rateControl.rtt = rtt }

    /// One feedback's received packets, sorted by arrival. `probeBitrate` is a probe cluster's
    /// measured rate, taken only when it is above the current estimate and the queue is not
    /// growing; `acknowledgedBitrate` is the receive throughput.
    mutating func onPacketResults(_ received: [PacketResult], acknowledgedBitrate: Double?, probeBitrate: Double?,
                                  at now: Moment) {
        guard let first = received.first else { return }
        let epoch = self.epoch ?? first.sendTime
        self.epoch = epoch
        let system = (now - epoch).inMicroseconds
        for packet in received {
            guard let arrival = packet.arrivalMicroseconds else { continue }
            let send = (packet.sendTime - epoch).inMicroseconds
            guard let deltas = interArrival.add(send: send, arrival: arrival, system: system, size: packet.size)
            else { continue }
            let sendDeltaMs = Double(deltas.sendDelta) / 1000
            let delayDeltaMs = Double(deltas.arrivalDelta - deltas.sendDelta) / 1000
            let arrivalMs = Double(arrival) / 1000
            let slope = trendline.update(delayDeltaMs: delayDeltaMs, arrivalMs: arrivalMs)
            _ = detector.detect(trend: slope, sendDeltaMs: sendDeltaMs, numDeltas: trendline.numDeltas, nowMs: arrivalMs)
        }

        if detector.state == .overusing {
            if let acked = acknowledgedBitrate {
                if rateControl.timeToReduceFurther(at: now, throughput: acked) {
                    rateControl.update(.overusing, throughput: acked, at: now)
                }
            } else if rateControl.initialTimeToReduceFurther(at: now) {
                // Overuse before any throughput is known: halve, at most every 200 ms.
                rateControl.setEstimate(rateControl.bitrate / 2, at: now)
            }
        } else if let probe = probeBitrate, probe > rateControl.bitrate {
            rateControl.setEstimate(probe, at: now)
        } else {
            rateControl.update(detector.state, throughput: acknowledgedBitrate, at: now)
        }
    }
}
