import Foundation
import SwiftRTC

/// `swiftrtc probe --datachannel N`: messages of growing size on an ordered reliable channel,
/// each expected back from the peer intact and in order.
struct DataChannelProbe {
    var id = 0, sent = 0, echoed = 0, ok = false, seconds = 0.0, maxMessageSize = 0
    /// Times the sender waited for the 4 MiB queue to drain, and bufferedamountlow events that ended a wait.
    var queueFullWaits = 0, bufferedAmountLowEvents = 0

    var json: [String: Any] {
        ["id": id, "sent": sent, "echoed": echoed, "ok": ok, "seconds": seconds, "maxMessageSize": maxMessageSize,
         "queueFullWaits": queueFullWaits, "bufferedAmountLowEvents": bufferedAmountLowEvents]
    }

    /// The bytes every message is cut from (made once: a per-byte loop per message would
    /// cost more than the transport in a debug build).
    static let pattern = Data((0..<262_144).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })

    /// Message `i`: its size grows through 0 … `limit`, its first bytes say which message it is.
    static func message(_ i: Int, count: Int, limit: Int) -> Data {
        let size = count > 1 ? i * min(limit, pattern.count) / (count - 1) : 0
        var m = pattern.prefix(size)
        withUnsafeBytes(of: UInt32(i).bigEndian) { index in
            for k in 0..<min(4, size) { m[m.startIndex + k] = index[k] }
        }
        return Data(m)
    }

    static func run(_ channel: DataChannel, count: Int, timeout: Duration = .seconds(30)) async throws -> DataChannelProbe {
        var events = channel.events.makeAsyncIterator()
        while channel.readyState != .open {
            guard let event = await events.next() else { throw PeerConnectionError(.closed, "the data channel closed before it opened") }
            if case .error(let error) = event { throw error }
        }
        let peerLimit = channel.maxMessageSize
        let limit = peerLimit == 0 ? 262_144 : min(262_144, peerLimit)
        var report = DataChannelProbe(id: Int(channel.id ?? 0), maxMessageSize: peerLimit)
        let started = ContinuousClock.now
        channel.bufferedAmountLowThreshold = 1 << 20
        for i in 0..<count {
            // W3C flow control: at most 4 MiB waiting in our queue, sending again on bufferedamountlow.
            // One read decides a wait (the loop thread drains the queue meanwhile: a second read could
            // find it drained and count a wait that never waited); the wait ends on an event.
            if channel.bufferedAmount > 4 << 20 {
                report.queueFullWaits += 1
                repeat {
                    guard let event = await events.next() else { throw PeerConnectionError(.closed, "the data channel closed while sending") }
                    if case .error(let error) = event { throw error }
                    if case .bufferedAmountLow = event { report.bufferedAmountLowEvents += 1 }
                } while channel.bufferedAmount > 4 << 20
            }
            try channel.send(message(i, count: count, limit: limit))
            report.sent += 1
        }
        // The echoes, or what came of them by the deadline (iterating `messages` ends on cancel).
        let (echoed, intact) = await withTaskGroup(of: (Int, Bool)?.self) { group in
            group.addTask {
                var echoed = 0, intact = true
                for await m in channel.messages {
                    intact = intact && m.data == message(echoed, count: count, limit: limit)
                    echoed += 1
                    if echoed == count { break }
                }
                return (echoed, intact)
            }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            let second = await group.next() ?? nil
            return first ?? second ?? (0, false)
        }
        report.echoed = echoed
        let elapsed = ContinuousClock.now - started
        report.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        report.ok = intact && echoed == count
        return report
    }
}
