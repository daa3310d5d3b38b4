import RTP
import RTPMedia

/// What one player's link carries, from that player's own feedback. Players are not offered
/// transport-cc (at hundreds of players its stamps and feedback cost the relay ~20% of its
/// CPU), so Chromium, aiortc and swiftrtc answer with REMB — their delay-based estimate — which
/// is taken as it comes, up or down. Loss the REMB does not see (a policer, a buffer too shallow
/// to show delay) caps it as GCC's loss-based rule does: over 10%, the cap is the estimate ×
/// (1 − loss/2); under 2% it grows 8% per measurement and is gone once above the REMB; between,
/// it holds. Loss is measured from the reports' cumulative counters over at least a second and
/// `minPackets` packets (half a second before any estimate): what stayed lost after
/// retransmissions. Each report's own fraction lost is no measure — Chromium sends a receiver report with every NACK, tens a second, each
/// counting as lost what its resend will recover; taken one by one at 5% random loss they
/// ratcheted the cap down to a tenth of the stream and starved its resends. Before the player's
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

    /// Bits per second; nil before the first REMB or heavy-loss measurement.
    var bitrate: Int? { lastREMB.map { min($0, lossCap ?? .max) } ?? lossCap }

    mutating func remb(_ bitrate: UInt64) {
        lastREMB = Int(clamping: bitrate)
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
        guard let estimate = bitrate else {
            if loss > Self.highLoss, sending > 0 { lossCap = Int(Double(sending) * (1 - loss)) }
            return
        }
        if loss > Self.highLoss {
            lossCap = Int(Double(estimate) * (1 - loss / 2))
        } else if loss < Self.lowLoss, let cap = lossCap {
            lossCap = Int(Double(cap) * 1.08) + 1000
            if let remb = lastREMB, lossCap! >= remb { lossCap = nil }
        }
    }
}

/// Which simulcast layer one player is sent, from its estimate: the largest (up to the layer it
/// asked for) whose rate fits. Down at once when the current one no longer fits; up one layer
/// at a time, once the estimate has carried the next one for `upHold`. A receiver's estimate
/// cannot rise far above what it receives (REMB: 1.5 × its incoming rate), so to find room
/// for the next layer the player is padded towards it (`Decision.padding`, never above the
/// estimate itself): a probe, which lasts while the estimate keeps rising and fails when it
/// falls back (the link is full) or stalls; a failed probe is tried again after a backoff
/// (doubling), and none starts within `firstBackoff` of a step down. Without an estimate (no
/// REMB yet) the player gets the largest: most links carry it, and one that does not is
/// stepped down at its first REMB. Sans-I/O.
struct LayerAllocator {
    /// A layer fits when its rate is at most this share of the estimate (audio, resends, headers).
    static let headroom = 0.85
    static let upHold: Duration = .seconds(2)
    /// A probe fails when the estimate falls below this share of its peak during the probe, or
    /// when it has not risen `probeGrowth` above that peak for `probeStall`.
    static let probeFailure = 0.85
    static let probeGrowth = 1.05
    static let probeStall: Duration = .seconds(5)
    /// Probes stay frequent: padding never goes above the estimate, so a probe into a full link
    /// costs a little delay before the receiver's estimate falls, and the next one is the only
    /// way to find that the link has grown.
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
    }

    private var fitsSince: ContinuousClock.Instant?
    private var probe: (peak: Int, peakAt: ContinuousClock.Instant)?
    private var nextProbe: ContinuousClock.Instant?
    private var backoff = firstBackoff
    /// Probes started and failed (stats, tests).
    private(set) var probes = 0
    private(set) var failedProbes = 0

    var probing: Bool { probe != nil }

    /// `layers`: the ones the player may get, smallest first; `current`: the layer decided last.
    mutating func decide(layers: [Layer], current: UInt32?, estimate: Int?, now: ContinuousClock.Instant) -> Decision? {
        guard let largest = layers.last else { return nil }
        guard let estimate else {
            fitsSince = nil
            probe = nil
            return Decision(ssrc: largest.ssrc, padding: 0)
        }
        let budget = Double(estimate) * Self.headroom
        let fitting = layers.lastIndex { Double($0.bitrate) <= budget } ?? 0
        guard let index = layers.firstIndex(where: { $0.ssrc == current }) else {
            fitsSince = nil
            probe = nil
            return Decision(ssrc: layers[fitting].ssrc, padding: 0)
        }
        if layers[index].bitrate > estimate {
            // Does not fit at all: down now, to what fits with headroom; no probe until the
            // estimate has settled there.
            fitsSince = nil
            if probe != nil { probeFailed(now: now) }
            nextProbe = max(nextProbe ?? now, now + Self.firstBackoff)
            return Decision(ssrc: layers[min(fitting, index)].ssrc, padding: 0)
        }
        if fitting > index {
            // The estimate carries the next layer: up once it has for `upHold`.
            let since = fitsSince ?? now
            fitsSince = since
            guard now - since >= Self.upHold else { return Decision(ssrc: layers[index].ssrc, padding: 0) }
            fitsSince = nil
            probe = nil
            backoff = Self.firstBackoff
            return Decision(ssrc: layers[index + 1].ssrc, padding: 0)
        }
        fitsSince = nil
        guard index + 1 < layers.count else {
            probe = nil
            return Decision(ssrc: layers[index].ssrc, padding: 0)
        }
        if let p = probe {
            if Double(estimate) < Double(p.peak) * Self.probeFailure || now - p.peakAt >= Self.probeStall {
                probeFailed(now: now)
            } else if Double(estimate) >= Double(p.peak) * Self.probeGrowth {
                probe = (estimate, now)
            }
        } else if nextProbe.map({ now >= $0 }) ?? true {
            probe = (estimate, now)
            probes += 1
        }
        guard probe != nil else { return Decision(ssrc: layers[index].ssrc, padding: 0) }
        let wanted = Int(Double(layers[index + 1].bitrate) / Self.headroom)
        return Decision(ssrc: layers[index].ssrc, padding: max(0, min(estimate, wanted) - layers[index].bitrate))
    }

    private mutating func probeFailed(now: ContinuousClock.Instant) {
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
