import SCTP

/// Two data channel transports wired back to back in memory, on a fake clock: packets move
/// only when `run` moves them, time only when it advances it. `drop` decides per packet.
final class Pipe {
    let a: DataChannelTransport   // DTLS client: even ids
    let b: DataChannelTransport
    var now: ContinuousClock.Instant
    var drop: (_ fromA: Bool, _ packet: [UInt8]) -> Bool = { _, _ in false }
    var eventsA: [DataChannelTransportEvent] = []
    var eventsB: [DataChannelTransportEvent] = []
    var packetsAtoB = 0, packetsBtoA = 0, dropped = 0

    init(remoteMaxMessageSize: Int = DataChannelTransport.localMaxMessageSize) throws {
        // usrsctp has one timer wheel: the pipe's fake clock drives it once it has run ahead of
        // the last leader's by a second (at once when no other association lives), and real-time
        // associations alive meanwhile would tick on it. So run these suites apart from the
        // PeerConnection data channel tests (`swift test --no-parallel`, as `make unit` does).
        now = .now
        a = try DataChannelTransport(isDTLSClient: true, remoteMaxMessageSize: remoteMaxMessageSize, now: now)
        b = try DataChannelTransport(isDTLSClient: false, remoteMaxMessageSize: remoteMaxMessageSize, now: now)
    }

    deinit {
        a.close()
        b.close()
    }

    /// Moves packets and events until `done` holds or `limit` of fake time passes; returns
    /// whether `done` held.
    @discardableResult
    func run(for limit: Duration = .seconds(5), until done: () -> Bool = { false }) -> Bool {
        let end = now.advanced(by: limit)
        while now < end {
            var moved = false
            while let p = a.pollTransmit() {
                moved = true
                packetsAtoB += 1
                if drop(true, p) { dropped += 1 } else { b.handlePacket(p, now: now) }
            }
            while let p = b.pollTransmit() {
                moved = true
                packetsBtoA += 1
                if drop(false, p) { dropped += 1 } else { a.handlePacket(p, now: now) }
            }
            while let e = a.pollEvent() { eventsA.append(e) }
            while let e = b.pollEvent() { eventsB.append(e) }
            if done() { return true }
            if !moved {
                now = now.advanced(by: SCTPAssociation.tick)
                a.handleTimeout(now: now)
                b.handleTimeout(now: now)
            }
        }
        return done()
    }

    func connect() throws {
        let ok = run { eventsA.contains(.connected) && eventsB.contains(.connected) }
        guard ok else { throw SCTPError("the in-memory association did not come up") }
    }

    /// Opens a channel, then drops every tenth packet from `a` while it sends `count`
    /// messages numbered in their first two bytes, 50 a second; returns the numbers `b` got.
    func sendNumberedThroughLoss(_ parameters: DataChannelParameters, count: Int, size: Int) throws -> (UInt16, [Int]) {
        try connect()
        let id = try a.open(parameters)
        run { self.eventsB.contains { if case .remoteOpened = $0 { return true }; return false } }
        var counter = 0
        drop = { fromA, _ in
            guard fromA else { return false }
            counter += 1
            return counter % 10 == 0
        }
        for i in 0..<count {
            try a.send(DataChannelMessage(data: [UInt8(i & 0xff), UInt8(i >> 8)] + [UInt8](repeating: 7, count: size), isBinary: true), on: id)
            run(for: .milliseconds(20))
        }
        run(for: .seconds(3))
        return (id, messages(at: eventsB, id: id).map { Int($0.data[0]) | Int($0.data[1]) << 8 })
    }

    func messages(at side: [DataChannelTransportEvent], id: UInt16) -> [DataChannelMessage] {
        side.compactMap { if case .message(id, let m) = $0 { return m }; return nil }
    }
}
