import SCTP
import SeededRandom
import Testing

@Suite("Data channels over usrsctp, two associations on an in-memory pipe", .serialized)
struct DataChannelTransportTests {
    @Test("DCEP: the peer sees the channel with its parameters; ids follow the DTLS role")
    func remoteOpen() throws {
        let pipe = try Pipe()
        try pipe.connect()
        let id = try pipe.a.open(DataChannelParameters(label: "chat", protocol: "json", ordered: false, maxRetransmits: 2))
        let id2 = try pipe.a.open(DataChannelParameters(label: "second"))
        let idB = try pipe.b.open(DataChannelParameters(label: "from-b"))
        #expect(id % 2 == 0 && id2 % 2 == 0 && id != id2)
        #expect(idB % 2 == 1)
        pipe.run { pipe.eventsB.contains { if case .remoteOpened(id2, _) = $0 { return true }; return false } }
        let opened = pipe.eventsB.compactMap { e -> DataChannelParameters? in
            if case .remoteOpened(id, let p) = e { return p }; return nil
        }
        #expect(opened == [DataChannelParameters(label: "chat", protocol: "json", ordered: false, maxRetransmits: 2)])
        #expect(pipe.eventsA.contains(.open(id: id)))
        #expect(pipe.b.state(id) == .open)
        pipe.run { pipe.eventsA.contains { if case .remoteOpened(idB, _) = $0 { return true }; return false } }
        #expect(pipe.eventsB.contains(.open(id: idB)))
    }

    @Test("ordered reliable: 0 B … 1 MiB messages, text and binary, arrive intact and in order")
    func sizes() throws {
        let pipe = try Pipe()
        try pipe.connect()
        let id = try pipe.a.open(DataChannelParameters(label: "bulk"))
        var random = SplitMix64(seed: 1)
        let sizes = [0, 1, 2, 100, 1187, 1188, 1189, 4096, 16_383, 65_535, 65_536, 100_000, 200_000, 262_143, 262_144, 1 << 20, 0, 7]
        var sent: [DataChannelMessage] = []
        for (i, size) in sizes.enumerated() {
            let m = i % 3 == 0 ? DataChannelMessage(text: String(repeating: "é", count: size / 2) + (size % 2 == 1 ? "x" : ""))
                               : DataChannelMessage(data: random.bytes(size), isBinary: true)
            sent.append(m)
            try pipe.a.send(m, on: id)
        }
        #expect(pipe.run(for: .seconds(30)) { pipe.messages(at: pipe.eventsB, id: id).count >= sent.count })
        let got = pipe.messages(at: pipe.eventsB, id: id)
        #expect(got.count == sent.count)
        #expect(got == sent)
        #expect(got.first?.isBinary == false && got.first?.data.isEmpty == true)
        #expect(pipe.a.bufferedAmount(id) == 0)
    }

