import Glibc
import Synchronization

/// One thread that owns a set of file descriptors and timers: the serial context every
/// sans-I/O core of a connection is driven from. Work from other threads is queued with
/// `execute` and wakes the loop through a pipe.
public final class EventLoop: @unchecked Sendable {
    // @unchecked: `handlers`, `timers` and `running` are touched only on the loop thread;
    // the cross-thread queue is behind `pending`'s mutex.
    public typealias Work = @Sendable () -> Void

    private let wakeFD: Int32      // read end of the wake-up pipe (polled)
    private let wakeWriteFD: Int32 // write end
    private let pending = Mutex<[Work]>([])
    private var handlers: [Int32: () -> Void] = [:] { didSet { pollSetChanged = true } }
    private var pollSetChanged = true
    private var timers = TimerHeap<() -> Void>()
    private var thread: pthread_t?
    private let threadID = Mutex<pthread_t?>(nil)
    private let stopped = Atomic<Bool>(false)
    public let name: String

    public init(name: String = "swiftrtc-loop") throws(TransportError) {
        self.name = name
        var pipeFDs: [Int32] = [-1, -1]
        guard pipe(&pipeFDs) == 0 else { throw TransportError("pipe failed: \(errnoString())") }
        for fd in pipeFDs {
            _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
            _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        }
        let fd = pipeFDs[0]
        wakeFD = fd
        wakeWriteFD = pipeFDs[1]
        let box = Unmanaged.passRetained(self)
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { arg in
            guard let arg else { return nil }
            let loop = Unmanaged<EventLoop>.fromOpaque(arg).takeRetainedValue()
            loop.run()
            return nil
        }, box.toOpaque())
        guard rc == 0 else {
            box.release()
            close(fd)
            close(pipeFDs[1])
            throw TransportError("pthread_create failed: \(rc)")
        }
        pthread_detach(tid)   // nobody joins: the thread ends after shutdown() and frees itself
        thread = tid
        threadID.withLock { $0 = tid }
    }

    /// A process-wide loop for clients that do not bring their own.
    public static let shared: EventLoop = {
        do { return try EventLoop(name: "swiftrtc-shared") } catch {
            preconditionFailure("cannot start the shared event loop: \(error)")
        }
    }()

    public var inLoop: Bool {
        guard let tid = threadID.withLock({ $0 }) else { return false }
        return pthread_equal(pthread_self(), tid) != 0
    }

    /// Queue work onto the loop thread (runs inline-later even when called from the loop).
    public func execute(_ work: @escaping Work) {
        pending.withLock { $0.append(work) }
        var one: UInt8 = 1
        _ = write(wakeWriteFD, &one, 1)   // a full pipe already means "wake up"
    }

    /// Run `body` on the loop and wait for its result (never call from the loop itself).
    public func submit<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { cont in
            execute {
                do { cont.resume(returning: try body()) } catch { cont.resume(throwing: error) }
            }
        }
    }

    /// Loop thread only: call `onReadable` whenever `fd` is readable.
    public func register(fd: Int32, onReadable: @escaping () -> Void) {
        handlers[fd] = onReadable
    }

    public func unregister(fd: Int32) {
        handlers[fd] = nil
    }

    /// Loop thread only: a one-shot timer. Returns an id for `cancelTimer`.
    @discardableResult
    public func schedule(at deadline: ContinuousClock.Instant, _ fire: @escaping () -> Void) -> Int {
        timers.schedule(at: deadline, fire)
    }

    public func cancelTimer(_ id: Int) {
        timers.cancel(id)
    }

    /// Stops the thread after the work queued so far has run. Registered fds are not closed.
    public func shutdown() {
        execute { [self] in stopped.store(true, ordering: .relaxed) }
    }

    deinit {
        close(wakeFD)
        close(wakeWriteFD)
    }

    private func run() {
        var fds: [pollfd] = []
        while !stopped.load(ordering: .relaxed) {
            // The poll set is rebuilt only when a handler was added or removed: with hundreds of
            // connections on one loop, rebuilding it on every wake-up dominated.
            if pollSetChanged {
                fds.removeAll(keepingCapacity: true)
                fds.append(pollfd(fd: wakeFD, events: Int16(POLLIN), revents: 0))
                for fd in handlers.keys { fds.append(pollfd(fd: fd, events: Int16(POLLIN), revents: 0)) }
                pollSetChanged = false
            }
            for i in fds.indices { fds[i].revents = 0 }
            let timeout = pollTimeoutMillis()
            let n = poll(&fds, nfds_t(fds.count), timeout)
            if n < 0 && errno != EINTR { break }
            if n > 0 {
                for entry in fds where entry.revents != 0 {
                    if entry.fd == wakeFD {
                        var sink = [UInt8](repeating: 0, count: 256)
                        while read(wakeFD, &sink, sink.count) > 0 {}
                    } else if let handler = handlers[entry.fd] {
                        handler()
                    }
                }
            }
            runPending()
            fireTimers()
        }
        runPending()
    }

    private func runPending() {
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

    private func pollTimeoutMillis() -> Int32 {
        guard let earliest = timers.earliest() else { return -1 }
        let remaining = ContinuousClock.now.duration(to: earliest)
        if remaining <= .zero { return 0 }
        let (s, atto) = remaining.components
        let ms = s * 1000 + atto / 1_000_000_000_000_000 + 1
        return Int32(clamping: ms)
    }

    /// Fires what was due when this round began, earliest first; timers those schedule for
    /// now already wait for the next round (as before: no starvation of the poll).
    private func fireTimers() {
        let now = ContinuousClock.now
        var due: [() -> Void] = []
        while let fire = timers.popDue(now) { due.append(fire) }
        for fire in due { fire() }
    }
}

public struct TransportError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

func errnoString(_ code: Int32 = errno) -> String {
    String(cString: strerror(code))
}
