import Testing
@testable import HTTP

/// Each phase of a connection's wait has its own allowance (fake instants, no clock).
@Suite struct RequestTimerTests {
    let t0 = ContinuousClock.now
    let limits = HTTPLimits(headerTimeout: .seconds(10), bodyTimeout: .seconds(20), idleTimeout: .seconds(5), writeTimeout: .seconds(7))

    @Test func aNewConnectionHasTheHeaderTimeoutFromAcceptForItsFirstHead() {
        var timer = RequestTimer(limits: limits, acceptedAt: t0)
        #expect(timer.phase == .head && timer.deadline == t0 + .seconds(10))
        #expect(timer.expiry == nil, "a connection that never sent a byte is closed without a word")
        // A slow-loris: bytes now and then do not move the deadline.
        timer.received(at: t0 + .seconds(3), inBody: false)
        timer.received(at: t0 + .seconds(9), inBody: false)
        #expect(timer.deadline == t0 + .seconds(10))
        #expect(timer.expiry == .text(408, "request head not received within 10 s\n"))
    }

    @Test func theBodyHasItsOwnAllowanceFromTheEndOfTheHead() {
        var timer = RequestTimer(limits: limits, acceptedAt: t0)
        timer.received(at: t0 + .seconds(1), inBody: false)
        timer.received(at: t0 + .seconds(4), inBody: true)
        #expect(timer.phase == .body && timer.deadline == t0 + .seconds(24))
        timer.received(at: t0 + .seconds(20), inBody: true)
        #expect(timer.deadline == t0 + .seconds(24))
        #expect(timer.expiry == .text(408, "request body not received within 20 s\n"))
    }

    @Test func keepAliveIdlesThenTheNextHeadStartsItsClockWithItsFirstByte() {
        var timer = RequestTimer(limits: limits, acceptedAt: t0)
        timer.received(at: t0, inBody: false)
        timer.writing(at: t0 + .seconds(1))
        #expect(timer.phase == .writing && timer.deadline == t0 + .seconds(8) && timer.expiry == nil)
        timer.responded(at: t0 + .seconds(2))
        #expect(timer.phase == .idle && timer.deadline == t0 + .seconds(7) && timer.expiry == nil)
        timer.received(at: t0 + .seconds(6), inBody: false)
        #expect(timer.phase == .head && timer.deadline == t0 + .seconds(16))
        #expect(timer.expiry == .text(408, "request head not received within 10 s\n"))
    }
}
