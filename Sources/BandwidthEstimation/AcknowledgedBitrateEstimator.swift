/// Throughput the remote end acknowledged: bytes over the last `window` of receive times
/// (libwebrtc `RobustThroughputEstimator`; the draft's "incoming rate over 500 ms").
///
/// The rate is the lower of the send rate and the receive rate of the packets in the window,
/// so a burst that arrives compressed cannot read as capacity, and the largest receive gap is
/// replaced by the second largest so one pause (the sender had nothing) does not read as a
/// collapse. A sliding window follows a rate change completely within `window`; libwebrtc's
/// older Bayesian estimator took seconds, which made overuse after a step up (or a probe)
/// back off to a fraction of the link.
struct AcknowledgedBitrateEstimator: Sendable {
    struct Sample: Sendable {
        var send: Moment
        var arrival: Int64
        var size: Int
    }

    static let window = Duration.milliseconds(500)
    static let requiredPackets = 10
    static let maxPackets = 500
    /// Feedback this far out of order means the remote clock jumped: start over.
    static let maxReordering: Int64 = 1_000_000

    private var samples: [Sample] = []
    private var head = 0

    private var count: Int { samples.count - head }

    /// Feeds one received packet (arrival on the remote clock, µs).
    mutating func update(_ packet: PacketResult) {
        guard let arrival = packet.arrivalMicroseconds else { return }
        if let last = samples.last, count > 0, last.arrival - arrival > Self.maxReordering || arrival - last.arrival > 10 * Self.maxReordering {
            samples.removeAll(keepingCapacity: true)
            head = 0
        }
        samples.append(Sample(send: packet.sendTime, arrival: arrival, size: packet.size))
        // Keep the window sorted by arrival even if feedback was reordered.
        var i = samples.count - 1
        while i > head, samples[i].arrival < samples[i - 1].arrival {
            samples.swapAt(i, i - 1)
            i -= 1
        }
        let span = Self.window.inMicroseconds
        while count > Self.maxPackets
            || (count > Self.requiredPackets && samples[samples.count - 1].arrival - samples[head].arrival > span) {
            head += 1
        }
        if head >= 256 && head * 2 >= samples.count {
            samples.removeFirst(head)
            head = 0
        }
    }

    /// Bits per second, once the window holds enough packets.
    var bitrate: Double? {
        guard count >= Self.requiredPackets else { return nil }
        let window = samples[head...]
        var largestGap: Int64 = 0
        var secondGap: Int64 = 0
        var previous: Int64?
        var firstSend = window[head].send
        var lastSend = window[head].send
        var lastSendSize = window[head].size
        var bytes = 0
        for s in window {
            if let p = previous {
                let gap = s.arrival - p
                if gap > largestGap {
                    secondGap = largestGap
                    largestGap = gap
                } else if gap > secondGap {
                    secondGap = gap
                }
            }
            previous = s.arrival
            if s.send < firstSend { firstSend = s.send }
            if s.send >= lastSend {
                lastSend = s.send
                lastSendSize = s.size
            }
            bytes += s.size
        }
        // The first packet received and the last one sent only mark the interval's ends.
        let receivedBytes = bytes - window[head].size
        let sentBytes = bytes - lastSendSize
        let receiveSpan = window[samples.count - 1].arrival - window[head].arrival - largestGap + secondGap
        let receiveRate = Double(receivedBytes) * 8 / (Double(max(receiveSpan, 1000)) / 1e6)
        let sendRate = Double(sentBytes) * 8 / max((lastSend - firstSend).inSeconds, 0.001)
        return min(sendRate, receiveRate)
    }
}
