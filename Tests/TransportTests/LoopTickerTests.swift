import Testing
@testable import Transport

/// The loop's shared periodic timer: members tick on one grid, in joining order, until they
/// return false; one loop timer serves them all.
@Suite struct LoopTickerTests {
    let t0 = ContinuousClock.now
    typealias Log = SimulatedLoopTests.Log

    @Test("members tick every interval on one grid, in joining order, and leave by returning false")
    func membersTickOnOneGrid() {
        let loop = EventLoop.simulated(at: t0)
        let log = Log()
        var bLeft = 0
        loop.perform {
            let ticker = loop.ticker(every: .milliseconds(25))
            #expect(loop.ticker(every: .milliseconds(25)) === ticker)
            ticker.join { log.entries.append(("a", loop.now - t0)); return true }
            ticker.join {
                log.entries.append(("b", loop.now - t0))
                bLeft += 1
                return bLeft < 2
            }
        }
        // A member joining between rounds ticks on the existing grid, not 25 ms after it joined.
        loop.advance(by: .milliseconds(30))
        loop.perform { loop.ticker(every: .milliseconds(25)).join { log.entries.append(("c", loop.now - t0)); return true } }
        loop.advance(by: .milliseconds(45))
        #expect(log.entries.map(\.0) == ["a", "b", "a", "b", "c", "a", "c"])
        #expect(log.entries.map(\.1) == [25, 25, 50, 50, 50, 75, 75].map { Duration.milliseconds($0) })
        #expect(loop.perform { loop.ticker(every: .milliseconds(25)).count } == 2)
        // One timer for all members (not one per member).
        #expect(loop.perform { loop.timers.count } == 1)
    }

    @Test("a member joining from another's tick is called in that round too, and one timer still serves both")
    func joiningFromATick() {
        let loop = EventLoop.simulated(at: t0)
        let log = Log()
        var joined = false
        loop.perform {
            let ticker = loop.ticker(every: .milliseconds(10))
            ticker.join {
                log.entries.append(("a", loop.now - t0))
                if !joined {
                    joined = true
                    ticker.join { log.entries.append(("b", loop.now - t0)); return true }
                }
                return true
            }
        }
        loop.advance(by: .milliseconds(30))
        #expect(log.entries.map(\.0) == ["a", "b", "a", "b", "a", "b"])
        #expect(log.entries.map(\.1) == [10, 10, 20, 20, 30, 30].map { Duration.milliseconds($0) })
        #expect(loop.perform { loop.timers.count } == 1)
    }

    @Test("with no members left the timer stops; a later member starts a new one")
    func stopsWhenEmpty() {
        let loop = EventLoop.simulated(at: t0)
        let log = Log()
        loop.perform { loop.ticker(every: .milliseconds(10)).join { log.entries.append(("once", loop.now - t0)); return false } }
        loop.advance(by: .milliseconds(100))
        #expect(log.entries.map(\.0) == ["once"])
        #expect(loop.perform { loop.timers.count } == 0)
        loop.perform { loop.ticker(every: .milliseconds(10)).join { log.entries.append(("again", loop.now - t0)); return true } }
        loop.advance(by: .milliseconds(10))
        #expect(log.entries.map(\.0) == ["once", "again"])
        #expect(log.entries.map(\.1) == [.milliseconds(10), .milliseconds(110)])
    }
}
