import RTP
import RTPMedia

/// What one player's link carries, from that player's own feedback: its REMB — its receive-side
/// estimate — taken as it comes, up or down; or, for a player answered transport-cc
/// (a simulcast's players, unless `--player-remb`), the send-side estimate its transport runs on that feedback
/// (delay, loss, and probes sent as padding on its RTX stream), in the REMB's place and alone.
/// Loss a REMB does not see (a policer, a buffer too shallow
/// to show delay) caps it as GCC's loss-based rule does: over 10%, the cap is the estimate ×
/// (1 − loss/2); under 2% it grows 8% per measurement and is gone once above the delay-based estimate; between,
/// it holds. Loss is measured from the reports' cumulative counters over at least a second and
/// `minPackets` packets (half a second before any estimate): what stayed lost after
/// retransmissions. Each report's own fraction lost is no measure — Chromium sends a receiver
/// report with every NACK, tens a second, each counting as lost what its resend will recover;
/// taken one by one at 5% random loss they ratcheted the cap down to a tenth of the stream and
/// starved its resends. Before the player's
/// first REMB (Chromium's comes 2–4 s in) heavy loss alone gives one: what got through of what
/// it was sent — a weak viewer that joined on the largest layer leaves it a second in. Nil until
/// one or the other.
struct ViewerEstimate {
    static let highLoss = 0.1
    static let lowLoss = 0.02
    static let lossWindow: Duration = .seconds(1)
    static let minPackets = 50
    /// Reports further apart than this: the player's path was out (receivers report about
    /// every second). What went into an outage says nothing about the link's capacity.
    static let reportGap: Duration = .milliseconds(2500)
    /// After the publisher's own silence, reports this long are not measured: they count what
    /// it sent into its outage as lost at every player.
    static let settleAfterPublisherGap: Duration = .milliseconds(500)
    private(set) var lastREMB: Int?
    /// From the player's transport-cc feedback (`CongestionController`): once there, it is the
    /// link's estimate and REMB is only shown.
    private(set) var sendSide: Int?
    private(set) var lossCap: Int?
    /// What stayed lost over the last measured window (nil before one).
    private(set) var lastLoss: Double?
    /// Where the current loss measurement started: the report's extended highest sequence
    /// number and cumulative loss.
    private var window: (highest: UInt32, lost: Int32, at: ContinuousClock.Instant)?
    private var lastReportAt: ContinuousClock.Instant?
    private var measureFrom: ContinuousClock.Instant?
    /// Measurements over `highLoss` in a row.
    private var lossyMeasurements = 0

    /// Bits per second; nil before the first REMB, send-side estimate or heavy-loss measurement.
    /// A send-side estimate is taken alone: its estimator runs GCC's loss-based rule on the
    /// per-packet feedback already (sooner and finer than reports), and its probes reset that
    /// rule; a report cap over it held a weak viewer's estimate to 8% every other second after
    /// its limit lifted while the estimator, probes passed, said 3.9 Mbit/s (interop: 45–49 s
    /// back on the high layer). The reports' cap is for REMB (delay alone) and for the time
    /// before a transport-cc player's estimate settles.
    var bitrate: Int? { sendSide ?? lastREMB.map { min($0, lossCap ?? .max) } ?? lossCap }

    /// Loss, not the delay-based estimate, sets `bitrate`: evidence of a full link on its own.
    var limitedByLoss: Bool { sendSide == nil && (lossCap.map { cap in lastREMB.map { cap < $0 } ?? true } ?? false) }

    mutating func remb(_ bitrate: UInt64) {
        lastREMB = Int(clamping: bitrate)
        dropCapAboveREMB()
    }

    /// The send-side estimate of what this player's link carries (bits per second);
    /// `settled` false: an early one, given because the link is evidently full; `delivered`
    /// and `loss`: what the link delivered and lost lately, as the feedback showed.
    mutating func sendSide(_ bitrate: Int, settled: Bool = true, delivered: Int? = nil, verified: Int? = nil, loss: Double = 0) {
        sendSide = bitrate
        provisional = !settled
        self.delivered = delivered
        self.verified = verified ?? delivered
        linkLoss = loss
        lossCap = nil
    }

    /// What the player's link delivered lately (bits per second), from its transport-cc
    /// feedback with the last send-side estimate; nil with REMB.
    private(set) var delivered: Int?
    /// What the link was seen to carry (`delivered`, or a recent probe's rate); nil with REMB.
    private(set) var verified: Int?
    /// What its link lost of what it was sent (0…1, before resends), from the same feedback.
    private(set) var linkLoss = 0.0

