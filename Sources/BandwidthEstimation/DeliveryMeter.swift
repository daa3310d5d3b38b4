/// What a link delivered of what was sent into it, over the same packets: the reported ones
/// (received or lost) since the first feedback. Delivered = received bytes over their arrival
/// span; offered = reported bytes over their send span. A link narrower than what is sent
/// delivers at its own rate and drops the excess, so the ratio falls to link / sent; a clean
/// link delivers what it is given, bursts and pauses included, so the ratio stays near 1.
///
/// Meant for a connection's first second, before the estimate settles: it never forgets. Sent
/// bytes still in flight are not in it, nor a lagging windowed throughput — the two together
/// read a clean link as full when a keyframe burst followed a quiet join (0.27 s after the
/// first packet: 41 kbit/s acknowledged of 200 kbit/s sent, no loss; issue 22's simulcast test).
struct DeliveryMeter: Sendable {
    /// Evidence before a ratio: packets received, and how long their arrivals span (less, and
    /// one burst's spread decides it).
    static let requiredPackets = 10
    static let requiredSpan: Int64 = 100_000

    private var offeredBytes = 0
    private var firstSend: Moment?
    private var lastSend: Moment?
    private var lastSendSize = 0
    private var receivedBytes = 0
    private var received = 0
    private var firstArrival: (at: Int64, size: Int)?
    private var lastArrival: Int64 = 0

    mutating func add(_ r: PacketResult) {
        offeredBytes += r.size
        if firstSend.map({ r.sendTime < $0 }) ?? true { firstSend = r.sendTime }
        if lastSend.map({ r.sendTime >= $0 }) ?? true {
            lastSend = r.sendTime
            lastSendSize = r.size
        }
        guard let arrival = r.arrivalMicroseconds else { return }
        received += 1
        receivedBytes += r.size
        if firstArrival.map({ arrival < $0.at }) ?? true { firstArrival = (arrival, r.size) }
        lastArrival = received == 1 ? arrival : max(lastArrival, arrival)
    }

    /// Delivered over offered (0…~1); nil before enough evidence.
    var ratio: Double? {
        guard received >= Self.requiredPackets, let firstArrival, let firstSend, let lastSend else { return nil }
        let arrivalSpan = lastArrival - firstArrival.at
        guard arrivalSpan >= Self.requiredSpan else { return nil }
        // The first packet to arrive and the last one sent only mark their interval's start and end.
        let delivered = Double(receivedBytes - firstArrival.size) / Double(arrivalSpan)
        let offered = Double(offeredBytes - lastSendSize) / max(Double((lastSend - firstSend).inMicroseconds), 1000)
        return delivered / offered
    }
}
