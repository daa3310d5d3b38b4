import Locks

/// The one paced thread a capturer runs, with the start/stop rules every capturer here needs:
/// starts are serialized and stop the previous thread first; `stop` joins, is idempotent, and may
/// come from anywhere — even the capturer's own callback on that thread (PacedThread then detaches
/// instead of joining) or while a start is joining, which is why it does not take the start lock.
public final class PacedThreadSlot: Sendable {
    private let thread = Locked<PacedThread?>(nil)
    /// Serializes starts; holds how many there were (a lock over an empty value is one
    /// ThreadSanitizer misplaces: see `VideoBufferPool`).
    private let starts = Locked(0)

    public init() {}

    public var isRunning: Bool { thread.withLock { $0?.isRunning ?? false } }

    /// Stops the running thread, runs `prepare` (rewind a file, reset counters; its error ends
    /// the start) which returns the tick interval in ns, then starts a thread calling `tick`.
    /// False when the system would not start a thread.
    @discardableResult
    public func start(prepare: () throws -> Int64, tick: @escaping PacedThread.Tick) rethrows -> Bool {
        try starts.withLock { starts in
            starts += 1
            stop()
            let intervalNs = try prepare()
            let t = PacedThread(intervalNs: intervalNs, tick: tick)
            thread.withLock { $0 = t }
            return t.start()
        }
    }

    /// Stops and joins the thread (if any). Idempotent.
    public func stop() {
        let t = thread.withLock { t -> PacedThread? in
            defer { t = nil }
            return t
        }
        t?.stop()
    }
}