    /// The send-side estimate is an early one: the player's link was full before its estimator
    /// settled (a join on a layer the link does not carry).
    private(set) var provisional = false

    /// The report cap goes once it no longer holds the REMB down (with a send-side estimate
    /// there is none).
    private mutating func dropCapAboveREMB() {
        if let cap = lossCap, let remb = lastREMB, cap >= remb { lossCap = nil }
    }

    /// A receiver report block on what we send this player; `sending`: bits per second of what
    /// it is sent now.
    mutating func report(_ block: ReceptionReport, sending: Int, now: ContinuousClock.Instant) {
        defer { lastReportAt = now }
        let outage = lastReportAt.map { now - $0 > Self.reportGap } ?? false
        guard let start = window, block.highestSequence >= start.highest, !outage, measureFrom.map({ now >= $0 }) ?? true else {
            // The first report, the counters started over (a new sender SSRC), or after an outage.
            window = (block.highestSequence, block.cumulativeLost, now)
            return
        }
        measureFrom = nil
        let expected = Int(block.highestSequence - start.highest)
        // Before any estimate a shorter window: the player is on the largest layer until one.
        let span = bitrate == nil ? Self.lossWindow / 2 : Self.lossWindow
        guard now - start.at >= span, expected >= Self.minPackets else { return }
        let lost = min(expected, max(0, Int(block.cumulativeLost) - Int(start.lost)))
        window = (block.highestSequence, block.cumulativeLost, now)
        measured(loss: Double(lost) / Double(expected), sending: sending)
    }

    /// The publisher was silent (an outage on its side) and sends again: the gap reaches every
    /// player as lost packets, which is no measure of their links.
    mutating func publisherResumed(now: ContinuousClock.Instant) {
        measureFrom = now + Self.settleAfterPublisherGap
    }

    /// Its reports say its link loses more than 10% even after resends, in two measurements in
    /// a row: a full queue. Random loss of a few percent gets there in one window at most (a
    /// burst), and holding its resends on that one would make the next window lossy too.
    var lossy: Bool { lossyMeasurements >= 2 }

    private mutating func measured(loss: Double, sending: Int) {
        lastLoss = loss
        lossyMeasurements = loss > Self.highLoss ? lossyMeasurements + 1 : 0
        guard sendSide == nil else { return }
        guard let estimate = bitrate else {
            if loss > Self.highLoss, sending > 0 { lossCap = Int(Double(sending) * (1 - loss)) }
            return
        }
        if loss > Self.highLoss {
            lossCap = Int(Double(estimate) * (1 - loss / 2))
        } else if loss < Self.lowLoss, let cap = lossCap {
            lossCap = Int(Double(cap) * 1.08) + 1000
            dropCapAboveREMB()
        }
    }
}

