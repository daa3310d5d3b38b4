import Testing
@testable import Transport

@Suite struct TimerHeapTests {
    let t0 = ContinuousClock.now
    func at(_ ms: Int) -> ContinuousClock.Instant { t0.advanced(by: .milliseconds(ms)) }

    @Test func popsDueTimersEarliestFirst() {
        var h = TimerHeap<Int>()
        var rng = SystemRandomNumberGenerator()
        let deadlines = (0..<500).map { _ in Int.random(in: 0..<10_000, using: &rng) }
        for d in deadlines { _ = h.schedule(at: at(d), d) }
        #expect(h.earliest() == at(deadlines.min() ?? 0))
        var fired: [Int] = []
        while let d = h.popDue(at(5_000)) { fired.append(d) }
        #expect(fired == deadlines.filter { $0 <= 5_000 }.sorted())
        #expect(h.count == deadlines.filter { $0 > 5_000 }.count)
        #expect(h.popDue(at(5_000)) == nil)
    }

    @Test func cancelledTimersNeverFireAndDoNotHoldTheEarliestDeadline() {
        var h = TimerHeap<String>()
        let a = h.schedule(at: at(10), "a")
        _ = h.schedule(at: at(20), "b")
        let ids = (0..<1000).map { h.schedule(at: at(30 + $0), "x\($0)") }
        h.cancel(a)
        #expect(h.earliest() == at(20))
        for id in ids.dropLast() { h.cancel(id) }   // triggers a rebuild on the way
        var fired: [String] = []
        while let f = h.popDue(at(100_000)) { fired.append(f) }
        #expect(fired == ["b", "x999"])
        #expect(h.count == 0 && h.earliest() == nil)
    }
}
