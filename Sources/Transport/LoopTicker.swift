/// One timer for everything on a loop that runs at the same period: a relay's players each
/// have a congestion controller ticking every 25 ms, and 480 of them rescheduling their own
/// timers cost a heap insert, a dictionary entry and a closure allocation per tick. Members
/// are called in the order they joined, on the loop's grid of `interval` (a new member's first
/// call comes within one interval, not exactly one after it joined). Loop thread only.
public final class LoopTicker {
    public let interval: Duration
    private unowned let loop: EventLoop
    /// Nil: left (compacted away after a round).
    private var members: [(() -> Bool)?] = []
    private var departed = 0
    private var timer: Int?
    private var next: ContinuousClock.Instant?

    init(loop: EventLoop, interval: Duration) {
        self.loop = loop
        self.interval = interval
    }

    /// Calls `tick` every `interval` until it returns false (the member is then dropped).
    public func join(_ tick: @escaping () -> Bool) {
        loop.preconditionInLoop()
        members.append(tick)
        guard timer == nil else { return }
        let now = loop.now
        // Back on the old grid when it is still ahead; a fresh one otherwise.
        let due = next.flatMap { $0 > now ? $0 : nil } ?? now.advanced(by: interval)
        arm(at: due)
    }

    /// How many members tick (for tests and stats).
    public var count: Int { members.count - departed }

    private func arm(at due: ContinuousClock.Instant) {
        next = due
        timer = loop.schedule(at: due) { [weak self] in self?.fire(due: due) }
    }

    private func fire(due: ContinuousClock.Instant) {
        // `timer` stays set through the round: a member joining from a tick must not arm a
        // second timer. Members that join during the round are called in it too (appended).
        var i = 0
        while i < members.count {
            if let tick = members[i], !tick() {
                members[i] = nil
                departed += 1
            }
            i += 1
        }
        if departed > 0 && departed * 2 >= members.count {
            members.removeAll { $0 == nil }
            departed = 0
        }
        guard count > 0 else {
            members.removeAll()
            departed = 0
            timer = nil
            return
        }
        // Late (a busy loop): the next round stays on the grid but is never in the past.
        var due = due.advanced(by: interval)
        let now = loop.now
        if due <= now { due = now.advanced(by: interval) }
        arm(at: due)
    }
}

extension EventLoop {
    /// The loop's shared ticker for `interval` (created on first use). Loop thread only.
    public func ticker(every interval: Duration) -> LoopTicker {
        preconditionInLoop()
        if let t = tickers[interval] { return t }
        let t = LoopTicker(loop: self, interval: interval)
        tickers[interval] = t
        return t
    }
}
