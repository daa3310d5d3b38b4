/// Decides when to probe (libwebrtc `ProbeController`, simplified):
/// - at start, clusters at 3× and 6× the start bitrate, because additive/8%-per-second growth
///   alone would take ~15 s to find a 1 Mbit/s link from 300 kbit/s; once more after
///   `resultTimeout` if the estimate is still below 70% of what they probed: one 15 ms cluster
///   is easily spoiled (a receiver that reads late stamps it as a slow link or not at all);
/// - exponentially: while results reach 70% of the last probe, probe again at 2× the estimate;
/// - periodically (every `periodicInterval`, if set) at 2× the estimate while it is below the
///   maximum and the queue is not growing, so capacity that came back is found within seconds
///   rather than at 8% per second. libwebrtc does this only in application-limited periods;
///   doing it always costs a few padding packets every few seconds;
/// - after a large drop (the estimate under half of its high of the last `recoveryWindow`),
///   periodically every `recoveryInterval` instead: a link that narrowed for a while and came
///   back is found again within about that, not up to `periodicInterval` plus a keyframe later;
///   likewise while the sender wants more than the estimate (`wanted`: a relay's player below
///   the layer it asked for, libwebrtc's allocation probing): its link may have grown at any
///   moment, and the next probe is what finds it.
struct ProbeController: Sendable {
    static let furtherProbeThreshold = 0.7
    static let resultTimeout = Duration.seconds(1)
    static let recoveryInterval = Duration.seconds(2)
    static let recoveryWindow = Duration.seconds(30)

    enum Phase: Sendable, Equatable {
        case notStarted
        case waiting(minBitrateToProbeFurther: Double, since: Moment)
        case idle
    }

    let enabled: Bool
    let periodicInterval: Duration?
    /// What the sender would send if the link carried it (bits per second); nil: no more than
    /// the estimate gives.
    var wanted: Double?
    private(set) var phase = Phase.notStarted
    private var nextID = 1
    private var lastProbe: Moment?
    /// The start probes' rates and when to check what they found; nil once checked.
    private var startRetry: (rates: [Double], probed: Double, at: Moment)?
    /// The highest estimate seen and when, forgotten after `recoveryWindow`.
    private var high: (bitrate: Double, at: Moment)?

    init(enabled: Bool, periodicInterval: Duration?) {
        self.enabled = enabled
        self.periodicInterval = periodicInterval
    }

    mutating func start(startBitrate: Double, maxBitrate: Double, at now: Moment) -> [ProbeCluster] {
        guard phase == .notStarted else { return [] }
        phase = .idle
        guard enabled else { return [] }
        let rates = [3 * startBitrate, 6 * startBitrate]
        let clusters = initiate(rates, maxBitrate: maxBitrate, furtherAllowed: true, at: now)
        if let probed = clusters.map(\.bitrate).max() {
            startRetry = (rates, Double(probed), now + Self.resultTimeout)
        }
        return clusters
    }

    /// Every change of the combined estimate.
    mutating func onEstimate(_ estimate: Double, maxBitrate: Double, at now: Moment) -> [ProbeCluster] {
        guard case .waiting(let threshold, _) = phase, estimate > threshold else { return [] }
        return initiate([2 * estimate], maxBitrate: maxBitrate, furtherAllowed: true, at: now)
    }

    /// `allowPeriodic` is false while loss, not delay, limits the rate.
    mutating func process(estimate: Double, maxBitrate: Double, state: DelayState, allowPeriodic: Bool,
                          at now: Moment) -> [ProbeCluster] {
        if case .waiting(_, let since) = phase, now - since > Self.resultTimeout { phase = .idle }
        if let retry = startRetry, now >= retry.at, phase == .idle {
            startRetry = nil
            if enabled, allowPeriodic, state != .overusing, estimate < Self.furtherProbeThreshold * retry.probed {
                return initiate(retry.rates, maxBitrate: maxBitrate, furtherAllowed: true, at: now)
            }
        }
        if high.map({ estimate >= $0.bitrate || now - $0.at > Self.recoveryWindow }) ?? true { high = (estimate, now) }
        let recovering = high.map { estimate < 0.5 * $0.bitrate } ?? false
        guard enabled, allowPeriodic, phase == .idle, let periodic = periodicInterval, state == .normal,
              estimate < 0.95 * maxBitrate
        else { return [] }
        let deficient = wanted.map { estimate < $0 } ?? false
        let interval = recovering || deficient ? min(periodic, Self.recoveryInterval) : periodic
        guard lastProbe.map({ now - $0 >= interval }) ?? true else { return [] }
        return initiate([2 * estimate], maxBitrate: maxBitrate, furtherAllowed: true, at: now)
    }

    private mutating func initiate(_ rates: [Double], maxBitrate: Double, furtherAllowed: Bool,
                                   at now: Moment) -> [ProbeCluster] {
        var clusters: [ProbeCluster] = []
        var further = furtherAllowed
        var last = 0.0
        for rate in rates {
            var r = rate
            if r >= maxBitrate {
                r = maxBitrate
                further = false
            }
            guard r.isFinite, r >= 1 else { continue }
            clusters.append(ProbeCluster(id: nextID, bitrate: Int(r)))
            nextID = nextID == Int.max ? 1 : nextID + 1
            last = r
            if !further { break }
        }
        lastProbe = now
        phase = further && last > 0
            ? .waiting(minBitrateToProbeFurther: Self.furtherProbeThreshold * last, since: now) : .idle
        return clusters
    }
}
