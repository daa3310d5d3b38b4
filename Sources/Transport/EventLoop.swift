import Glibc
import Locks
import Synchronization

/// The serial context every sans-I/O core of a connection is driven from: its timers, the work
/// other threads hand it, and the file descriptors it polls. Two drivers:
/// - a threaded loop (`init(name:)`) owns one thread and the real clock; work from other threads
///   is queued with `execute` and wakes the thread through a pipe;
/// - a simulated loop (`simulated(name:at:)`) has no thread and a clock that moves only when a
///   test advances it (see EventLoop+Simulated.swift), so whole sessions run in process,
///   deterministically, with no sleeps — swift-nio's EmbeddedEventLoop is the model.
///
/// Loop-only state is checked with `preconditionInLoop()` (debug builds) or kept in a `LoopBound`.
public final class EventLoop: @unchecked Sendable {
    // @unchecked: `timers` (and a threaded loop's poll set) are touched only by loop work, which
    // runs on one thread at a time (the loop's thread, or whoever holds a simulated loop's work
    // lock); what other threads touch is behind `pending`'s and `runner`'s mutexes.
    public typealias Work = @Sendable () -> Void

    public let name: String
    let driver: Driver
    private let pending = Locked<[Work]>([])
    var timers = TimerHeap<() -> Void>()
    /// Shared periodic timers by period (`ticker(every:)`); loop-only.
    var tickers: [Duration: LoopTicker] = [:]
    /// The thread running loop work: a threaded loop's own thread, or the thread running a
    /// simulated loop's work at this moment (nil between work).
    let runner = Locked<pthread_t?>(nil)
    let stopped = Atomic<Bool>(false)

    enum Driver {
        case thread(PollSet)
        case simulated(SimulatedClock)
    }

    /// A loop with its own thread and the real clock.
    public init(name: String = "swiftrtc-loop") throws(TransportError) {
        self.name = name
        let pollSet = try PollSet()
        driver = .thread(pollSet)
        try startThread(pollSet)
    }

    init(name: String, simulatedAt start: ContinuousClock.Instant) {
        self.name = name
        driver = .simulated(SimulatedClock(start: start))
    }

    /// A process-wide loop for clients that do not bring their own.
    public static let shared: EventLoop = {
        do { return try EventLoop(name: "swiftrtc-shared") } catch {
            preconditionFailure("cannot start the shared event loop: \(error)")
        }
    }()

    /// The loop's time: the real clock on a threaded loop, the virtual one on a simulated loop.
    /// Timers are judged against it; code on the loop reads it instead of `ContinuousClock.now`.
    public var now: ContinuousClock.Instant {
        switch driver {
        case .thread: ContinuousClock.now
        case .simulated(let clock): clock.now.withLock { $0 }
        }
    }

    /// While a datagram read from a socket is being handled: when the kernel received it
    /// (`drain`). Loop work only; nil otherwise (and always on a simulated loop).
    public internal(set) var datagramArrival: ContinuousClock.Instant?

    /// When the datagram being handled arrived, else now: what arrival statistics (transport-cc,
    /// REMB, interarrival jitter) record.
    public var arrivalTime: ContinuousClock.Instant { datagramArrival ?? now }

    /// Whether the calling thread is running this loop's work now.
    public var inLoop: Bool {
        runner.withLock { $0.map { pthread_equal($0, pthread_self()) != 0 } ?? false }
    }

    /// Traps in debug builds when called other than from this loop's work: the check for
    /// loop-only state (swift-nio's `preconditionInEventLoop`). Nothing in release builds.
    @inlinable
    public func preconditionInLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(inLoop, "\(name): loop-only state used off the loop", file: file, line: line)
    }

    /// Queues work onto the loop. A threaded loop runs it on its thread, later even when called
    /// from there. A simulated loop runs it at once on the calling thread when no work is
    /// running, otherwise right after the work that is (so `submit` needs nobody to pump).
    public func execute(_ work: @escaping Work) {
        if isSimulated && stopped.load(ordering: .relaxed) { return }   // shut down: takes no more work
        pending.withLock { $0.append(work) }
        switch driver {
        case .thread(let pollSet): pollSet.wake()
        case .simulated: if !inLoop { runPendingIfIdle() }
        }
    }

    /// Runs `body` on the loop and waits for its result (never call from the loop itself).
    public func submit<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { cont in
            execute {
                do { cont.resume(returning: try body()) } catch { cont.resume(throwing: error) }
            }
        }
    }

    /// Loop work only: call `onReadable` whenever `fd` is readable. A simulated loop polls
    /// nothing: its packets come from a `VirtualNetwork`.
    public func register(fd: Int32, onReadable: @escaping () -> Void) {
        guard case .thread(let pollSet) = driver else {
            preconditionFailure("\(name) is a simulated loop: it polls no file descriptors (use a VirtualNetwork's endpoints)")
        }
        preconditionInLoop()
        pollSet.handlers[fd] = onReadable
    }

    public func unregister(fd: Int32) {
        guard case .thread(let pollSet) = driver else { return }
        preconditionInLoop()
        pollSet.handlers[fd] = nil
    }

    /// Loop work only: a one-shot timer, fired once the loop's `now` reaches `deadline` (timers
    /// with the same deadline fire in the order they were scheduled). Returns an id for `cancelTimer`.
    @discardableResult
    public func schedule(at deadline: ContinuousClock.Instant, file: StaticString = #fileID, line: UInt = #line,
                         _ fire: @escaping () -> Void) -> Int {
        preconditionInLoop()
        // A simulated loop names a timer that keeps rescheduling itself for now (see SimulatedClock).
        if case .simulated(let clock) = driver {
            return timers.schedule(at: deadline) { clock.firing = (file, line); fire() }
        }
        return timers.schedule(at: deadline, fire)
    }

    public func cancelTimer(_ id: Int) {
        preconditionInLoop()
        timers.cancel(id)
    }

    /// Stops the loop after the work queued so far has run: a threaded loop's thread ends, a
    /// simulated loop drops its timers and takes no more work. Registered fds are not closed.
    public func shutdown() {
        execute { [self] in
            stopped.store(true, ordering: .relaxed)
            if isSimulated { timers = TimerHeap(); tickers = [:] }
        }
    }

    /// A loop on simulated time: work that would go to a thread of its own runs inline, so the
    /// simulation stays deterministic.
    public var isSimulated: Bool {
        if case .simulated = driver { return true }
        return false
    }

    /// Runs queued work until none is left (work may queue more). Loop work only.
    func runPending() {
        while true {
            let batch = pending.withLock { queue -> [Work] in
                let b = queue
                queue.removeAll()
                return b
            }
            if batch.isEmpty { return }
            for work in batch { work() }
        }
    }

    var hasPending: Bool { pending.withLock { !$0.isEmpty } }
}

public struct TransportError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

func errnoString(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}
