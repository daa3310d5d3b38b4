import Glibc
import Locks

/// A simulated loop's virtual clock and the lock that serialises its work (there is no thread:
/// work runs on whichever thread hands it in, or on the test's thread as it moves the clock).
final class SimulatedClock: @unchecked Sendable {
    // @unchecked: `mutex` is used only through lock/tryLock/unlock; `sameInstantFires` only by
    // its holder; `now` is behind its own lock (read from any thread).
    let now: Locked<ContinuousClock.Instant>
    /// Timers fired since the clock last moved: a timer that keeps rescheduling itself for now
    /// would otherwise spin forever.
    var sameInstantFires = 0
    static let sameInstantLimit = 1_000_000
    /// Where the timer firing now was scheduled (for the message when the limit trips).
    var firing: (file: StaticString, line: UInt)?
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init(start: ContinuousClock.Instant) {
        now = Locked(start)
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    func lock() { pthread_mutex_lock(mutex) }
    func tryLock() -> Bool { pthread_mutex_trylock(mutex) == 0 }
    func unlock() { pthread_mutex_unlock(mutex) }
}

extension EventLoop {
    /// A loop with no thread whose clock starts at `start` and moves only when a test calls
    /// `advance(by:)` or `run(until:within:)`. Its work runs on the threads that hand it in
    /// (`execute`, `perform`), one at a time.
    public static func simulated(name: String = "simulated-loop", at start: ContinuousClock.Instant = .now) -> EventLoop {
        EventLoop(name: name, simulatedAt: start)
    }

    /// Runs `body` now as loop work on the calling thread (waiting while another thread runs
    /// some), then the work it queued, and returns its result. Simulated loops only; not from
    /// loop work.
    public func perform<T>(_ body: () throws -> T) rethrows -> T {
        let clock = simulatedClock
        precondition(!inLoop, "\(name): perform called from the loop's own work (it would wait for itself)")
        clock.lock()
        defer {
            clock.unlock()
            if hasPending { runPendingIfIdle() }   // queued by a thread that found the lock taken
        }
        return try asRunner(body)
    }

    /// Moves the clock forward by `duration`: every timer due by then fires in deadline order,
    /// with `now` set to its deadline, and the work it queued runs after it; timers those
    /// schedule within the span fire too. Then `now` is the target.
    public func advance(by duration: Duration) {
        perform {
            let target = now + duration
            while fireNextTimer(by: target) {}
            setNow(target)
        }
    }

    /// Fires timers one by one, in deadline order, until `condition` (checked as loop work,
    /// before the first and after each) holds, or until `budget` of virtual time is spent.
    /// Returns whether the condition holds.
    public func run(until condition: () -> Bool, within budget: Duration) -> Bool {
        perform {
            let end = now + budget
            while !condition() {
                guard fireNextTimer(by: end) else {
                    setNow(end)
                    return condition()
                }
            }
            return true
        }
    }

    /// What `execute` does on a simulated loop from outside loop work: run the queue here unless
    /// another thread runs loop work, which then runs it before letting go (it looks again
    /// after unlocking, so nothing queued in between is left behind).
    func runPendingIfIdle() {
        let clock = simulatedClock
        while clock.tryLock() {
            asRunner {}
            clock.unlock()
            if !hasPending { return }
        }
    }

    private var simulatedClock: SimulatedClock {
        guard case .simulated(let clock) = driver else {
            preconditionFailure("\(name) is a threaded loop on the real clock: only EventLoop.simulated can be advanced or performed on")
        }
        return clock
    }

    /// Marks this thread as the loop's for `body`, then runs what it queued. Lock held.
    private func asRunner<T>(_ body: () throws -> T) rethrows -> T {
        runner.withLock { $0 = pthread_self() }
        defer {
            runPending()
            runner.withLock { $0 = nil }
        }
        return try body()
    }

    /// Fires the earliest timer if it is due by `end`, with `now` moved to its deadline (never
    /// back: a timer set in the past fires at the present). Lock held.
    private func fireNextTimer(by end: ContinuousClock.Instant) -> Bool {
        guard let deadline = timers.earliest(), deadline <= end, let fire = timers.popDue(deadline) else { return false }
        let clock = simulatedClock
        if setNow(deadline) {
            clock.sameInstantFires = 0
        } else {
            clock.sameInstantFires += 1
            precondition(clock.sameInstantFires < SimulatedClock.sameInstantLimit,
                         "\(name): \(SimulatedClock.sameInstantLimit) timers fired at one instant: a timer keeps rescheduling itself for now "
                         + "(the last one was scheduled at \(clock.firing.map { "\($0.file):\($0.line)" } ?? "?"))")
        }
        fire()
        runPending()
        return true
    }

    /// Moves the virtual clock forward to `instant` (never back); whether it moved.
    @discardableResult
    private func setNow(_ instant: ContinuousClock.Instant) -> Bool {
        simulatedClock.now.withLock { now in
            guard instant > now else { return false }
            now = instant
            return true
        }
    }
}
