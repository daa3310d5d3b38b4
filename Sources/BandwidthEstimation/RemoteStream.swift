/// One incoming SSRC's delay pipeline on the receive side (libwebrtc
/// `RemoteBitrateEstimatorSingleStream::Detector`): send times taken from the RTP timestamp
/// (or abs-send-time when the packet has one), grouped by `InterArrival`, then the same
/// trendline and overuse detector as the send side.
///
/// All packets of a frame carry the same RTP timestamp, so a frame is one group. Send times are
/// unwrapped relative to the previous packet (RTP: ±2^31 ticks; abs-send-time: ±32 s), so wraps
/// are invisible. A send clock that disagrees with the arrival clock by more than
/// `maxClockSkew` between two packets (a new timestamp base, a sender that stopped its clock
/// while paused, garbage) restarts the grouping instead of feeding a bogus delay step.
struct RemoteStream: Sendable {
    enum SendClock: Sendable, Equatable {
        case rtp(clockRate: Int)
        case absSendTime
    }

    static let clockRates = 1...10_000_000
    static let maxClockSkew: Int64 = 3_000_000
    /// Unwrapped send clocks beyond this many ticks restart (at 90 kHz ~1.5 years; far more
    /// than any honest call): keeps `ticks × 10^6` inside Int64.
    static let maxTicks: Int64 = 1 << 42

    let ssrc: UInt32
    /// Local arrival time of the newest packet (µs, monotonic).
    var lastHeard: Int64
    private var sendClock: SendClock?
    private var lastRaw: UInt32 = 0
    private var ticks: Int64 = 0
    private var previous: (send: Int64, arrival: Int64)?
    private var interArrival = InterArrival()
    private(set) var trendline = TrendlineFilter()
    private(set) var detector = OveruseDetector()
    /// Times the send clock restarted (jumps, clock changes): for tests and stats.
    private(set) var restarts = 0

    init(ssrc: UInt32, at now: Int64) {
        self.ssrc = ssrc
        lastHeard = now
    }

    var state: DelayState { detector.state }

    /// Adds one packet; true when it closed a group and the detector was updated.
    /// `arrival` is the packet's own arrival time (µs, may be out of order).
    mutating func add(rtpTimestamp: UInt32, clockRate: Int, absSendTime: UInt32?, size: Int,
                      arrival: Int64) -> Bool {
        let clock: SendClock
        let raw: UInt32
        if let abs = absSendTime {
            clock = .absSendTime
            raw = abs & 0xFF_FFFF
        } else {
            guard Self.clockRates.contains(clockRate) else { return false }
            clock = .rtp(clockRate: clockRate)
            raw = rtpTimestamp
        }
        var send = advance(clock: clock, raw: raw)
        if let p = previous {
            let skew = (send - p.send) - (arrival - p.arrival)
            if skew > Self.maxClockSkew || skew < -Self.maxClockSkew {
                restart(clock: clock, raw: raw)
                send = 0
            }
        }
        previous = (send, arrival)
        guard let d = interArrival.add(send: send, arrival: arrival, system: arrival, size: size) else { return false }
        let sendDeltaMs = Double(d.sendDelta) / 1000
        let delayDeltaMs = Double(d.arrivalDelta - d.sendDelta) / 1000
        let arrivalMs = Double(arrival) / 1000
        let slope = trendline.update(delayDeltaMs: delayDeltaMs, arrivalMs: arrivalMs)
        _ = detector.detect(trend: slope, sendDeltaMs: sendDeltaMs, numDeltas: trendline.numDeltas, nowMs: arrivalMs)
        return true
    }

    /// The packet's send time in µs on this stream's unwrapped send clock.
    private mutating func advance(clock: SendClock, raw: UInt32) -> Int64 {
        if sendClock != clock {
            restart(clock: clock, raw: raw)
        } else {
            let delta: Int64
            switch clock {
            case .rtp: delta = Int64(Int32(bitPattern: raw &- lastRaw))
            case .absSendTime:
                let d = Int64((raw &- lastRaw) & 0xFF_FFFF)
                delta = d >= 0x80_0000 ? d - 0x100_0000 : d
            }
            ticks += delta  // |delta| ≤ 2^31, and |ticks| ≤ maxTicks before this
            lastRaw = raw
        }
        guard ticks <= Self.maxTicks && ticks >= -Self.maxTicks else {
            restart(clock: clock, raw: raw)
            return 0
        }
        let micros: Int64
        switch clock {
        case .rtp(let rate): micros = ticks * 1_000_000 / Int64(rate)
        case .absSendTime: micros = (ticks * 1_000_000) >> 18
        }
        return micros
    }

    private mutating func restart(clock: SendClock, raw: UInt32) {
        if sendClock != nil { restarts += 1 }
        sendClock = clock
        lastRaw = raw
        ticks = 0
        previous = nil
        interArrival.reset()
    }
}