/// Which simulcast layer one player is sent, from its estimate: the largest (up to the layer it
/// asked for) whose rate fits. Down when the current one no longer fits and the link says it is
/// full — the estimate fell (a receiver's AIMD falls only on overuse), loss sets it, or it is
/// under `farBelow` of the layer — or after `downHold` of not fitting: a REMB cannot run ahead
/// of what its player receives, so a player's first one (seen at 0.64–0.76 of the layer on a
/// clean join) or one from before its layer grew (a publisher ramping up) is below the layer
/// without the link being full, and the next one, up to 1.5 × what it now receives, fits. A
/// send-side estimate comes with what the link delivered (`delivered`): while that covers the
/// layer, a fall or loss moves the player down, or `carriedHold` — an estimator whose start
/// probes a busy receiver spoiled starts under the layer (0.8–2.3 Mbit/s under 2.1–2.8 Mbit/s)
/// and grows ~8% a second until a probe passes, and a clean player was stepped down at the
/// 2 s hold's end or at once (CI, and 1 in 4 runs here with two cores busy). Up one layer
/// at a time, once the estimate has carried the next one for `upHold`. A receiver's estimate
/// cannot rise far above what it receives (REMB: 1.5 × its incoming rate), so to find room
/// for the next layer the player is padded towards it (`Decision.padding`, up to the estimate,
/// after a first second above it: `Decision.burst`): a probe, which lasts while the estimate
/// keeps rising and fails when it falls back (the link is full) or stalls; a failed probe is
/// tried again after a backoff (doubling), and none starts within `firstBackoff` of a step
/// down — unless the estimate is `burstAbove` where the link was last full: the link has grown
/// (the backoff was earned on the link as it was). With a send-side estimate (transport-cc) the
/// estimator's own probe clusters (2× the estimate, every 2 s while the player is below the
/// layer it asked for, doubling while they pass) find the room first, and the padding that then
/// starts lets the estimate grow on: in simulation a 400 kbit/s viewer is back on a 1.5 Mbit/s
/// layer 4–7 s after its limit lifts, whenever it lifts (3–14 s before both), 24 s on REMB;
/// through the interop emulator 3.7–5.0 s (`swiftrtc play` or Chromium; 28–49 s while a report
/// loss cap, set at its join, still sat over its send-side estimate). Without
/// an estimate (none yet) the player gets the largest: most links carry it, and one that does
/// not is stepped down at its first. Sans-I/O.
struct LayerAllocator {
    /// A layer fits when its rate is at most this share of the estimate (resends, headers; the
    /// relay gives the allocator its estimate less the player's audio).
    static let headroom = 0.85
    static let upHold: Duration = .seconds(2)
    static let downHold: Duration = .seconds(2)
    /// An estimate at most this share of the one before it fell (REMB's own decrease ratio).
    static let fallRatio = 0.97
    /// An estimate under this share of the layer is more than a join or a ramp explains.
    static let farBelow = 0.5
    /// The link delivered at least this share of the layer (what it was sent over the last half
    /// second against the layer's rate over a second, keyframes and all: 0.82 at a clean join):
    /// it carries the layer, and the hold is `carriedHold`. A link that does not carry it queues
    /// and loses, and the estimate falls before that.
    static let carriedShare = 0.8
    static let carriedHold: Duration = .seconds(10)
    /// A probe fails when the estimate falls below this share of its peak during the probe (a
    /// receiver's AIMD falls only on overuse — the link is full — to 0.85 × what it receives,
    /// which after a burst can be only a few percent down), or when it has not risen
    /// `probeGrowth` for `probeStall`.
    static let probeFailure = 0.98
    static let probeGrowth = 1.05
    static let probeStall: Duration = .seconds(5)
    /// A probe bursts: `burstLength` of padding to this much more than the estimate (up to what
    /// the next layer needs). A receiver's AIMD (REMB) grows by about a packet per response
    /// time — ~20 kbit/s per second at 400 kbit/s, 50 s back to 1.5 Mbit/s — while what it
    /// receives (over a second) stays within 3 deviations of the link capacity it last saw; its
    /// estimate after an overuse is 0.85 × that capacity, the bound 1.1–1.25 × it. A second at
    /// 1.5 × the estimate passes the bound: it forgets the capacity and grows 8% a second until
    /// the next overuse, with padding only up to its estimate. A burst into a full link is
    /// ~0.3 s of queue, so a probe bursts only once its estimate is `burstAbove` where the link
    /// was last seen full (the last failed probe's peak; at a step down, the estimate over
    /// `headroom`): below that, padding to the estimate finds a full link gently; past it, the
    /// link has grown. The last, not the highest: a link that got worse must not need its old
    /// capacity passed before a burst.
    static let burstRatio = 1.5
    /// Padding goes at most this far over what the link was seen to carry (send-side).
    static let verifiedStep = 1.1
    static let burstLength: Duration = .seconds(1)
    static let burstAbove = 1.1
    /// After a probe fails the padding does not stop at once, it goes to `settleShare` of the
    /// (fallen) estimate for `settleLength`: below the link, so the queue drains, but not down
    /// to the layer alone. A receiver cuts its estimate to 0.85 × what it gets every 200 ms
    /// while its detector still sees overuse (it lags the queue by ~0.5–1 s); with the padding
    /// gone that was 0.85 × the low layer: Chromium's estimate fell to a third, 365 → 120 kbit/s.
    static let settleShare = 0.85
    static let settleLength: Duration = .seconds(2)
    /// Probes stay frequent: a probe into a full link costs a little delay before the receiver's
    /// estimate falls, and the next one is the only way to find that the link has grown.
    static let firstBackoff: Duration = .seconds(5)
    static let maxBackoff: Duration = .seconds(10)

    struct Layer: Equatable {
        let ssrc: UInt32
        /// What the publisher sends on it, bits per second.
        let bitrate: Int
    }

    struct Decision: Equatable {
        var ssrc: UInt32
        /// Bits per second of padding to send the player on top of its layer (0: none).
        var padding: Int
        /// More padding (bits per second) until a time, then `padding`: a probe's first second.
        var burst: Burst? = nil
        /// The link is evidently full: stop sending the current layer now, not only once the new
        /// one's keyframe comes (until then all of it would queue, or drop, ahead of that keyframe).
        var stopCurrent = false
    }

