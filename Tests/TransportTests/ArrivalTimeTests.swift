import Glibc
import STUN
import Testing
import TestSupport
@testable import Transport

/// Arrival times from the kernel (SO_TIMESTAMPNS) rather than from when the loop read the
/// datagram: a batch read at once keeps the spacing it arrived with.
@Suite struct ArrivalTimeTests {
    /// Stamps 20 ms apart, read together 100 ms after the last: 20 ms apart on the loop's clock,
    /// ending 100 ms before the read. Missing, future and very old stamps are clamped.
    @Test func aBatchKeepsItsSpacing() {
        let base = ContinuousClock.now
        let realNow: Int64 = 1_700_000_000_000_000_000
        var reads = 0
        var clock = ArrivalClock { reads += 1; return (base, realNow) }
        let ms: Int64 = 1_000_000
        let arrivals = [realNow - 140 * ms, realNow - 120 * ms, realNow - 100 * ms].map { clock.instant(realtimeNs: $0) }
        #expect(arrivals == [base - .milliseconds(140), base - .milliseconds(120), base - .milliseconds(100)])
        #expect(reads == 1)
        #expect(clock.instant(realtimeNs: 0) == base)                                  // no stamp: now
        #expect(clock.instant(realtimeNs: realNow - 5_000 * ms) == base - .seconds(1))  // at most 1 s old
        #expect(clock.instant(realtimeNs: realNow + 50 * ms) == base)                  // newer than the reading: read again
        #expect(reads == 2)
    }

    /// A real socket on a threaded loop: while a datagram is handled, `datagramArrival` is
    /// when the kernel received it — after it was sent, well before the busy loop got to it.
    @Test func theLoopSeesWhenTheKernelReceived() async throws {
        let loop = try EventLoop(name: "arrival-test")
        defer { loop.shutdown() }
        let seen = Monitor<[Seen]>([])
        let held = try await loop.submit { () -> IOHandle in
            let io = try SocketSet(loop: loop, addresses: [SocketAddress(host: "127.0.0.1", port: 0)!])
            io.onReceive = { _, _, _ in
                let s = Seen(arrival: loop.datagramArrival, handled: ContinuousClock.now)
                seen.withLock { $0.append(s) }
                return .accepted
            }
            return IOHandle(io: io, address: io.localAddresses[0])
        }
        let address = held.address
        let sender = try UDPSocket(bind: SocketAddress(host: "127.0.0.1", port: 0)!)
        defer { sender.close() }
        // The loop is kept busy while the datagrams arrive (what a stalled relay loop does), so
        // it reads them all at least 50 ms later: their times must still be when they came.
        let sent = ContinuousClock.now
        let busyUntil = try await loop.submit { () -> ContinuousClock.Instant in
            for i in 0..<3 { sender.send([UInt8(i)], to: address) }
            usleep(50_000)
            return ContinuousClock.now
        }
        #expect(await seen.wait(until: { $0.count == 3 }, timeout: .seconds(5)))
        for s in seen.value {
            let arrival = try #require(s.arrival)
            #expect(arrival >= sent - .milliseconds(1) && arrival <= busyUntil - .milliseconds(45))
            #expect(s.handled >= busyUntil)
        }
        let after = try await loop.submit { () -> Bool in
            held.io.close()
            return loop.datagramArrival == nil
        }
        #expect(after, "no arrival time outside a datagram's handling")
    }
}

struct Seen: Sendable {
    var arrival: ContinuousClock.Instant?
    var handled: ContinuousClock.Instant
}

/// Carries the socket set out of the loop closure (it is used on the loop only).
struct IOHandle: @unchecked Sendable {
    let io: SocketSet
    let address: SocketAddress
}
