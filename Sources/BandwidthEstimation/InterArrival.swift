/// Groups packets into send bursts and yields the delay variation between consecutive groups
/// (draft-ietf-rmcat-gcc-02 §5.2; libwebrtc `InterArrivalDelta`).
///
/// A group is the packets sent within 5 ms of its first one; a packet that arrives within 5 ms
/// of the previous one yet "earlier than its send spacing" also joins it, because that is a
/// burst the network delivered back to back (e.g. after a Wi-Fi hiccup), not a queue change.
/// All times are in microseconds: send times on the local clock, arrivals on the remote one.
struct InterArrival: Sendable {
    struct Deltas: Sendable, Equatable {
        var sendDelta: Int64
        var arrivalDelta: Int64
        var sizeDelta: Int
    }

    struct Group: Sendable {
        var firstSend: Int64
        var lastSend: Int64
        var firstArrival: Int64
        var completeArrival: Int64
        var lastSystem: Int64
        var size: Int
    }

    static let groupLength: Int64 = 5_000
    static let burstDelta: Int64 = 5_000
    static let maxBurstDuration: Int64 = 100_000
    /// A remote clock that moves this much more than ours has jumped: start over.
    static let arrivalOffsetThreshold: Int64 = 3_000_000
    static let reorderedResetThreshold = 3

    private var current: Group?
    private var previous: Group?
    private var consecutiveReordered = 0

    /// Adds one received packet (in arrival order); returns the deltas between the previous two
    /// groups when this packet starts a new one. `system` is our clock when feedback came in.
    mutating func add(send: Int64, arrival: Int64, system: Int64, size: Int) -> Deltas? {
        guard var group = current else {
            current = Group(firstSend: send, lastSend: send, firstArrival: arrival, completeArrival: arrival,
                            lastSystem: system, size: size)
            return nil
        }
        // Sent before the group started: reordered on the way, ignore.
        if send < group.firstSend { return nil }
        var deltas: Deltas?
        if startsNewGroup(group, send: send, arrival: arrival) {
            if let prev = previous {
                let sendDelta = group.lastSend - prev.lastSend
                let arrivalDelta = group.completeArrival - prev.completeArrival
                let systemDelta = group.lastSystem - prev.lastSystem
                if arrivalDelta - systemDelta >= Self.arrivalOffsetThreshold {
                    reset()
                    return nil
                }
                if arrivalDelta < 0 {
                    consecutiveReordered += 1
                    if consecutiveReordered >= Self.reorderedResetThreshold { reset() }
                    return nil
                }
                consecutiveReordered = 0
                deltas = Deltas(sendDelta: sendDelta, arrivalDelta: arrivalDelta, sizeDelta: group.size - prev.size)
            }
            previous = group
            group = Group(firstSend: send, lastSend: send, firstArrival: arrival, completeArrival: arrival,
                          lastSystem: system, size: 0)
        } else {
            group.lastSend = max(group.lastSend, send)
        }
        group.size += size
        group.completeArrival = arrival
        group.lastSystem = system
        current = group
        return deltas
    }

    private func startsNewGroup(_ group: Group, send: Int64, arrival: Int64) -> Bool {
        if belongsToBurst(group, send: send, arrival: arrival) { return false }
        return send - group.firstSend > Self.groupLength
    }

    private func belongsToBurst(_ group: Group, send: Int64, arrival: Int64) -> Bool {
        let arrivalDelta = arrival - group.completeArrival
        let sendDelta = send - group.lastSend
        if sendDelta == 0 { return true }
        let propagationDelta = arrivalDelta - sendDelta
        return propagationDelta < 0 && arrivalDelta <= Self.burstDelta
            && arrival - group.firstArrival < Self.maxBurstDuration
    }

    mutating func reset() {
        current = nil
        previous = nil
        consecutiveReordered = 0
    }
}
