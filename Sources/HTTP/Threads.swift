// Threads and locks for the blocking socket code. Socket waits block a thread, so they run on
// threads of our own, never on the Swift concurrency pool.
import Foundation
import Glibc
import Locks

/// A value handed from one thread to another at most once; `take` blocks until `put` or
/// `abandon` (then it returns nil). @unchecked Sendable: the slot is guarded by the condition.
final class OneShot<Value>: @unchecked Sendable {
    private let condition = NSCondition()
    private var value: Value?
    private var abandoned = false

    func put(_ newValue: Value) {
        condition.lock()
        value = newValue
        condition.broadcast()
        condition.unlock()
    }

    /// Makes a waiting (or future) `take` return nil.
    func abandon() {
        condition.lock()
        abandoned = true
        condition.broadcast()
        condition.unlock()
    }

    func take() -> Value? {
        condition.lock()
        defer { condition.unlock() }
        while true {
            // Abandoned wins over a value that raced in (a cancelled handler's late reply).
            if abandoned { return nil }
            if let value { return value }
            condition.wait()
        }
    }
}

/// A joinable POSIX thread running a closure (for blocking socket loops, off the concurrency pool).
public struct JoinableThread: Sendable {
    private final class Body {
        let run: @Sendable () -> Void
        init(_ run: @escaping @Sendable () -> Void) { self.run = run }
    }

    let id: pthread_t

    /// Starts `body` on a new thread; the caller must `join()` it (or `detach()`).
    public static func spawn(_ body: @escaping @Sendable () -> Void) throws(HTTPError) -> JoinableThread {
        let context = Unmanaged.passRetained(Body(body)).toOpaque()
        var thread = pthread_t()
        let rc = pthread_create(&thread, nil, { argument in
            guard let argument else { return nil }
            Unmanaged<Body>.fromOpaque(argument).takeRetainedValue().run()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<Body>.fromOpaque(context).release()
            throw HTTPError(.system, "cannot start a thread: \(Sockets.errorText(rc))")
        }
        return JoinableThread(id: thread)
    }

    public func join() { pthread_join(id, nil) }
    public func detach() { pthread_detach(id) }
}

extension JoinableThread {
    /// Runs blocking `body` on a thread of its own and awaits its result, so the concurrency
    /// pool (one thread per core) never blocks on a socket.
    public static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            do {
                try spawn { continuation.resume(with: Result { try body() }) }.detach()
            } catch {
                continuation.resume(throwing: error)
            }
        }
    }
}
