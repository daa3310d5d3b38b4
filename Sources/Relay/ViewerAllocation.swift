import BandwidthEstimation
import RTPMedia

/// What one player's link carries, from that player's own feedback. Players are not offered
/// transport-cc (at hundreds of players its stamps and feedback cost the relay ~20% of its
/// CPU), so Chromium, aiortc and swiftrtc answer with REMB; its receiver reports' loss caps
/// that as GCC's loss-based rule does. The same `BandwidthEstimator` our senders use towards a
/// REMB-only peer, without probes (the relay pads instead: `LayerAllocator`). Nil until the
/// player's first REMB.
struct ViewerEstimate {
    static let maxBitrate = 50_000_000
    private var estimator = BandwidthEstimator(configuration: .init(startBitrate: maxBitrate, minBitrate: 30_000, maxBitrate: maxBitrate,
                                                                    probing: false, periodicProbeInterval: nil))
    private(set) var lastREMB: Int?
    /// Whether a receiver report came: until one does, the loss-based side knows nothing
    /// (it would hold where the REMB once pushed it) and the REMB is taken as it is.
    private var reported = false

    /// Bits per second; nil before the first REMB.
    var bitrate: Int? {
        guard let lastREMB else { return nil }
        return reported ? estimator.targetBitrate : lastREMB
    }

    mutating func remb(_ bitrate: UInt64, now: ContinuousClock.Instant) {
        let value = Int(clamping: bitrate)
        lastREMB = value
        estimator.onREMB(bitrate: value, at: now)
    }

    /// A receiver report block on what we send this player.
    mutating func report(fractionLost: UInt8, now: ContinuousClock.Instant) {
        estimator.onReceiverReport(fractionLost: fractionLost, rtt: nil, at: now)
        reported = true
    }

    /// The loss-based side's periodic increase.
    mutating func tick(now: ContinuousClock.Instant) {
        estimator.process(at: now)
    }
}

/// Which simulcast layer one player is sent, from its estimate: the largest (up to the layer it
/// asked for) whose rate fits. Down at once when the current one no longer fits; up one layer
/// at a time, once the estimate has carried the next one for `upHold`. A receiver's estimate
/// cannot rise far above what it receives (REMB: 1.5 × its incoming rate), so to find room
/// for the next layer the player is padded towards it (`Decision.padding`, never above the
/// estimate itself): a probe, which lasts while the estimate keeps rising and fails when it
/// falls back (the link is full) or stalls; a failed probe is tried again after a backoff
/// (doubling). Without an estimate (no REMB yet) the player gets the largest. Sans-I/O.
struct LayerAllocator {
    /// A layer fits when its rate is at most this share of the estimate (audio, resends, headers).
    static let headroom = 0.85
    static let upHold: Duration = .seconds(2)
    /// A probe fails when the estimate falls below this share of its peak during the probe, or
    /// when it has not risen `probeGrowth` above that peak for `probeStall`.
    static let probeFailure = 0.85
    static let probeGrowth = 1.05
    static let probeStall: Duration = .seconds(5)
    static let firstBackoff: Duration = .seconds(5)
    static let maxBackoff: Duration = .seconds(40)

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
            // Does not fit at all: down now, to what fits with headroom.
            fitsSince = nil
            if probe != nil { probeFailed(now: now) }
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
