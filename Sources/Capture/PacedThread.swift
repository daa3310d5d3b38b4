#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A thread that calls `tick` for tick n at `start + n * interval` (CLOCK_MONOTONIC).
/// When it falls behind it delivers the late tick at once but then re-bases its schedule, so it
/// never bursts more than one tick to catch up. `stop()` wakes it immediately and joins it.
public final class PacedThread: @unchecked Sendable {
    // @unchecked: `stopping` and `thread` are guarded by `mutex`; `tick` and `intervalNs` are
    // immutable; the cond/mutex pointers are created in init and destroyed in deinit.
    public typealias Tick = @Sendable (_ index: UInt64, _ nowNs: Int64) -> Bool

    private let intervalNs: Int64
    private let tick: Tick
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var stopping = false
    private var running = false
    private var thread: pthread_t?

    /// `tick` returns false to end the thread (end of file, owner gone).
    public init(intervalNs: Int64, tick: @escaping Tick) {
        self.intervalNs = max(1, intervalNs)
        self.tick = tick
        pthread_mutex_init(mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    /// Starts the thread; false if it could not be created (or already started).
    @discardableResult
    public func start() -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        guard thread == nil, !stopping else { return false }
        let context = Unmanaged.passRetained(self).toOpaque()   // the thread owns one reference
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { arg in
            guard let arg else { return nil }
            let me = Unmanaged<PacedThread>.fromOpaque(arg).takeRetainedValue()
            me.run()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<PacedThread>.fromOpaque(context).release()
            return false
        }
        thread = tid
        running = true
        return true
    }

    /// Stops and joins the thread. Idempotent; from inside `tick` it detaches instead of joining.
    public func stop() {
        pthread_mutex_lock(mutex)
        stopping = true
        let tid = thread
        thread = nil
        pthread_cond_broadcast(cond)
        pthread_mutex_unlock(mutex)
        guard let tid else { return }
        if pthread_equal(tid, pthread_self()) != 0 {
            pthread_detach(tid)
        } else {
            pthread_join(tid, nil)
        }
    }

    /// Whether the thread is still delivering ticks.
    public var isRunning: Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return running && !stopping
    }

    private func run() {
        var schedule = PaceSchedule(intervalNs: intervalNs, startNs: CaptureClock.monotonicNs())
        while true {
            if !waitUntil(schedule.dueNs) { break }
            let now = CaptureClock.monotonicNs()
            let index = schedule.index
            schedule.fired(at: now)
            if !tick(index, now) { break }
        }
        pthread_mutex_lock(mutex)
        running = false
        pthread_mutex_unlock(mutex)
    }

    /// Sleeps until `deadlineNs` on CLOCK_MONOTONIC; false when asked to stop.
    private func waitUntil(_ deadlineNs: Int64) -> Bool {
        var ts = timespec(tv_sec: Int(deadlineNs / 1_000_000_000), tv_nsec: Int(deadlineNs % 1_000_000_000))
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        while !stopping {
            let rc = pthread_cond_timedwait(cond, mutex, &ts)
            if rc == ETIMEDOUT { break }
        }
        return !stopping
    }
}

/// When tick n is due: `start + n * interval`. A tick that fires more than one interval late
/// re-bases the schedule on its firing time, so a stall is followed by at most one quick tick,
/// never a burst; no tick index is skipped.
struct PaceSchedule: Sendable {
    let intervalNs: Int64
    private(set) var startNs: Int64
    private(set) var index: UInt64 = 0

    init(intervalNs: Int64, startNs: Int64) {
        self.intervalNs = max(1, intervalNs)
        self.startNs = startNs
    }

    var dueNs: Int64 { startNs &+ Int64(truncatingIfNeeded: index) &* intervalNs }

    /// Tick `index` fired at `nowNs`; moves on to the next one.
    mutating func fired(at nowNs: Int64) {
        if nowNs - dueNs > intervalNs {
            startNs = nowNs &- Int64(truncatingIfNeeded: index) &* intervalNs
        }
        index += 1
    }
}
