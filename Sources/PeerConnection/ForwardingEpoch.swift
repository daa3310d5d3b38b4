import Synchronization

/// Bumped whenever something a relay's forwarding snapshot (`RtpSender.forwardingTarget`) was made
/// from may have changed: a transport's keys, selected pair, TURN allocations or closing, a
/// sender's mid, extension ids or transport. A forwarder remakes its snapshots when the value
/// it made them at is no longer current (one load per packet instead of touching every sender).
package enum ForwardingEpoch {
    private static let counter = Atomic<UInt64>(0)
    package static var current: UInt64 { counter.load(ordering: .acquiring) }
    package static func bump() { counter.wrappingAdd(1, ordering: .releasing) }
}
