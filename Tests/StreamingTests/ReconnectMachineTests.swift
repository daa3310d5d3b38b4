@testable import Streaming
import Testing

/// The recovery state machine on instants a test makes: every delay is checked to the
/// nanosecond against the backoff the machine draws from (same seed, same order).
@Suite struct ReconnectMachineTests {
    let t0 = ContinuousClock.now
    typealias Machine = ReconnectMachine

    func connected(_ policy: ReconnectPolicy = ReconnectPolicy(), canRestartIce: Bool = true, seed: UInt64 = 7) -> Machine {
        var m = Machine(policy: policy, connectTimeout: .seconds(15), canRestartIce: canRestartIce, seed: seed, now: t0)
        #expect(m.connection(.connected, now: t0).isEmpty)
        return m
    }

    @Test("a failed connection: attempts at exactly the backoff's delays, each attempt given attemptTimeout, the count reset once one connects")
    func backoffOnVirtualTime() {
        var m = connected()
        var expected = Backoff(policy: m.policy, seed: 7)
        var now = t0 + .seconds(1)
        #expect(m.connection(.failed, now: now) == [.report(.reconnecting(attempt: 1))])
        var starts: [ContinuousClock.Instant] = []   // when each attempt began
        for attempt in 1...7 {
            let due = now + expected.delay(attempt: attempt)
            #expect(m.deadline == due)
            #expect(m.timeout(now: due - .nanoseconds(1)).isEmpty, "not a nanosecond early")
            now = due
            #expect(m.timeout(now: now) == [.reconnect(attempt: attempt)])
            starts.append(now)
            if attempt.isMultiple(of: 2) {
                // The server refused (or could not be reached): the next wait starts at once.
                #expect(m.exchangeFinished(.retry("503"), now: now) == [.report(.reconnecting(attempt: attempt + 1))])
            } else {
                // Signalled, but the connection does not come up within attemptTimeout.
                #expect(m.exchangeFinished(.done, now: now).isEmpty)
                #expect(m.deadline == now + m.policy.attemptTimeout)
                now += m.policy.attemptTimeout
                #expect(m.timeout(now: now) == [.report(.reconnecting(attempt: attempt + 1))])
            }
        }
        // The waits grew to the cap: the 7th attempt began 7 s (less ≤ 20 % jitter) after the 6th was refused.
        #expect(starts[6] - starts[5] >= .milliseconds(5600) && starts[6] - starts[5] <= .seconds(7))
        #expect(m.timeout(now: m.deadline ?? now) == [.reconnect(attempt: 8)])
        #expect(m.exchangeFinished(.done, now: now).isEmpty)
        #expect(m.connection(.connected, now: now) == [.report(.reconnected)])
        #expect(m.deadline == nil)
        // The next failure starts from attempt 1 and its short delay again.
        _ = expected.delay(attempt: 8)
        now += .seconds(60)
        #expect(m.connection(.failed, now: now) == [.report(.reconnecting(attempt: 1))])
        let first = expected.delay(attempt: 1)
        #expect(m.deadline == now + first && first <= .milliseconds(300) && first >= .milliseconds(240))
    }

    @Test("disconnected for restartAfter restarts ICE once; the connection stays until it fails; back to connected in time, nothing")
    func restartThenWait() {
        var m = connected()
        let cut = t0 + .seconds(5)
        #expect(m.connection(.disconnected, now: cut).isEmpty)
        #expect(m.deadline == cut + .seconds(3))
        #expect(m.connection(.connected, now: cut + .seconds(2)).isEmpty, "recovered by itself: no restart")
        #expect(m.deadline == nil)
        let again = cut + .seconds(10)
        _ = m.connection(.disconnected, now: again)
        #expect(m.timeout(now: again + .seconds(3)) == [.restartIce(force: true), .report(.restartingIce)])
        #expect(m.exchangeFinished(.done, now: again + .seconds(3)).isEmpty)
        // Still disconnected: no second restart, no new connection while consent may come back.
        #expect(m.deadline == nil && m.connection(.disconnected, now: again + .seconds(20)).isEmpty)
        #expect(m.connection(.failed, now: again + .seconds(25)) == [.report(.reconnecting(attempt: 1))])
    }

