/// The loop's timers: a binary min-heap on the deadline, so a wake-up costs O(log n) however
/// many timers are pending (a scan of every timer per wake-up dominated a relay with thousands
/// of sessions, each with a connect timeout and ICE/DTLS timers). Cancelling is lazy: the entry
/// stays in the heap and is skipped when it surfaces. Timers with the same deadline come out in
/// the order they were scheduled (ids grow), so a simulated loop replays the same way every run.
/// Deadlines are kept as exact `Duration`s after the first one scheduled: `ContinuousClock.Instant`
/// is not `@frozen`, so entries holding one are moved and compared through value witnesses.
struct TimerHeap<Fire> {
    private var heap: [(deadline: Duration, id: Int)] = []
    private var live: [Int: (deadline: Duration, fire: Fire)] = [:]
    private var nextID = 0
    private var epoch: ContinuousClock.Instant?

    var count: Int { live.count }

    mutating func schedule(at instant: ContinuousClock.Instant, _ fire: Fire) -> Int {
        if epoch == nil { epoch = instant }
        let deadline = instant - epoch!
        nextID += 1
        live[nextID] = (deadline, fire)
        heap.append((deadline, nextID))
        siftUp(heap.count - 1)
        return nextID
    }

    mutating func cancel(_ id: Int) {
        live[id] = nil
        // Keep the heap from filling with dead entries when most timers are cancelled.
        if heap.count > 64 && heap.count > 4 * live.count { rebuild() }
    }

    /// The earliest live deadline.
    mutating func earliest() -> ContinuousClock.Instant? {
        dropCancelledTop()
        guard let epoch, let top = heap.first else { return nil }
        return epoch + top.deadline
    }

    /// Removes and returns the earliest timer if it is due at `now`.
    mutating func popDue(_ now: ContinuousClock.Instant) -> Fire? {
        dropCancelledTop()
        guard let epoch, let top = heap.first, top.deadline <= now - epoch else { return nil }
        removeTop()
        return live.removeValue(forKey: top.id)?.fire
    }

    private mutating func dropCancelledTop() {
        while let top = heap.first, live[top.id]?.deadline != top.deadline { removeTop() }
    }

    private mutating func rebuild() {
        heap = heap.filter { live[$0.id]?.deadline == $0.deadline }
        for i in stride(from: heap.count / 2 - 1, through: 0, by: -1) { siftDown(i) }
    }

    private mutating func removeTop() {
        heap.swapAt(0, heap.count - 1)
        heap.removeLast()
        if !heap.isEmpty { siftDown(0) }
    }

    private static func before(_ a: (deadline: Duration, id: Int), _ b: (deadline: Duration, id: Int)) -> Bool {
        a.deadline < b.deadline || (a.deadline == b.deadline && a.id < b.id)
    }

    private mutating func siftUp(_ index: Int) {
        var i = index
        while i > 0 {
            let parent = (i - 1) / 2
            guard Self.before(heap[i], heap[parent]) else { return }
            heap.swapAt(i, parent)
            i = parent
        }
    }

    private mutating func siftDown(_ index: Int) {
        var i = index
        while true {
            let l = 2 * i + 1, r = l + 1
            var smallest = i
            if l < heap.count && Self.before(heap[l], heap[smallest]) { smallest = l }
            if r < heap.count && Self.before(heap[r], heap[smallest]) { smallest = r }
            guard smallest != i else { return }
            heap.swapAt(i, smallest)
            i = smallest
        }
    }
}
