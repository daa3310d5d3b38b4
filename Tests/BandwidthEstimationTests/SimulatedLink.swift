/// A bottleneck: a FIFO drained at `bitrate` (changeable), tail-dropping once it holds more
/// than `queueLimit` of transmission time, then a fixed propagation delay, with optional
/// random loss before the queue. Times are exact (not tick-rounded).
import BandwidthEstimation
import SeededRandom
struct SimulatedLink {
    struct Delivery {
        var sequence: Int64
        var size: Int
        var arrival: Moment
    }

    var bitrate: Int
    var propagation: Duration
    var queueLimit: Duration
    var lossRate: Double
    var rng: SplitMix64
    private(set) var inFlight: [Delivery] = []
    private var head = 0
    private var busyUntil: Moment?
    /// (send time, time spent in the queue including transmission) per packet that got through.
    private(set) var queueDelays: [(at: Moment, delay: Duration)] = []
    private(set) var droppedByQueue = 0
    private(set) var droppedRandomly = 0

    init(bitrate: Int, propagation: Duration = .milliseconds(20), queueLimit: Duration = .milliseconds(200),
         lossRate: Double = 0, seed: UInt64 = 1) {
        self.bitrate = bitrate
        self.propagation = propagation
        self.queueLimit = queueLimit
        self.lossRate = lossRate
        rng = SplitMix64(seed: seed)
    }

    mutating func send(sequence: Int64, size: Int, at now: Moment) {
        if lossRate > 0 && rng.unit() < lossRate {
            droppedRandomly += 1
            return
        }
        let start = max(now, busyUntil ?? now)
        if start - now > queueLimit {
            droppedByQueue += 1
            return
        }
        let departure = start + .nanoseconds(Int64(Double(size * 8) / Double(bitrate) * 1e9))
        busyUntil = departure
        queueDelays.append((now, departure - now))
        inFlight.append(Delivery(sequence: sequence, size: size, arrival: departure + propagation))
    }

    /// Packets that have reached the far end by `now`, in order.
    mutating func deliver(until now: Moment) -> [Delivery] {
        var out: [Delivery] = []
        while head < inFlight.count, inFlight[head].arrival <= now {
            out.append(inFlight[head])
            head += 1
        }
        if head > 4096 {
            inFlight.removeFirst(head)
            head = 0
        }
        return out
    }
}