    struct Burst: Equatable {
        var padding: Int
        var until: ContinuousClock.Instant
    }

    private struct Probe {
        var peak: Int
        /// The estimate it last rose `probeGrowth` from, and when.
        var base: Int
        var baseAt: ContinuousClock.Instant
        var burstUntil: ContinuousClock.Instant?
    }

    /// Since when each layer larger than the current one has fit without a break (by SSRC).
    private var fitsSince: [UInt32: ContinuousClock.Instant] = [:]
    /// Since when the current layer has not fit (without evidence of a full link).
    private var unfitSince: ContinuousClock.Instant?
    private var lastEstimate: Int?
    private var probe: Probe?
    private var fullAt: Int?
    private var settleUntil: ContinuousClock.Instant?
    private var nextProbe: ContinuousClock.Instant?
    private var backoff = firstBackoff
    /// Probes started and failed (stats, tests).
    private(set) var probes = 0
    private(set) var failedProbes = 0

    var probing: Bool { probe != nil }

    /// `layers`: the ones the player may get, smallest first; `current`: the layer decided last;
    /// `limitedByLoss`: loss, not the player's REMB, set the estimate. `provisional`: an
    /// estimate from before the player's estimator settled, given because its link is full —
    /// a layer that does not fit steps down at once, to the smallest: the layers' rates may
    /// still be ramping (a Chromium publisher's are for seconds), and a player that joined on
    /// one too large went h → m at 358 kbit/s and m → l a second later as m grew (two freezes).
    mutating func decide(layers: [Layer], current: UInt32?, estimate: Int?, limitedByLoss: Bool = false,
                         provisional: Bool = false, delivered: Int? = nil, verified: Int? = nil,
                         now: ContinuousClock.Instant) -> Decision? {
        guard let largest = layers.last else { return nil }
        guard let estimate else {
            fitsSince.removeAll()
            probe = nil
            return Decision(ssrc: largest.ssrc, padding: 0)
        }
        let fell = lastEstimate.map { Double(estimate) <= Double($0) * Self.fallRatio } ?? false
        lastEstimate = estimate
        let budget = Double(estimate) * Self.headroom
        let fitting = layers.lastIndex { Double($0.bitrate) <= budget } ?? 0
        guard let index = layers.firstIndex(where: { $0.ssrc == current }) else {
            fitsSince.removeAll()
            probe = nil
            return Decision(ssrc: layers[fitting].ssrc, padding: 0)
        }
        if layers[index].bitrate > estimate {
            // Does not fit at all: down, to what fits with headroom, once the link says it is
            // full; no probe until the estimate has settled there.
            fitsSince.removeAll()
            let since = unfitSince ?? now
            unfitSince = since
            // The link delivers the layer: an estimate that is low but did not fall is behind
            // it, not a full link; its probes (`wanted`) get `carriedHold` to pass it.
            let carried = delivered.map { Double($0) >= Double(layers[index].bitrate) * Self.carriedShare } ?? false
            let farBelow = Double(estimate) < Double(layers[index].bitrate) * Self.farBelow
            let held = now - since >= (carried ? Self.carriedHold : Self.downHold)
            guard fell || limitedByLoss || provisional || held || (farBelow && !carried) else {
                return Decision(ssrc: layers[index].ssrc, padding: 0)
            }
            unfitSince = nil
            fullAt = Int(Double(estimate) / Self.headroom)
            if probe != nil { probeFailed(now: now) }
            nextProbe = max(nextProbe ?? now, now + Self.firstBackoff)
            return Decision(ssrc: layers[provisional ? 0 : min(fitting, index)].ssrc, padding: 0, stopCurrent: provisional)
        }
        unfitSince = nil
        // A send-side estimate steps up only as far as the link was seen to carry (`verified`):
        // its AIMD grows to 1.5 × what is acknowledged with no evidence, the whole step between
        // temporal choices (l/T0 → l/T1 is ×1.5): a viewer behind 97 kbit/s went to l/T1 at a
        // 122 kbit/s estimate and queued 1.2 s. A layer that fits but was not seen carried is
        // probed for (padded towards) like one that does not fit yet.
        let carried = verified.map { v in layers.lastIndex { Double($0.bitrate) <= Double(v) * Self.headroom } ?? 0 } ?? fitting
        if fitting > index {
            // The estimate carries a larger layer: up to the largest that has fit for `upHold`,
            // each larger layer on its own hold, kept across a step up: a probe that found a
            // grown link goes l -> h in one step or two close together (one hold per step took
            // ~3 s more, plus a keyframe).
            for i in layers.indices where i > index {
                fitsSince[layers[i].ssrc] = i <= fitting ? fitsSince[layers[i].ssrc] ?? now : nil
            }
            if let up = layers.indices.last(where: { i in
                i > index && i <= carried && fitsSince[layers[i].ssrc].map { now - $0 >= Self.upHold } ?? false
            }) {
                for i in (index + 1)...up { fitsSince[layers[i].ssrc] = nil }   // no longer larger
                probe = nil
                backoff = Self.firstBackoff
                return Decision(ssrc: layers[up].ssrc, padding: 0)
            }
            guard carried < fitting else { return Decision(ssrc: layers[index].ssrc, padding: 0) }
        } else {
            fitsSince.removeAll()
        }
        guard index + 1 < layers.count else {
            probe = nil
            return Decision(ssrc: layers[index].ssrc, padding: 0)
        }
        let rate = layers[index].bitrate
        if var p = probe {
            if Double(estimate) < Double(p.peak) * Self.probeFailure || now - p.baseAt >= Self.probeStall {
                probeFailed(now: now)
                settleUntil = now + Self.settleLength
            } else {
                p.peak = max(p.peak, estimate)
                if Double(estimate) >= Double(p.base) * Self.probeGrowth { (p.base, p.baseAt) = (estimate, now) }
                probe = p
            }
        } else if nextProbe.map({ now >= $0 }) ?? true || grown(estimate) {
            probe = Probe(peak: estimate, base: estimate, baseAt: now, burstUntil: nil)
            probes += 1
        }
        guard var p = probe else {
            let settling = settleUntil.map { now < $0 } ?? false
            return Decision(ssrc: layers[index].ssrc, padding: settling ? max(0, Int(Double(estimate) * Self.settleShare) - rate) : 0)
        }
        if p.burstUntil == nil, fullAt == nil || grown(estimate) {
            p.burstUntil = now + Self.burstLength
            probe = p
        }
        // Towards what a send-side estimate fits (the next layer if none), and no more than
        // `verifiedStep` over what the link was seen to carry: padding to an estimate the AIMD
        // grew past a 260 kbit/s link (311 kbit/s) overflowed its queue, the loss cut the
        // estimate to 160 and the player fell a layer. The estimator's probes find a grown link.
        let wanted = Int(Double(layers[max(index + 1, fitting)].bitrate) / Self.headroom)
        let ceiling = min(wanted, verified.map { Int(Double($0) * Self.verifiedStep) } ?? .max)
        var decision = Decision(ssrc: layers[index].ssrc, padding: max(0, min(estimate, ceiling) - rate))
        if let until = p.burstUntil, now < until {
            decision.burst = Burst(padding: max(0, min(Int(Double(estimate) * Self.burstRatio), ceiling) - rate), until: until)
        }
        return decision
    }

