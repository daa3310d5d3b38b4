/// Receive-side bandwidth estimation for peers that send no transport-cc but obey REMB (old
/// libwebrtc, aiortc): draft-ietf-rmcat-gcc-02 §5 on the receiver, in the manner of libwebrtc's
/// `RemoteBitrateEstimatorSingleStream` + `RembThrottler`. Sans-I/O: packets and a clock in, an
/// estimate and "send a REMB now" out.
///
/// Per SSRC (`RemoteStream`): send times from the RTP timestamp (a frame, one timestamp, is one
/// packet group) or from abs-send-time when given, then the send side's `InterArrival`,
/// `TrendlineFilter` and `OveruseDetector`. The streams' states combine (any overusing →
/// overusing, else any underusing → underusing) into one `AIMDRateControl` fed with the
/// incoming bitrate over the last 500 ms (the draft's R_hat window T ∈ [0.5, 1] s: the short
/// end, so that after a capacity drop the decreases start from what the bottleneck now
/// delivers, not from the second before it; `incomingBitrate` reports the full second).
///
/// Start: the estimate exists once packets have come in for `initializationTime` (1 s), at
/// 1.5 × that incoming rate + 10 kbit/s — the ceiling AIMD's increase obeys anyway — or at once
/// when overuse is detected before that (then 0.85 × the incoming rate, libwebrtc's rule).
/// Until the first overuse the estimate keeps following that ceiling up (the sender is told it
/// may send 50% more than it does): the send side finds the link by probing, the receiver
/// cannot, and AIMD's 8%/s alone would take 15 s from 300 kbit/s to 1 Mbit/s. After the first
/// overuse it is plain AIMD. (libwebrtc waits 5 s and starts at the incoming rate.)
///
/// Drive it from the stream's loop: `onPacket` for every media packet received (RTX and FEC
/// included if they share the bottleneck; padding-only packets too), `remb(now:)` after each
/// packet or timer tick; when it returns a value, send that REMB.
///
/// Bounded: at most `maxStreams` SSRCs (further ones count toward the incoming rate only, until
/// a stream times out after `streamTimeout` without packets), fixed-size rate buckets, the
/// trendline's 20-group window. No input traps: sizes are clamped, clock rates outside 1 Hz–10 MHz
/// are ignored for delay, timestamp jumps restart a stream's grouping.
///
/// Not seen here: loss. A bottleneck whose buffer is too shallow to show a delay trend (≲ 50 ms
/// in simulation) or a policer leaves the estimate above the link; the sender's loss-based
/// control (RTCP RR) has to catch that, as with libwebrtc's receive-side estimator.
public struct RemoteBitrateEstimator: Sendable {
    /// REMBs at most this often, unless the estimate drops (libwebrtc `kRembSendInterval`).
    public static let rembInterval = Duration.seconds(1)
    /// A REMB goes out at once when the estimate is at most this fraction of the last one sent.
    public static let rembDecreaseRatio = 0.97
    /// A stream without packets this long is forgotten (and dropped from REMB's SSRC list).
    public static let streamTimeout = Duration.seconds(2)
    public static let maxStreams = 16
    /// How long packets must have been coming in before the first estimate.
    public static let initializationTime = Duration.seconds(1)
    /// Packet sizes above this count as this (jumbo frames at most).
    static let maxPacketSize = 65_535
    /// The incoming-rate window AIMD works with.
    static let rateControlWindow = Duration.milliseconds(500)
    /// The ramp before the first overuse: estimate = factor × incoming + offset.
    static let rampFactor = 1.5
    static let rampOffset = 10_000.0

    public let minBitrate: Int
    public let maxBitrate: Int
    private(set) var streams: [RemoteStream] = []
    private(set) var incoming = IncomingBitrate()
    private var rateControl: AIMDRateControl?
    /// Until the first overuse the estimate follows the incoming rate up (see above).
    private(set) var rampingUp = true
    private var previousState = DelayState.normal
    /// Local times are µs from the first packet's arrival; `latest` is the newest time seen.
    private var epoch: Moment?
    private var latest: Moment?
    private var rtt: Duration?
    private var lastREMB: (at: Moment, bitrate: Int)?

    /// Bitrates in bits per second; `maxBitrate` below `minBitrate` is raised to it.
    public init(minBitrate: Int = 30_000, maxBitrate: Int = 30_000_000) {
        self.minBitrate = max(1000, minBitrate)
        self.maxBitrate = max(self.minBitrate, maxBitrate)
    }

    // MARK: Outputs

    /// The estimated available bitrate (bps); nil until `initializationTime` of packets (or an
    /// earlier overuse).
    public var estimate: Int? { rateControl.map { Int($0.bitrate) } }

    /// Bits per second received over the last second up to the newest packet, all SSRCs; nil
    /// during the first 500 ms.
    public var incomingBitrate: Int? {
        guard let latest else { return nil }
        return incomingBitrate(at: latest)
    }

    /// As `incomingBitrate`, over the second up to `now` (lower once packets stop).
    public func incomingBitrate(at now: Moment) -> Int? {
        incoming.bitrate(at: micros(now)).map { Int(min($0, 1e15)) }
    }

