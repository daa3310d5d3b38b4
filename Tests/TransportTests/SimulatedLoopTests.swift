import Dispatch
import Testing
@testable import Transport

/// The simulated loop's clock and work: timers in virtual order, `advance` and `run(until:)`,
/// `execute` without a thread, and the loop checks.
@Suite struct SimulatedLoopTests {
    let t0 = ContinuousClock.now

    /// What fired, with the loop's `now` at the time, as an offset from `t0`.
    final class Log {
        var entries: [(String, Duration)] = []
    }

    @Test("timers fire in deadline order (ties in scheduling order) with now set to each deadline")
    func timersFireInVirtualOrder() {
        let loop = EventLoop.simulated(at: t0)
        let log = Log()
        loop.perform {
            for (name, ms) in [("c", 30), ("a", 10), ("b", 20), ("a2", 10), ("past", -5)] {
                loop.schedule(at: t0 + .milliseconds(ms)) { log.entries.append((name, loop.now - t0)) }
            }
        }
        loop.advance(by: .milliseconds(25))
        #expect(log.entries.map(\.0) == ["past", "a", "a2", "b"])
        #expect(log.entries.map(\.1) == [.zero, .milliseconds(10), .milliseconds(10), .milliseconds(20)])
        #expect(loop.now == t0 + .milliseconds(25))
        loop.advance(by: .milliseconds(5))
        #expect(log.entries.map(\.0).last == "c")
        #expect(loop.now == t0 + .milliseconds(30))
    }

    @Test("a timer set by a timer fires within the same advance when due by its end, not after")
    func timersScheduledByTimers() {
        let loop = EventLoop.simulated(at: t0)
        let log = Log()
        loop.perform {
            loop.schedule(at: t0 + .milliseconds(10)) {
                log.entries.append(("first", loop.now - t0))
                loop.schedule(at: loop.now + .milliseconds(10)) { log.entries.append(("second", loop.now - t0)) }
                loop.schedule(at: loop.now + .milliseconds(100)) { log.entries.append(("late", loop.now - t0)) }
            }
        }
        loop.advance(by: .milliseconds(50))
        #expect(log.entries.map(\.0) == ["first", "second"])
        #expect(log.entries.map(\.1) == [.milliseconds(10), .milliseconds(20)])
    }

    @Test("cancelled timers never fire")
    func cancelledTimers() {
        let loop = EventLoop.simulated(at: t0)
        let log = Log()
        loop.perform {
            let id = loop.schedule(at: t0 + .milliseconds(10)) { log.entries.append(("cancelled", .zero)) }
            loop.schedule(at: t0 + .milliseconds(20)) { log.entries.append(("kept", .zero)) }
            loop.cancelTimer(id)
        }
        loop.advance(by: .seconds(1))
        #expect(log.entries.map(\.0) == ["kept"])
    }

    @Test("run(until:) stops at the timer after which the condition holds; false when the budget runs out")
    func runUntil() {
        let loop = EventLoop.simulated(at: t0)
        let log = Log()
        loop.perform {
            for ms in [10, 20, 30, 40] {
                loop.schedule(at: t0 + .milliseconds(ms)) { log.entries.append(("\(ms)", loop.now - t0)) }
            }
        }
        #expect(loop.run(until: { log.entries.count == 2 }, within: .seconds(1)))
        #expect(loop.now == t0 + .milliseconds(20))
        #expect(loop.run(until: { log.entries.count == 2 }, within: .seconds(1)))   // already holds: no time passes
        #expect(loop.now == t0 + .milliseconds(20))
        #expect(!loop.run(until: { log.entries.count == 5 }, within: .milliseconds(100)))
        #expect(log.entries.count == 4)
        #expect(loop.now == t0 + .milliseconds(120))
    }

    @Test("execute on an idle loop runs at once on the caller's thread; work it queues runs after it")
    func executeRunsAtOnce() {
        let loop = EventLoop.simulated(at: t0)
        let order = LoopBound([String](), loop: loop)
        #expect(!loop.inLoop)
        loop.execute {
            #expect(loop.inLoop)
            order.value.append("outer start")
            loop.execute { order.value.append("nested") }
            order.value.append("outer end")
        }
        #expect(!loop.inLoop)
        #expect(loop.perform { order.value } == ["outer start", "outer end", "nested"])
    }

    @Test("submit completes with nobody pumping the loop")
    func submitCompletes() async throws {
        let loop = EventLoop.simulated(at: t0)
        let value = try await loop.submit { loop.inLoop ? 42 : 0 }
        #expect(value == 42)
    }

    @Test("work handed in by another thread while loop work runs waits for it, then runs before the lock is let go")
    func workFromAnotherThreadIsSerialised() {
        let loop = EventLoop.simulated(at: t0)
        let log = LoopBound([String](), loop: loop)
        let handedIn = DispatchSemaphore(value: 0)
        loop.perform {
            log.value.append("holder")
            DispatchQueue.global().async {
                loop.execute { log.value.append("from another thread") }
                handedIn.signal()
            }
            handedIn.wait()   // execute returned without running the work: this thread holds the loop
            log.value.append("holder again")
        }
        #expect(loop.perform { log.value } == ["holder", "holder again", "from another thread"])
    }

    @Test("a threaded loop reads the real clock and runs execute's work on its own thread")
    func threadedLoop() async throws {
        let loop = try EventLoop(name: "test-threaded")
        defer { loop.shutdown() }
        let before = ContinuousClock.now
        let (inLoop, now) = try await loop.submit { (loop.inLoop, loop.now) }
        #expect(inLoop && !loop.inLoop)
        #expect(now >= before && now <= ContinuousClock.now)
    }

    @Test("after shutdown a simulated loop fires no timer and takes no work")
    func shutdown() {
        let loop = EventLoop.simulated(at: t0)
        let log = LoopBound([String](), loop: loop)
        loop.perform { loop.schedule(at: t0 + .milliseconds(10)) { log.value.append("timer") } }
        loop.shutdown()
        loop.execute { log.value.append("late work") }
        loop.advance(by: .seconds(1))
        #expect(loop.perform { log.value }.isEmpty)
        #expect(loop.now == t0 + .seconds(1))
    }

    @Test("a timer scheduled off the loop traps in a debug build")
    func scheduleChecksTheLoop() async {
        await #expect(processExitsWith: .failure) {
            let loop = EventLoop.simulated()
            loop.schedule(at: loop.now) {}
        }
    }

    @Test("a LoopBound value read off the loop traps in a debug build")
    func loopBoundChecksTheLoop() async {
        await #expect(processExitsWith: .failure) {
            let loop = EventLoop.simulated()
            let bound = LoopBound(1, loop: loop)
            _ = bound.value
        }
    }

    @Test("registering a file descriptor on a simulated loop traps")
    func simulatedLoopPollsNothing() async {
        await #expect(processExitsWith: .failure) {
            let loop = EventLoop.simulated()
            loop.perform { loop.register(fd: 0) {} }
        }
    }
}
