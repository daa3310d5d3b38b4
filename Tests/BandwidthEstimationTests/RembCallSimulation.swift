import RTP
@testable import BandwidthEstimation
import SeededRandom

/// A REMB-only call on a fake clock in 1 ms steps: a sender without transport-cc whose rate
/// obeys the last REMB it got (down at once, up by 10% of the gap per frame, never above it,
/// never above `maxSendBitrate`), sending 30 fps video as unpaced bursts of ≤ 1200-byte packets
/// (frame sizes ±20%, RTP timestamps at 90 kHz) and 50 packets/s of 100-byte audio (48 kHz),
/// through a `SimulatedLink` bottleneck to a `RemoteBitrateEstimator`, polled for REMBs every
/// step; REMBs reach the sender `returnDelay` later, rounded as on the wire.
struct RembCallSimulation {
    static let videoSSRC: UInt32 = 0x1111_1111
    static let audioSSRC: UInt32 = 0x2222_2222

    struct Packet {
        var ssrc: UInt32
        var rtpTimestamp: UInt32
        var clockRate: Int
        var absSendTime: UInt32?
    }

    struct Result {
        /// REMBs as the receiver emitted them (seconds, bps, SSRCs).
        var rembs: [(t: Double, bps: Int, ssrcs: [UInt32])] = []
        /// Every 100 ms: estimate, sender's rate, detector state.
        var estimates: [(t: Double, bps: Int?)] = []
        var sendRates: [(t: Double, bps: Int)] = []
        var states: [(t: Double, state: DelayState)] = []
        /// (send seconds, ms in the bottleneck queue incl. transmission).
        var queueDelays: [(t: Double, ms: Double)] = []
        /// (arrival seconds, bytes).
        var received: [(t: Double, bytes: Int)] = []
        var droppedByQueue = 0
        var final: RemoteBitrateEstimator?

        func rembs(from: Double, to: Double) -> [Int] { rembs.filter { $0.t >= from && $0.t < to }.map(\.bps) }

        func firstREMB(from: Double, where condition: (Int) -> Bool) -> Double? {
            rembs.first { $0.t >= from && condition($0.bps) }?.t
        }

        func throughput(from: Double, to: Double) -> Double {
            let bytes = received.filter { $0.t >= from && $0.t < to }.reduce(0) { $0 + $1.bytes }
            return Double(bytes) * 8 / (to - from)
        }

        func queueDelayP95(from: Double, to: Double) -> Double {
            percentile(queueDelays.filter { $0.t >= from && $0.t < to }.map(\.ms), 0.95)
        }

        func sendRate(at t: Double) -> Int { sendRates.last { $0.t <= t }?.bps ?? 0 }
    }

    var capacity: [(at: Double, bps: Int)] = [(0, 1_000_000)]
    var startBitrate = 300_000
    var maxSendBitrate = 3_000_000
    var propagation = Duration.milliseconds(20)
    var returnDelay = Duration.milliseconds(20)
    var queueLimit = Duration.milliseconds(200)
    var audio = true
    var videoTimestampBase: UInt32 = 0x1234_5678
    var audioTimestampBase: UInt32 = 0x0BAD_CAFE
    /// Added to the video RTP timestamps from this time on (a sender restarting its clock).
    var timestampJump: (at: Double, by: UInt32)?
    /// Stamp abs-send-time (send time + this offset, seconds, mod 64) on every packet.
    var absSendTimeOffset: Int64?
    var seed: UInt64 = 3

    func run(seconds: Double) -> Result {
        let t0 = Moment(.now)
        var rbe = RemoteBitrateEstimator()
        var link = SimulatedLink(bitrate: capacity.first?.bps ?? 1_000_000, propagation: propagation,
                                 queueLimit: queueLimit)
        var rng = SplitMix64(seed: seed)
        var packets: [Packet] = []
        var rembQueue: [(due: Moment, bps: Int)] = []
        var rate = Double(startBitrate)
        var lastREMB: Int?
        var result = Result()
        var capacityIndex = 0
        var nextFrameMs = 0.0
        var frame: UInt32 = 0

        func send(_ p: Packet, size: Int, at now: Moment) {
            packets.append(p)
            link.send(sequence: Int64(packets.count - 1), size: size, at: now)
        }

        for step in 0...Int(seconds * 1000) {
            let now = t0 + .milliseconds(step)
            let t = Double(step) / 1000
            while capacityIndex < capacity.count, capacity[capacityIndex].at <= t {
                link.bitrate = capacity[capacityIndex].bps
                capacityIndex += 1
            }

            // Receiver: arrivals, then the REMB check.
            for d in link.deliver(until: now) {
                let p = packets[Int(d.sequence)]
                rbe.onPacket(rtpTimestamp: p.rtpTimestamp, clockRate: p.clockRate, size: d.size, ssrc: p.ssrc,
                             absSendTime: p.absSendTime, at: d.arrival)
                result.received.append(((d.arrival - t0).s, d.size))
            }
            if let remb = rbe.remb(now: now) {
                result.rembs.append((t, remb.bitrate, remb.ssrcs))
                let (exponent, mantissa) = REMB.encode(bitrate: UInt64(remb.bitrate))
                rembQueue.append((now + returnDelay, Int(mantissa) << Int(exponent)))
            }

            // Sender.
            while let first = rembQueue.first, first.due <= now {
                lastREMB = first.bps
                rembQueue.removeFirst()
            }
            let abs = absSendTimeOffset.map { offset in
                UInt32(truncatingIfNeeded: (Int64(step) * 262_144 / 1000 + offset * 262_144) & 0xFF_FFFF)
            }
            if audio && step % 20 == 0 {
                let ts = audioTimestampBase &+ UInt32(truncatingIfNeeded: step * 48)
                send(Packet(ssrc: Self.audioSSRC, rtpTimestamp: ts, clockRate: 48_000, absSendTime: abs), size: 100,
                     at: now)
            }
            if Double(step) >= nextFrameMs {
                nextFrameMs += 1000.0 / 30
                if let ceiling = lastREMB.map(Double.init) {
                    rate = ceiling < rate ? ceiling : rate + 0.1 * (ceiling - rate)
                }
                rate = min(rate, Double(maxSendBitrate))
                let videoRate = max(0, rate - (audio ? 40_000 : 0))
                var bytes = Int(videoRate / 8 / 30 * (0.8 + 0.4 * rng.unit()))
                var ts = videoTimestampBase &+ frame &* 3000
                if let jump = timestampJump, t >= jump.at { ts &+= jump.by }
                frame &+= 1
                while bytes > 0 {
                    let size = min(1200, bytes)
                    bytes -= size
                    send(Packet(ssrc: Self.videoSSRC, rtpTimestamp: ts, clockRate: 90_000, absSendTime: abs),
                         size: size, at: now)
                }
            }

            if step % 100 == 0 {
                result.estimates.append((t, rbe.estimate))
                result.sendRates.append((t, Int(rate)))
                result.states.append((t, rbe.delayState))
            }
        }
        result.queueDelays = link.queueDelays.map { (($0.at - t0).s, $0.delay.ms) }
        result.droppedByQueue = link.droppedByQueue
        result.final = rbe
        return result
    }
}
