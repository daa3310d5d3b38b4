#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A value behind a lock, for state several threads share.
///
/// A pthread mutex, not the Synchronization module's `Mutex`: on Linux that one hands a
/// contended lock over inside the kernel (a priority-inheritance futex), where ThreadSanitizer
/// cannot see it, so every contended access it guards is reported as a data race and the real
/// races drown in them. ThreadSanitizer intercepts pthread mutexes. Same `withLock` shape as
/// `Mutex`; a class, so closures can hold it too.
public final class Locked<Value: ~Copyable>: @unchecked Sendable {
    // @unchecked: `stored` is read and written only with `mutex` held.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private var stored: Value

    public init(_ value: consuming Value) {
        stored = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    public func withLock<Result, E: Error>(_ body: (inout Value) throws(E) -> Result) throws(E) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&stored)
    }
}

extension Locked where Value: Copyable {
    /// A copy of the value as it is now.
    public var value: Value { withLock { $0 } }
}