    @Test("a restart the server cannot take (404: no session, 405: no PATCH) reconnects at once; one it could not reach keeps the connection")
    func restartRefused() {
        for (outcome, reconnects) in [(ExchangeOutcome.gone("404"), true), (.retry("unreachable"), false)] {
            var m = connected()
            _ = m.connection(.disconnected, now: t0)
            _ = m.timeout(now: t0 + .seconds(3))
            #expect(m.exchangeFinished(outcome, now: t0 + .seconds(3)) == (reconnects ? [.report(.reconnecting(attempt: 1))] : []))
        }
    }

    @Test("without ICE restarts (SRS's API), a disconnection is ridden out until it fails; the connection asking for a restart makes a new one")
    func noRestartSignaling() {
        var m = connected(canRestartIce: false)
        _ = m.connection(.disconnected, now: t0)
        #expect(m.deadline == nil && m.timeout(now: t0 + .seconds(20)).isEmpty)
        #expect(m.connection(.connected, now: t0 + .seconds(20)).isEmpty, "back on the same connection: nothing to report")
        _ = m.connection(.disconnected, now: t0 + .seconds(21))
        #expect(m.connection(.failed, now: t0 + .seconds(51)) == [.report(.reconnecting(attempt: 1))])
        var asked = connected(canRestartIce: false)
        #expect(asked.restartRequested(now: t0) == [.retireConnection, .report(.reconnecting(attempt: 1))])
        var whip = connected()
        #expect(whip.restartRequested(now: t0) == [.restartIce(force: false)], "asked for on a healthy connection: not announced")
        #expect(whip.connection(.connected, now: t0 + .seconds(1)).isEmpty)
        var lost = connected()
        _ = lost.connection(.disconnected, now: t0)
        #expect(lost.restartRequested(now: t0 + .seconds(1)) == [.restartIce(force: false), .report(.restartingIce)])
        #expect(lost.connection(.connected, now: t0 + .seconds(2)) == [.report(.iceRestarted)], "the announced restart's success is too")
    }

    @Test("the server drops the session (404): a new connection; a refusal for good (401/403) stops; attempts can be limited")
    func goneFatalLimited() {
        var m = connected()
        #expect(m.sessionGone("404", now: t0) == [.retireConnection, .report(.reconnecting(attempt: 1))])
        _ = m.timeout(now: m.deadline ?? t0)
        #expect(m.exchangeFinished(.fatal("401"), now: t0 + .seconds(1)) == [.report(.failed("401"))])
        #expect(m.isStopped && m.deadline == nil && m.connection(.failed, now: t0 + .seconds(2)).isEmpty)

        var policy = ReconnectPolicy()
        policy.maxAttempts = 2
        var limited = connected(policy)
        _ = limited.connection(.failed, now: t0)
        for attempt in 1...2 {
            #expect(limited.timeout(now: limited.deadline ?? t0) == [.reconnect(attempt: attempt)])
            let next = limited.exchangeFinished(.retry("503"), now: t0)
            #expect(next == (attempt < 2 ? [.report(.reconnecting(attempt: 2))] : [.report(.failed("503; gave up after 2 attempts"))]))
        }
        #expect(limited.isStopped)
    }

    @Test("reconnect off: no restart, the first failure stops the session, as does the server closing it; on, that reconnects")
    func off() {
        var m = connected(.off)
        _ = m.connection(.disconnected, now: t0)
        #expect(m.deadline == nil && m.restartRequested(now: t0).isEmpty)
        #expect(m.connection(.failed, now: t0 + .seconds(30)) == [.report(.failed("the connection failed"))])
        var closedOff = connected(.off)
        #expect(closedOff.connection(.closed, now: t0) == [.report(.failed("the server closed the session"))])
        var closed = connected()
        #expect(closed.connection(.closed, now: t0) == [.retireConnection, .report(.reconnecting(attempt: 1))])
    }

    @Test("the first connection: failing or not connecting within its timeout stops the session")
    func firstConnection() {
        var m = Machine(policy: ReconnectPolicy(), connectTimeout: .seconds(15), seed: 1, now: t0)
        #expect(m.deadline == t0 + .seconds(15))
        #expect(m.timeout(now: t0 + .seconds(15)) == [.report(.failed("not connected after 15.0 seconds"))])
        var failing = Machine(policy: ReconnectPolicy(), connectTimeout: nil, seed: 1, now: t0)
        #expect(failing.deadline == nil)
        #expect(failing.connection(.failed, now: t0) == [.report(.failed("the connection failed"))])
    }
}
