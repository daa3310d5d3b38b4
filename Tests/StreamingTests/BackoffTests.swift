import Streaming
import Testing

@Suite struct BackoffTests {
    @Test("without jitter: 0.3 s doubling to the 7 s cap, and there it stays")
    func schedule() {
        var policy = ReconnectPolicy()
        policy.jitter = 0
        var backoff = Backoff(policy: policy, seed: 1)
        let delays = (1...9).map { backoff.delay(attempt: $0) }
        #expect(delays == [.milliseconds(300), .milliseconds(600), .milliseconds(1200), .milliseconds(2400), .milliseconds(4800),
                           .seconds(7), .seconds(7), .seconds(7), .seconds(7)])
        #expect(backoff.delay(attempt: 10_000) == .seconds(7), "no overflow far out")
        policy.maxDelay = .seconds(2)
        #expect(Backoff(policy: policy).baseDelay(attempt: 4) == .seconds(2), "a configured cap")
    }

    @Test("jitter: each delay within [0.8, 1] of its base, spread out, the cap never passed; the same seed, the same delays")
    func jitter() {
        let policy = ReconnectPolicy()
        var a = Backoff(policy: policy, seed: 42), b = Backoff(policy: policy, seed: 42), c = Backoff(policy: policy, seed: 43)
        for attempt in 1...12 {
            let base = a.baseDelay(attempt: attempt)
            let draws = (0..<200).map { _ in a.delay(attempt: attempt) }
            #expect(draws.allSatisfy { $0 >= base * 0.8 && $0 <= base && $0 <= policy.maxDelay })
            #expect(Set(draws).count > 150, "jittered, not constant")
            #expect(draws == (0..<200).map { _ in b.delay(attempt: attempt) })
            #expect(draws != (0..<200).map { _ in c.delay(attempt: attempt) })
        }
    }
}