    /// The worst of the streams' detector states.
    public var delayState: DelayState { Self.combined(streams) }

    /// SSRCs heard from within `streamTimeout` of the newest packet, in the order first heard.
    public var ssrcs: [UInt32] { streams.map(\.ssrc) }

    /// Whether a REMB is due at `now`, and with what: at most once per `rembInterval`, or at once
    /// when the estimate fell to `rembDecreaseRatio` × the last one sent or below. Returns each
    /// REMB once (it counts as sent); nil before the first estimate or with no live stream.
    public mutating func remb(now: Moment) -> (bitrate: Int, ssrcs: [UInt32])? {
        if epoch != nil { expireStreams(at: max(micros(now), micros(latest ?? now))) }
        guard let estimate, !streams.isEmpty else { return nil }
        if let last = lastREMB {
            let elapsed = now - last.at
            // A clock that went backwards counts as "long ago" rather than blocking REMBs.
            if elapsed >= .zero && elapsed < Self.rembInterval
                && Double(estimate) > Self.rembDecreaseRatio * Double(last.bitrate) {
                return nil
            }
        }
        lastREMB = (now, estimate)
        return (estimate, ssrcs)
    }

    // MARK: Inputs

    /// One received media packet. `size` in bytes (as sent on the wire or the RTP packet,
    /// consistently); `absSendTime` the 24-bit abs-send-time extension if the packet had one,
    /// used instead of the RTP timestamp as the send time.
    public mutating func onPacket(rtpTimestamp: UInt32, clockRate: Int, size: Int, ssrc: UInt32,
                                  absSendTime: UInt32? = nil, at arrival: Moment) {
        if epoch == nil { epoch = arrival }
        if latest.map({ arrival > $0 }) ?? true { latest = arrival }
        let now = micros(latest ?? arrival)
        let arrivalMicros = micros(arrival)
        let bytes = min(max(size, 0), Self.maxPacketSize)
        incoming.add(bytes: bytes, at: now)
        expireStreams(at: now)

        let index: Int
        if let i = streams.firstIndex(where: { $0.ssrc == ssrc }) {
            index = i
        } else if streams.count < Self.maxStreams {
            streams.append(RemoteStream(ssrc: ssrc, at: now))
            index = streams.count - 1
        } else {
            return
        }
        streams[index].lastHeard = now
        let updated = streams[index].add(rtpTimestamp: rtpTimestamp, clockRate: clockRate, absSendTime: absSendTime,
                                         size: bytes, arrival: arrivalMicros)
        if updated { updateRateControl(at: now) }
    }

    /// Round-trip time to the sender (RTCP XR/SR), if known: paces AIMD's decreases and its
    /// additive increase. Default 200 ms.
    public mutating func setRTT(_ rtt: Duration) {
        guard rtt >= .zero, rtt < .seconds(60) else { return }
        self.rtt = rtt
        rateControl?.rtt = rtt
    }

    // MARK: Internals

    private mutating func updateRateControl(at nowMicros: Int64) {
        let state = Self.combined(streams)
        defer { previousState = state }
        guard let now = latest,
              let incomingRate = incoming.bitrate(at: nowMicros, window: Self.rateControlWindow.inMicroseconds)
        else { return }
        let throughput = min(incomingRate, 1e15)
        let ramp = Self.rampFactor * throughput + Self.rampOffset
        var control: AIMDRateControl
        if let existing = rateControl {
            control = existing
        } else if state == .overusing {
            control = makeRateControl(start: throughput)
        } else if nowMicros >= Self.initializationTime.inMicroseconds {
            rateControl = makeRateControl(start: ramp)
            return
        } else {
            return
        }

        if state == .overusing {
            if rateControl == nil || previousState != .overusing
                || control.timeToReduceFurther(at: now, throughput: throughput) {
                control.update(.overusing, throughput: throughput, at: now)
                rampingUp = false
            }
        } else {
            control.update(state, throughput: throughput, at: now)
            if rampingUp && state == .normal && ramp > control.bitrate { control.setEstimate(ramp, at: now) }
        }
        rateControl = control
    }

    private func makeRateControl(start: Double) -> AIMDRateControl {
        var control = AIMDRateControl(startBitrate: start, minBitrate: Double(minBitrate),
                                      maxBitrate: Double(maxBitrate))
        if let rtt { control.rtt = rtt }
        return control
    }

    private mutating func expireStreams(at now: Int64) {
        let timeout = Self.streamTimeout.inMicroseconds
        streams.removeAll { now - $0.lastHeard > timeout }
    }

    private static func combined(_ streams: [RemoteStream]) -> DelayState {
        var state = DelayState.normal
        for s in streams {
            if s.state == .overusing { return .overusing }
            if s.state == .underusing { state = .underusing }
        }
        return state
    }

    /// µs since the first packet, saturating far outside any real call (±2^40 s).
    private func micros(_ t: Moment) -> Int64 {
        guard let epoch else { return 0 }
        let c = (t - epoch).components
        let limit: Int64 = 1 << 40
        let seconds = min(max(c.seconds, -limit), limit)
        return seconds * 1_000_000 + c.attoseconds / 1_000_000_000_000
    }
}
