import STUN
import Testing
@testable import Transport

/// The in-process network on a simulated loop: delivery, each impairment measured on what
/// arrives, outages, NAT rebinding and a shared socket's routing.
@Suite struct VirtualNetworkTests {
    let t0 = ContinuousClock.now
    let a = SocketAddress(host: "10.0.0.1", port: 1000)!
    let b = SocketAddress(host: "10.0.0.2", port: 2000)!

    /// What an endpoint received: payload tag, source, local address and arrival time since t0.
    final class Inbox {
        var arrivals: [(tag: Int, from: SocketAddress, local: SocketAddress, at: Duration)] = []
        var tags: [Int] { arrivals.map(\.tag) }
    }

    /// Two endpoints on a fresh network whose receptions are logged; `a` gets `conditions` on
    /// its uplink. (Kept together: the network holds endpoints weakly, as a closed socket.)
    struct Pair {
        let loop: EventLoop, network: VirtualNetwork
        let ea: VirtualEndpoint, eb: VirtualEndpoint
        let ia = Inbox(), ib = Inbox()
    }

    func pair(_ conditions: LinkConditions = .clean, seed: UInt64 = 1) throws -> Pair {
        let loop = EventLoop.simulated(at: t0)
        let network = VirtualNetwork(loop: loop, seed: seed)
        return try loop.perform {
            let p = Pair(loop: loop, network: network, ea: try network.endpoint(at: a), eb: try network.endpoint(at: b))
            p.ea.uplink.conditions = conditions
            for (endpoint, inbox) in [(p.ea, p.ia), (p.eb, p.ib)] {
                endpoint.onReceive = { [t0] bytes, from, local in
                    inbox.arrivals.append((Int(bytes.load(as: UInt32.self)), from, local, loop.now - t0))
                    return .accepted
                }
            }
            return p
        }
    }

    /// A datagram of `size` bytes (at least 4) starting with `tag`.
    func datagram(_ tag: Int, size: Int = 100) -> [UInt8] {
        withUnsafeBytes(of: UInt32(tag)) { Array($0) } + [UInt8](repeating: 0, count: max(size, 4) - 4)
    }

    @Test("a datagram arrives after the link's delay, from the sender's address at the receiver's")
    func delivery() throws {
        let p = try pair(LinkConditions(delay: .milliseconds(30)))
        p.loop.perform { p.ea.send(datagram(7), from: a, to: b) }
        p.loop.advance(by: .milliseconds(29))
        #expect(p.ib.arrivals.isEmpty)
        p.loop.advance(by: .milliseconds(1))
        #expect(p.ib.tags == [7])
        #expect(p.ib.arrivals.first?.from == a && p.ib.arrivals.first?.local == b)
        #expect(p.ib.arrivals.first?.at == .milliseconds(30))
    }

    @Test("a clean link still delivers on a timer, never inside send")
    func cleanLinkDeliversOnATimer() throws {
        let p = try pair()
        let seenInsideSend = p.loop.perform {
            p.ea.send(datagram(1), from: a, to: b)
            return p.ib.arrivals.count
        }
        #expect(seenInsideSend == 0)
        p.loop.advance(by: .zero)
        #expect(p.ib.tags == [1])
    }

    @Test("loss: 10% of 10,000 datagrams within bounds, the same ones for the same seed")
    func lossRate() throws {
        func lostTags(seed: UInt64) throws -> Set<Int> {
            let p = try pair(LinkConditions(loss: 0.1), seed: seed)
            p.loop.perform { for i in 0..<10_000 { p.ea.send(datagram(i), from: a, to: b) } }
            p.loop.advance(by: .milliseconds(1))
            #expect(p.loop.perform { p.ea.uplink.counters.lost } == 10_000 - p.ib.arrivals.count)
            return Set(0..<10_000).subtracting(p.ib.tags)
        }
        let lost = try lostTags(seed: 5)
        #expect((900...1100).contains(lost.count))   // binomial: σ = 30
        #expect(try lostTags(seed: 5) == lost)
        #expect(try lostTags(seed: 6) != lost)
    }

    @Test("delay ± jitter: every delay within the band; reordering only when allowed")
    func jitterAndReordering() throws {
        for reorder in [true, false] {
            let conditions = LinkConditions(delay: .milliseconds(50), jitter: .milliseconds(20), reorder: reorder)
            let p = try pair(conditions)
            var sentAt: [Duration] = []
            for i in 0..<200 {
                p.loop.perform { p.ea.send(datagram(i), from: a, to: b) }
                sentAt.append(p.loop.now - t0)
                p.loop.advance(by: .milliseconds(2))
            }
            p.loop.advance(by: .seconds(1))
            #expect(p.ib.arrivals.count == 200)
            let delays = p.ib.arrivals.map { $0.at - sentAt[$0.tag] }
            #expect(delays.allSatisfy { $0 >= .milliseconds(30) && $0 <= .milliseconds(70) })
            let inOrder = p.ib.tags == p.ib.tags.sorted()
            #expect(inOrder == !reorder, "reorder \(reorder)")
            if reorder {   // the band is used, not just its middle
                #expect(delays.min().map { $0 < .milliseconds(35) } == true)
                #expect(delays.max().map { $0 > .milliseconds(65) } == true)
            }
        }
    }

