import Synchronization

/// A `Mutex` that audio-thread closures can capture (a `Mutex` itself cannot be copied into one),
/// so they need not capture — and keep alive — the object that owns the thread.
final class LockedBox<Value: Sendable>: Sendable {
    private let mutex: Mutex<Value>
    init(_ value: Value) { mutex = Mutex(value) }
    func withLock<R>(_ body: (inout Value) -> R) -> R { mutex.withLock { body(&$0) } }
    var value: Value { mutex.withLock { $0 } }
}