    /// The estimate is `burstAbove` where the link was last seen full: the link has grown.
    private func grown(_ estimate: Int) -> Bool {
        fullAt.map { Double(estimate) > Double($0) * Self.burstAbove } ?? false
    }

    private mutating func probeFailed(now: ContinuousClock.Instant) {
        if let peak = probe?.peak { fullAt = peak }
        probe = nil
        failedProbes += 1
        nextProbe = now + backoff
        backoff = min(backoff * 2, Self.maxBackoff)
    }
}

/// Bytes a player may be sent beyond its layer (answers to its NACKs), refilled at a rate the
/// caller gives: a token bucket holding at most `burst` of that rate.
struct RateBudget {
    static let burst: Duration = .milliseconds(250)
    /// At least this much fits in the bucket, whatever the rate (a few full packets).
    static let minimumBytes = 6_000.0
    private var bytes = minimumBytes
    private var last: ContinuousClock.Instant?

    /// Whether `size` bytes may go now at `bitrate` (bits per second); takes them if so.
    mutating func take(_ size: Int, bitrate: Int, now: ContinuousClock.Instant) -> Bool {
        let rate = Double(max(0, bitrate)) / 8
        let cap = max(Self.minimumBytes, rate * Self.burst.inSeconds)
        if let last, now > last { bytes = min(cap, bytes + rate * (now - last).inSeconds) }
        last = now
        guard bytes >= Double(size) else { return false }
        bytes -= Double(size)
        return true
    }
}