    @Test("rate: datagrams leave one serialisation time apart; a full FIFO drops the tail")
    func rateAndQueue() throws {
        // 1 Mbit/s: a 1000-byte datagram takes 8 ms. Ten fit in the FIFO (one being sent).
        let p = try pair(LinkConditions(rate: 1_000_000, queue: .packets(10)))
        p.loop.perform { for i in 0..<50 { p.ea.send(datagram(i, size: 1000), from: a, to: b) } }
        p.loop.advance(by: .seconds(1))
        #expect(p.ib.tags == Array(0..<10))
        #expect(p.ib.arrivals.map(\.at) == (1...10).map { .milliseconds(8 * $0) })
        let counters = p.loop.perform { p.ea.uplink.counters }
        #expect(counters.queueDrops == 40 && counters.passed == 10 && counters.maxBacklog == 10_000)
        // Once it has drained, the FIFO takes datagrams again.
        p.loop.perform { p.ea.send(datagram(99, size: 1000), from: a, to: b) }
        p.loop.advance(by: .milliseconds(8))
        #expect(p.ib.tags.last == 99)
    }

    @Test("a FIFO limited in time holds that long at the rate: 200 ms at 1 Mbit/s is 25 datagrams of 1000 bytes")
    func queueLimitInTime() throws {
        let p = try pair(LinkConditions(rate: 1_000_000, queue: .time(.milliseconds(200))))
        p.loop.perform { for i in 0..<100 { p.ea.send(datagram(i, size: 1000), from: a, to: b) } }
        p.loop.advance(by: .seconds(1))
        #expect(p.ib.arrivals.count == 25)
        #expect(p.ib.arrivals.last?.at == .milliseconds(200))
    }

    @Test("a black-holed link drops everything for its time, then delivers again")
    func blackHole() throws {
        let p = try pair()
        p.loop.perform { p.eb.downlink.blackHole(for: .seconds(2)) }
        for i in 0..<30 {
            p.loop.perform {
                p.ea.send(datagram(i), from: a, to: b)
                p.eb.send(datagram(i), from: b, to: a)
            }
            p.loop.advance(by: .milliseconds(100))
        }
        #expect(p.ib.tags == Array(20..<30))
        #expect(p.ia.tags == Array(0..<30))
        #expect(p.loop.perform { p.eb.downlink.counters.blackHoled } == 20)
    }

    @Test("rebinding: the peer sees the new source; replies to the old address are lost, to the new one arrive")
    func natRebinding() throws {
        let p = try pair()
        let moved = SocketAddress(host: "198.51.100.7", port: 40000)!
        p.loop.perform { p.ea.send(datagram(1), from: a, to: b) }
        p.loop.advance(by: .milliseconds(1))
        try p.loop.perform { try p.network.rebind(a, to: moved) }
        p.loop.perform {
            p.ea.send(datagram(2), from: a, to: b)
            p.eb.send(datagram(3), from: b, to: a)
            p.eb.send(datagram(4), from: b, to: moved)
        }
        p.loop.advance(by: .milliseconds(1))
        #expect(p.ib.arrivals.map(\.from) == [a, moved])
        #expect(p.ia.tags == [4])
        #expect(p.ia.arrivals.first?.local == a)   // the endpoint's own address does not change
        #expect(p.loop.perform { p.network.unroutable } == 1)
        #expect(throws: TransportError.self) { try p.loop.perform { try p.network.rebind(b, to: moved) } }
    }

    @Test("binding: a taken address is refused, port 0 gets a free port, a closed endpoint's address is free again")
    func binding() throws {
        let loop = EventLoop.simulated(at: t0)
        let network = VirtualNetwork(loop: loop)
        try loop.perform {
            let first = try network.endpoint(at: a)
            #expect(throws: TransportError.self) { try network.endpoint(at: a) }
            let any = try network.endpoint(at: SocketAddress(host: "10.0.0.1", port: 0)!)
            #expect(any.localAddresses.first?.port == 50000)
            first.close()
            #expect(!first.send(datagram(1), from: a, to: b))
            _ = try network.endpoint(at: a)
        }
    }

    @Test("a virtual shared socket routes by ICE ufrag and verified address, as the UDP mux does")
    func virtualMuxRouting() throws {
        let loop = EventLoop.simulated(at: t0)
        let network = VirtualNetwork(loop: loop)
        let server = SocketAddress(host: "10.0.0.9", port: 3478)!
        let got = Inbox()
        let (client, mux) = try loop.perform {
            let mux = try network.mux(at: server)
            for (tag, ufrag) in [(1, "aaaa"), (2, "bbbb")] {
                let endpoint = mux.endpoint(ufrag: ufrag)
                endpoint.onReceive = { [weak endpoint] bytes, from, local in
                    got.arrivals.append((tag, from, local, loop.now - t0))
                    if bytes.first.map({ $0 < 4 }) == true { endpoint?.addressVerified(from) }   // as ICE would, once it checked
                    endpoint?.send(bytes, from: local, to: from)   // echo
                    return .accepted
                }
            }
            let client = try network.endpoint(at: a)
            return (client, mux)
        }
        let echoes = Inbox()
        loop.perform {
            client.onReceive = { bytes, from, _ in
                echoes.arrivals.append((Int(bytes[0]), from, a, loop.now - t0))
                return .accepted
            }
            let check = STUNMessage(messageClass: .request, attributes: [.username("bbbb:peer")]).encode()
            client.send([0x80, 0] + [UInt8](repeating: 0, count: 18), from: a, to: server)   // media before any check: unrouted
            client.send(check, from: a, to: server)
            client.send([0x80, 1] + [UInt8](repeating: 0, count: 18), from: a, to: server)
        }
        loop.advance(by: .milliseconds(1))
        #expect(got.tags == [2, 2])
        #expect(got.arrivals.allSatisfy { $0.from == a && $0.local == server })
        #expect(echoes.arrivals.map(\.from) == [server, server])
        #expect(loop.perform { mux.unroutedDatagrams } == 1)
        #expect(loop.perform { mux.routing(of: a)?.owner } == "bbbb")
    }
}
