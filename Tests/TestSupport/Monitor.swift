import Dispatch
import Foundation

/// A value that other threads change and a test waits on: every change wakes the waiters whose
/// condition now holds, so a test waits for an event of the code under test, never for time.
/// Waits end at a deadline (a timer) so a broken run fails instead of hanging; passing runs
/// never reach it.
public final class Monitor<Value>: @unchecked Sendable {
    // @unchecked: `stored` and `waiters` are touched only with `lock` held.
    private let lock = NSCondition()
    private var stored: Value
    private var waiters: [Int: Waiter] = [:]
    private var nextID = 0

    private struct Waiter {
        let holds: @Sendable (Value) -> Bool
        let continuation: CheckedContinuation<Bool, Never>
    }

    public init(_ value: Value) { stored = value }

    public var value: Value {
        lock.lock()
        defer { lock.unlock() }
        return stored
    }

    /// Changes (or reads) the value and wakes whoever waits for what it now is.
    @discardableResult
    public func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
        lock.lock()
        let result: R
        do {
            result = try body(&stored)
        } catch {
            lock.unlock()
            throw error
        }
        let ready = waiters.filter { $0.value.holds(stored) }
        for id in ready.keys { waiters[id] = nil }
        lock.broadcast()
        lock.unlock()
        for waiter in ready.values { waiter.continuation.resume(returning: true) }
        return result
    }

    /// Blocks this thread until `holds(value)`, or `timeout` has passed; whether it holds.
    /// Not for the concurrency pool (use the async one there).
    public func wait(until holds: (Value) -> Bool, timeout: Duration = .seconds(10)) -> Bool {
        let deadline = Date(timeIntervalSinceNow: timeout.seconds)
        lock.lock()
        defer { lock.unlock() }
        while !holds(stored) {
            if !lock.wait(until: deadline) { return holds(stored) }
        }
        return true
    }

    /// Suspends until `holds(value)`, or `timeout` of wall time has passed (nil: no limit but
    /// the test's own, for what waits on a simulated loop's work, however slow the host), or the
    /// task is cancelled; whether it holds.
    public func wait(until holds: @escaping @Sendable (Value) -> Bool, timeout: Duration? = .seconds(10)) async -> Bool {
        let id = lock.withLock {
            nextID += 1
            return nextID
        }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                lock.lock()
                guard !holds(stored) else {
                    lock.unlock()
                    continuation.resume(returning: true)
                    return
                }
                waiters[id] = Waiter(holds: holds, continuation: continuation)
                lock.unlock()
                if let timeout {
                    DispatchQueue.global().asyncAfter(deadline: .now() + timeout.seconds) { [weak self] in self?.expire(id) }
                }
                if Task.isCancelled { expire(id) }
            }
        } onCancel: {
            expire(id)
        }
    }

    private func expire(_ id: Int) {
        let waiter = lock.withLock { waiters.removeValue(forKey: id) }
        waiter?.continuation.resume(returning: false)
    }
}

extension Duration {
    /// In seconds, for Foundation and Dispatch.
    var seconds: Double { Double(components.seconds) + Double(components.attoseconds) / 1e18 }
}
