import RTP

/// Sender side of keyframe requests for one outgoing SSRC: a PLI (RFC 4585 §6.3.1) or a FIR
/// entry with a new command sequence number (RFC 5104 §4.3.1.2: a repeated number is the same
/// request, not a new one) asks the encoder for a keyframe. Requests closer together than
/// `minInterval` collapse into one (the keyframe already on its way answers them), and so do
/// requests while a keyframe waits in the sender's pacer queue and for `minInterval` after it
/// leaves (`keyframeQueued`): behind a narrow link a keyframe can take longer to go out than the
/// receiver waits before asking again, and each new one started the wait over (a storm).
public struct KeyframeRequestTracker: Sendable {
    public let ssrc: UInt32
    public var minInterval: Duration
    private var lastFIRSequence: [UInt32: UInt8] = [:]
    /// Requests before this are answered by the keyframe last asked for or queued.
    private var quietUntil: ContinuousClock.Instant?
    public private(set) var plisReceived = 0
    public private(set) var firsReceived = 0
    public private(set) var keyframesRequested = 0

    /// The one throttle policy, for senders and a relay alike: a keyframe takes about this long
    /// to reach the receivers that asked, so asking again sooner only makes a storm.
    public static let defaultInterval: Duration = .milliseconds(300)

    public init(ssrc: UInt32, minInterval: Duration = KeyframeRequestTracker.defaultInterval) {
        self.ssrc = ssrc
        self.minInterval = minInterval
    }

    /// True when this RTCP packet should make the encoder produce a keyframe now.
    public mutating func handle(_ packet: RTCPPacket, now: ContinuousClock.Instant) -> Bool {
        var asked = false
        switch packet {
        case .pli(_, let media) where media == ssrc:
            plisReceived += 1
            asked = true
        case .fir(let fir):
            for entry in fir.entries where entry.ssrc == ssrc {
                firsReceived += 1
                if lastFIRSequence[fir.senderSSRC] != entry.sequenceNumber {
                    lastFIRSequence[fir.senderSSRC] = entry.sequenceNumber
                    asked = true
                }
            }
        default:
            break
        }
        guard asked else { return false }
        if let until = quietUntil, now < until { return false }
        quietUntil = now + minInterval
        keyframesRequested += 1
        return true
    }

    /// When a request would next make a keyframe (nil: now). A relay asks this before it builds
    /// a request of its own, and schedules a held-back one for then.
    public var nextAllowed: ContinuousClock.Instant? { quietUntil }

    /// Whether a request at `now` would make a keyframe (not collapse into the one on its way).
    public func allows(now: ContinuousClock.Instant) -> Bool { quietUntil.map { now >= $0 } ?? true }

    /// The last request is known lost (a relay sent it to a port its publisher has left): it
    /// holds nothing back.
    public mutating func lastRequestLost() {
        quietUntil = nil
    }

    /// A keyframe (asked for or not) went into the send queue; its last packet leaves by `leavingBy`.
    public mutating func keyframeQueued(leavingBy: ContinuousClock.Instant) {
        quietUntil = max(quietUntil ?? leavingBy, leavingBy + minInterval)
    }
}
