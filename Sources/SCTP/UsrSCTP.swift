import CUsrSCTP
import Locks
import Synchronization

/// usrsctp is one process-wide stack: one init, one timer wheel, one output callback. This
/// holds what the C callback needs (it cannot capture) and the stack's clock.
enum UsrSCTP {
    /// Packets usrsctp produced for each association, by the id registered as its address.
    /// conn_output may run on any thread that drives usrsctp (another association's timer
    /// tick fires this one's retransmission), so it only queues here; the owner drains.
    static let outboxes = Locked<[UInt: SCTPOutbox]>([:])
    private static let nextID = Atomic<UInt>(1)
    /// The stack's time. One timer wheel serves every association, so one of them drives it
    /// with its clock: were each to add its own elapsed time, N associations would run time N
    /// times fast. The first to tick leads while it lives and ticks; when it closes or falls
    /// silent for `handover` (or its clock is that far from the next one's), the next to tick
    /// takes over with its own clock.
    private static let clock = Locked<(leader: UInt, last: ContinuousClock.Instant)?>(nil)
    static let handover: Duration = .seconds(1)

    private static let started: Bool = {
        swiftrtc_sctp_init { address, buffer, length, _, _ in
            guard let buffer else { return -1 }
            let id = UInt(bitPattern: address)
            guard let outbox = UsrSCTP.outboxes.withLock({ $0[id] }) else { return -1 }
            let packet = Array(UnsafeRawBufferPointer(start: buffer, count: length))
            outbox.packets.withLock { $0.append(packet) }
            return 0
        }
        return true
    }()

    /// A fresh address id with its outbox; starts the stack on first use.
    static func register() -> (UInt, SCTPOutbox) {
        _ = started
        let id = nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let outbox = SCTPOutbox()
        outboxes.withLock { $0[id] = outbox }
        return (id, outbox)
    }

    static func unregister(_ id: UInt) {
        _ = outboxes.withLock { $0.removeValue(forKey: id) }
    }

    /// Fires the timers due at `now` if association `id` drives the wheel. Serialized.
    static func advance(_ id: UInt, to now: ContinuousClock.Instant) {
        clock.withLock { clock in
            // A leader on another clock (a simulated loop runs ahead of the wall clock) whose
            // time is over `handover` away either way is as good as silent.
            guard let (leader, last) = clock, outboxes.withLock({ $0[leader] != nil }),
                  leader == id || (last.duration(to: now) < handover && now.duration(to: last) < handover) else {
                clock = (id, now)
                return
            }
            guard leader == id, now > last else { return }
            let elapsed = last.duration(to: now)
            let ms = elapsed.components.seconds * 1000 + elapsed.components.attoseconds / 1_000_000_000_000_000
            guard ms > 0 else { return }
            usrsctp_handle_timers(UInt32(clamping: ms))
            clock = (id, last.advanced(by: .milliseconds(ms)))
        }
    }
}

final class SCTPOutbox: Sendable {
    let packets = Locked<[[UInt8]]>([])
}