    @Test("a message over the peer's max-message-size is refused with a clear error")
    func maxMessageSize() throws {
        let pipe = try Pipe(remoteMaxMessageSize: 1000)
        try pipe.connect()
        let id = try pipe.a.open(DataChannelParameters(label: "small"))
        #expect(throws: SCTPError("a 1001-byte message exceeds the peer's max-message-size of 1000")) {
            try pipe.a.send(DataChannelMessage(data: [UInt8](repeating: 1, count: 1001), isBinary: true), on: id)
        }
        try pipe.a.send(DataChannelMessage(data: [UInt8](repeating: 1, count: 1000), isBinary: true), on: id)
        #expect(pipe.run { pipe.messages(at: pipe.eventsB, id: id).count == 1 })
    }

    @Test("unordered, maxRetransmits 0, 10% of packets dropped: what arrives is delivered, nothing stalls")
    func lossyUnordered() throws {
        let pipe = try Pipe()
        let count = 300
        let (id, got) = try pipe.sendNumberedThroughLoss(DataChannelParameters(label: "lossy", ordered: false, maxRetransmits: 0),
                                                         count: count, size: 500)
        #expect(pipe.dropped > 0)
        // Lost ones stay lost (no retransmission), the rest all came, each once.
        #expect(got.count < count && got.count >= count * 8 / 10)
        #expect(Set(got).count == got.count)
        // No stall: the last messages arrived although earlier ones were lost.
        #expect(got.contains { $0 >= count - 3 })
        // The channel still works after the losses.
        pipe.drop = { _, _ in false }
        try pipe.a.send(DataChannelMessage(text: "after"), on: id)
        #expect(pipe.run { pipe.messages(at: pipe.eventsB, id: id).last?.text == "after" })
    }

    @Test("ordered, maxPacketLifeTime 100 ms, 10% loss: in order, the expired ones skipped, no stall")
    func timedOrdered() throws {
        let pipe = try Pipe()
        let count = 200
        let (_, got) = try pipe.sendNumberedThroughLoss(DataChannelParameters(label: "timed", maxPacketLifeTime: 100),
                                                        count: count, size: 300)
        #expect(got == got.sorted() && Set(got).count == got.count)   // ordered, each once
        // A lost message stops the ones behind it for at most its lifetime, then it is given up
        // (FORWARD-TSN): messages up to the end arrive. (A lost one among the very last may
        // expire before anything tells the sender it is missing.)
        #expect((got.last ?? 0) >= count - 10)
        // usrsctp measures the lifetime on the real clock while the pipe's timers run on the
        // fake one, so whether a lost message is retransmitted (fake 60 ms on) or expires first
        // depends on how fast this machine runs the loop: none may be skipped, never many.
        #expect(got.count <= count && got.count >= count * 8 / 10)
    }

    @Test("ordered reliable survives 10% loss by retransmitting, order kept")
    func lossyReliable() throws {
        let pipe = try Pipe()
        try pipe.connect()
        let id = try pipe.a.open(DataChannelParameters(label: "reliable"))
        var counter = 0
        pipe.drop = { _, _ in counter += 1; return counter % 10 == 0 }
        var random = SplitMix64(seed: 9)
        let sent = (0..<40).map { i in DataChannelMessage(data: random.bytes(i * 997 % 20_000), isBinary: true) }
        for m in sent { try pipe.a.send(m, on: id) }
        #expect(pipe.run(for: .seconds(60)) { pipe.messages(at: pipe.eventsB, id: id).count == sent.count })
        #expect(pipe.messages(at: pipe.eventsB, id: id) == sent)
    }

    @Test("bufferedAmount rises with queued bytes and falls to zero as usrsctp takes them")
    func bufferedAmount() throws {
        let pipe = try Pipe()
        try pipe.connect()
        let id = try pipe.a.open(DataChannelParameters(label: "buffered"))
        let chunk = [UInt8](repeating: 3, count: 200_000)
        for _ in 0..<20 { try pipe.a.send(DataChannelMessage(data: chunk, isBinary: true), on: id) }
        // 4 MB against a 1 MiB send buffer: most of it waits in our queue.
        #expect(pipe.a.bufferedAmount(id) > 2_000_000)
        #expect(pipe.run(for: .seconds(60)) { pipe.a.bufferedAmount(id) == 0 })
        let sentBytes = pipe.eventsA.reduce(0) { sum, e in if case .sent(id, let n) = e { return sum + n }; return sum }
        #expect(sentBytes == 20 * chunk.count)
        #expect(pipe.run { pipe.messages(at: pipe.eventsB, id: id).count == 20 })
    }

    @Test("close from either side resets the stream and both ends see the channel closed")
    func closeBothWays() throws {
        let pipe = try Pipe()
        try pipe.connect()
        let x = try pipe.a.open(DataChannelParameters(label: "x"))
        let y = try pipe.a.open(DataChannelParameters(label: "y"))
        try pipe.a.send(DataChannelMessage(text: "last words"), on: x)
        pipe.a.close(x)
        #expect(pipe.a.state(x) == .closing)
        #expect(pipe.run { pipe.eventsA.contains(.channelClosed(id: x)) && pipe.eventsB.contains(.channelClosed(id: x)) })
        #expect(pipe.eventsB.firstIndex(of: .closing(id: x)).map { $0 < (pipe.eventsB.firstIndex(of: .channelClosed(id: x)) ?? 0) } == true)
        #expect(!pipe.eventsA.contains(.closing(id: x)))   // the side that closed knows already
        // Queued data went out before the reset.
        #expect(pipe.messages(at: pipe.eventsB, id: x).map(\.text) == ["last words"])
        // Now the side that did not open it closes the other channel.
        pipe.b.close(y)
        #expect(pipe.run { pipe.eventsA.contains(.channelClosed(id: y)) && pipe.eventsB.contains(.channelClosed(id: y)) })
        #expect(throws: SCTPError.self) { try pipe.a.send(DataChannelMessage(text: "late"), on: y) }
        // The freed id is reused for a new channel that works.
        let again = try pipe.a.open(DataChannelParameters(label: "again"))
        #expect(again == x)
        try pipe.a.send(DataChannelMessage(text: "hi"), on: again)
        #expect(pipe.run { pipe.messages(at: pipe.eventsB, id: again).last?.text == "hi" })
    }

    @Test("a negotiated channel only one side made still closes: the peer answers its reset")
    func oneSidedNegotiatedClose() throws {
        let pipe = try Pipe()
        try pipe.connect()
        _ = try pipe.b.open(DataChannelParameters(label: "alone", negotiated: true), id: 100)
        pipe.run(for: .milliseconds(50))
        pipe.b.close(100)
        #expect(pipe.run { pipe.eventsB.contains(.channelClosed(id: 100)) })
        #expect(!pipe.eventsA.contains { if case .channelClosed = $0 { return true }; return false })
    }

    @Test("negotiated channel with a fixed id: no DCEP, both sides open it themselves")
    func negotiated() throws {
        let pipe = try Pipe()
        let p = DataChannelParameters(label: "fixed", negotiated: true)
        #expect(try pipe.a.open(p, id: 7) == 7)
        #expect(try pipe.b.open(p, id: 7) == 7)
        #expect(throws: SCTPError.self) { try pipe.a.open(p, id: 7) }
        try pipe.connect()
        pipe.run(for: .milliseconds(100))
        #expect(pipe.eventsA.contains(.open(id: 7)) && pipe.eventsB.contains(.open(id: 7)))
        #expect(!pipe.eventsB.contains { if case .remoteOpened = $0 { return true }; return false })
        try pipe.b.send(DataChannelMessage(text: "from b"), on: 7)
        try pipe.a.send(DataChannelMessage(data: [1, 2, 3], isBinary: true), on: 7)
        #expect(pipe.run { !pipe.messages(at: pipe.eventsA, id: 7).isEmpty && !pipe.messages(at: pipe.eventsB, id: 7).isEmpty })
        #expect(pipe.messages(at: pipe.eventsA, id: 7) == [DataChannelMessage(text: "from b")])
        #expect(pipe.messages(at: pipe.eventsB, id: 7) == [DataChannelMessage(data: [1, 2, 3], isBinary: true)])
    }

    @Test("garbage SCTP packets are dropped; the association carries on")
    func garbage() throws {
        let pipe = try Pipe()
        try pipe.connect()
        let id = try pipe.a.open(DataChannelParameters(label: "g"))
        var random = SplitMix64(seed: 3)
        for size in [0, 1, 11, 12, 13, 100, 1200] { pipe.b.handlePacket(random.bytes(size), now: pipe.now) }
        try pipe.a.send(DataChannelMessage(text: "still here"), on: id)
        #expect(pipe.run { pipe.messages(at: pipe.eventsB, id: id).last?.text == "still here" })
    }
}

@Suite("Data channel receive limits", .serialized)
struct DataChannelLimitTests {
    @Test("a message over our max-message-size from a peer that ignores it is dropped with an error; the next one arrives")
    func oversizedFromPeer() throws {
        let pipe = try Pipe(remoteMaxMessageSize: 0)   // b "ignores" a's limit: 0 = no limit
        try pipe.connect()
        let id = try pipe.b.open(DataChannelParameters(label: "big"))
        try pipe.b.send(DataChannelMessage(data: [UInt8](repeating: 9, count: DataChannelTransport.localMaxMessageSize + 1), isBinary: true), on: id)
        try pipe.b.send(DataChannelMessage(text: "small"), on: id)
        #expect(pipe.run(for: .seconds(30)) { pipe.messages(at: pipe.eventsA, id: id).last?.text == "small" })
        #expect(pipe.messages(at: pipe.eventsA, id: id).count == 1)
        #expect(pipe.eventsA.contains { if case .error(id, let why) = $0 { return why.contains("larger than our max-message-size") }; return false })
    }
}
