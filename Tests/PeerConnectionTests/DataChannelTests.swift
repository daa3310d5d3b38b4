import Foundation
import PeerConnection
import SessionSupport
import Testing
import TestSupport

/// The first element of `stream` that `match`es, or nil after `timeout`. On a simulated loop,
/// run the loop until the event has happened first: the stream holds it, and this returns at once.
func first<T: Sendable>(_ stream: AsyncStream<T>, timeout: Duration = .seconds(10),
                        where match: @escaping @Sendable (T) -> Bool = { _ in true }) async -> T? {
    await withDeadline(timeout) {
        for await item in stream where match(item) { return item }
        return nil
    }
}

/// The channel the peer announces with a `.dataChannel` event.
func remoteChannel(_ pc: PeerConnection, label: String) async -> DataChannel? {
    let event = await first(pc.events) { if case .dataChannel(let c) = $0 { return c.label == label }; return false }
    if case .dataChannel(let c)? = event { return c }
    return nil
}

/// Collects `count` messages from a channel's stream (fewer if `timeout` passes first). On a
/// simulated loop, run the loop until they have arrived first.
func collect(_ channel: DataChannel, _ count: Int, timeout: Duration = .seconds(20)) async -> [DataChannelMessage] {
    let got = Monitor<[DataChannelMessage]>([])
    let reader = Task {
        for await m in channel.messages where got.withLock({ $0.append(m); return $0.count }) >= count { break }
    }
    if await got.wait(until: { $0.count >= count }, timeout: timeout) { await reader.value } else { reader.cancel() }
    return got.value
}

/// Two connected peers on real sockets and one open channel `a` made, with `b`'s end of it
/// (DelegateTests).
func connectedChannel(_ label: String, media: Bool = false) async throws
    -> (a: PeerConnection, b: PeerConnection, atA: DataChannel, atB: DataChannel) {
    let a = try loopbackPeer(), b = try loopbackPeer()
    if media { try await a.addTransceiver(.audio) }
    let atA = try await a.createDataChannel(label)
    let remote = Task { await remoteChannel(b, label: label) }
    try await negotiate(a, b)
    let atB = try #require(await remote.value)
    _ = await first(atA.events) { $0 == .open }
    return (a, b, atA, atB)
}

/// The same on `sim`: two connected peers and an open channel `a` made, with `b`'s end of it.
func connectedChannel(_ sim: Simulation, _ label: String, media: Bool = false) async throws
    -> (a: PeerConnection, b: PeerConnection, atA: DataChannel, atB: DataChannel) {
    let a = try sim.peer(), b = try sim.peer()
    let announced = EventLog(b)
    if media { try await a.addTransceiver(.audio) }
    let atA = try await a.createDataChannel(label)
    try await sim.negotiate(a, b)
    try sim.connect(a, b)
    try #require(sim.run { atA.readyState == .open && announced.channels.contains { $0.label == label } }, "\(label) is \(atA.readyState) at a")
    let atB = try #require(await remoteChannel(b, label: label))
    _ = await first(atA.events) { $0 == .open }
    return (a, b, atA, atB)
}

/// Peers on a simulated loop and a virtual network: SCTP (usrsctp) ticks on the loop's clock
/// through the transport, so its timers move with virtual time too. usrsctp has one timer wheel
/// per process, led by one association's clock: run with --no-parallel, and close every peer.
@Suite("Data channels between two PeerConnections on a virtual network", .serialized)
struct DataChannelTests {
    @Test("data-only connection: the remote channel appears as an event; 0 B … 1 MiB both ways, intact, in order")
    func dataOnly() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let announced = EventLog(b)
        let chat = try await a.createDataChannel("chat", DataChannelInit(protocol: "test"))
        #expect(chat.readyState == .connecting && chat.id == nil)
        try await sim.negotiate(a, b)
        let offer = try #require(a.localDescription).sdp
        #expect(offer.contains("m=application 9 UDP/DTLS/SCTP webrtc-datachannel"))
        #expect(offer.contains("a=sctp-port:5000") && offer.contains("a=max-message-size:1048576"))
        try sim.connect(a, b)
        #expect(sim.run { chat.readyState == .open && announced.channels.contains { $0.label == "chat" } })
        let atB = try #require(await remoteChannel(b, label: "chat"))
        #expect(atB.protocol == "test" && atB.ordered && atB.readyState == .open)
        #expect(await first(chat.events) { $0 == .open } == .open)
        // a offered and answers take a=setup:active: b is the DTLS client, a the server (odd ids).
        #expect(chat.id.map { $0 % 2 == 1 } == true && atB.id == chat.id)

        let sizes = [0, 1, 1200, 16_384, 65_536, 100_000, 262_144, 1 << 20, 0, 3]
        var sent: [DataChannelMessage] = []
        for (i, size) in sizes.enumerated() {
            let m = i % 2 == 0 ? DataChannelMessage(data: Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ i) }))
                               : DataChannelMessage(String(repeating: "z", count: size))
            sent.append(m)
            if m.isBinary { try chat.send(m.data) } else { try chat.send(m.text ?? "") }
        }
        #expect(sim.run { atB.statistics.messagesReceived >= sent.count }, "b got \(atB.statistics.messagesReceived) of \(sent.count)")
        #expect(await collect(atB, sent.count) == sent)
        try atB.send("pong")
        #expect(sim.run { chat.statistics.messagesReceived >= 1 })
        #expect(await collect(chat, 1).first?.text == "pong")
        let stats = await a.getStats()
        let dc = try #require(stats.ofType("data-channel").first)
        #expect(dc.int("messagesSent") == sizes.count && dc.int("bytesSent") == sizes.reduce(0, +))
        #expect(dc.int("messagesReceived") == 1)
        await a.close()
        await b.close()
        #expect(chat.readyState == .closed)
    }

    @Test("bundled with media: one transport carries RTP and the data channel")
    func bundled() async throws {
        let sim = Simulation()
        let (a, b, channel, atB) = try await connectedChannel(sim, "side", media: true)
        #expect(try #require(a.localDescription).sdp.contains("a=group:BUNDLE 0 1"))
        try channel.send(Data([1, 2, 3]))
        #expect(sim.run { atB.statistics.messagesReceived >= 1 })
        #expect(await collect(atB, 1).first?.data == Data([1, 2, 3]))
        #expect(b.transceivers.count == 1)
        await a.close()
        await b.close()
    }

    @Test("bufferedAmount counts what SCTP has not taken; bufferedAmountLow fires when it drains")
    func bufferedAmountLow() async throws {
        let sim = Simulation()
        let (a, b, channel, atB) = try await connectedChannel(sim, "bulk")
        channel.bufferedAmountLowThreshold = 65_536
        let chunk = Data(repeating: 0x5a, count: 200_000)
        for _ in 0..<20 { try channel.send(chunk) }
        #expect(channel.bufferedAmount > 65_536)   // counted at once, more than SCTP's send buffer takes
        // It may fire early too (SCTP took the first message before the second was sent): the
        // one that counts leaves the channel at or below the threshold for good.
        #expect(sim.run(within: .seconds(30)) { channel.bufferedAmount <= 65_536 && atB.statistics.messagesReceived >= 20 },
                "bufferedAmount \(channel.bufferedAmount), b got \(atB.statistics.messagesReceived) of 20")
        let low = await first(channel.events) { [channel] in $0 == .bufferedAmountLow && channel.bufferedAmount <= 65_536 }
        #expect(low == .bufferedAmountLow)
        let got = await collect(atB, 20)
        #expect(got.count == 20 && got.allSatisfy { $0.data == chunk })
        await a.close()
        await b.close()
    }

    @Test("close from either side: both ends reach closed; sending then throws")
    func closeEitherSide() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let announced = EventLog(b)
        let one = try await a.createDataChannel("one")
        let two = try await a.createDataChannel("two")
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        #expect(sim.run { one.readyState == .open && two.readyState == .open && announced.channels.contains { $0.label == "one" } })
        let oneAtB = try #require(await remoteChannel(b, label: "one"))
        // The opener closes "one".
        one.close()
        #expect(one.readyState == .closing)
        #expect(sim.run { oneAtB.readyState == .closed && one.readyState == .closed })
        #expect(await first(oneAtB.events) { $0 == .closed } == .closed)
        #expect(await first(one.events) { $0 == .closed } == .closed)
        #expect(throws: PeerConnectionError.self) { try one.send("late") }
        // The side that did not open it closes "two" (found by its id on b's side).
        #expect(two.readyState == .open)
        let twoAtB = try await b.createDataChannel("two", DataChannelInit(negotiated: true, id: 100))
        // A negotiated channel b makes on an id a does not use: it opens alone.
        #expect(sim.run { twoAtB.readyState == .open })
        #expect(await first(twoAtB.events) { $0 == .open } == .open)
        twoAtB.close()
        #expect(sim.run { twoAtB.readyState == .closed })
        #expect(await first(twoAtB.events) { $0 == .closed } == .closed)
        #expect(two.readyState == .open)    // closing id 100 left "two" alone
        two.close()
        #expect(sim.run { two.readyState == .closed })
        #expect(await first(two.events) { $0 == .closed } == .closed)
        await a.close()
        await b.close()
    }

    @Test("the answerer closes a channel the offerer opened")
    func remoteSideCloses() async throws {
        let sim = Simulation()
        let (a, b, channel, atB) = try await connectedChannel(sim, "bye")
        atB.close()
        #expect(sim.run { channel.readyState == .closed && atB.readyState == .closed })
        // Its events after open, to the end of the stream (it ends when the channel closes).
        let seen = await withDeadline(.seconds(10)) { () -> [DataChannelEvent]? in
            var events: [DataChannelEvent] = []
            for await e in channel.events where e != .open { events.append(e) }
            return events
        }
        #expect(seen == [.closing, .closed])
        await a.close()
        await b.close()
    }

    @Test("closing the PeerConnection closes the peer's channels too (SCTP ABORT inside DTLS)")
    func peerConnectionClose() async throws {
        let sim = Simulation()
        let (a, b, _, atB) = try await connectedChannel(sim, "end")
        await a.close()
        #expect(sim.run { atB.readyState == .closed })
        #expect(await first(atB.events) { $0 == .closed } == .closed)
        await b.close()
    }

    @Test("the delegate (the iOS SDK's shape) sees state changes, messages and bufferedAmount")
    func delegate() async throws {
        let sim = Simulation()
        let (a, b, atA, atB) = try await connectedChannel(sim, "delegate")
        let log = DelegateLog()
        atB.delegate = log
        atA.delegate = log
        try atA.send("via delegate")
        #expect(sim.run { log.current.messages.contains("via delegate") })
        #expect(sim.run { log.current.bufferedAmounts.contains(0) })
        atA.close()
        #expect(sim.run { log.current.states.contains(.closed) })
        await a.close()
        await b.close()
    }

    @Test("negotiated channel with a fixed id: no event, both sides open it, messages cross")
    func negotiated() async throws {
        let sim = Simulation()
        let a = try sim.peer(), b = try sim.peer()
        let atA = try await a.createDataChannel("fixed", DataChannelInit(negotiated: true, id: 42))
        let atB = try await b.createDataChannel("fixed", DataChannelInit(negotiated: true, id: 42))
        #expect(atA.id == 42 && atB.id == 42)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        #expect(sim.run { atA.readyState == .open && atB.readyState == .open })
        #expect(await first(atA.events) { $0 == .open } == .open)
        #expect(await first(atB.events) { $0 == .open } == .open)
        try atA.send("hello 42")
        #expect(sim.run { atB.statistics.messagesReceived >= 1 })
        #expect(await collect(atB, 1).first?.text == "hello 42")
        try atB.send(Data())
        #expect(sim.run { atA.statistics.messagesReceived >= 1 })
        #expect(await collect(atA, 1).first == DataChannelMessage(data: Data()))
        await a.close()
        await b.close()
    }

    @Test("bad arguments and early sends are errors, not traps")
    func misuse() async throws {
        let sim = Simulation()
        let a = try sim.peer()
        await #expect(throws: PeerConnectionError.self) {
            try await a.createDataChannel("x", DataChannelInit(maxRetransmits: 1, maxPacketLifeTime: 1))
        }
        await #expect(throws: PeerConnectionError.self) { try await a.createDataChannel("x", DataChannelInit(negotiated: true)) }
        let early = try await a.createDataChannel("early")
        #expect(throws: PeerConnectionError.self) { try early.send("too soon") }
        await a.close()
        #expect(early.readyState == .closed)
        // Closed before the connection came up: it does not open when it does.
        let c = try sim.peer(), d = try sim.peer()
        let announced = EventLog(d)
        let gone = try await c.createDataChannel("gone")
        let kept = try await c.createDataChannel("kept")
        gone.close()
        try await sim.negotiate(c, d)
        try sim.connect(c, d)
        #expect(sim.run { kept.readyState == .open && announced.channels.contains { $0.label == "kept" } })
        #expect(await remoteChannel(d, label: "kept")?.label == "kept")
        #expect(gone.readyState == .closed && gone.id == nil)
        await c.close()
        await d.close()
    }
}

final class DelegateLog: DataChannelDelegate {
    struct Seen: Sendable {
        var states: [DataChannelState] = [], messages: [String] = [], bufferedAmounts: [Int] = []
    }
    private let seen = Monitor(Seen())
    func dataChannelDidChangeState(_ channel: DataChannel) { seen.withLock { $0.states.append(channel.readyState) } }
    func dataChannel(_ channel: DataChannel, didReceiveMessage message: DataChannelMessage) {
        seen.withLock { $0.messages.append(message.text ?? "<binary>") }
    }
    func dataChannel(_ channel: DataChannel, didChangeBufferedAmount amount: Int) {
        seen.withLock { $0.bufferedAmounts.append(amount) }
    }

    /// What it has seen so far (on a simulated loop: after running it).
    var current: Seen { seen.value }

    /// Waits (bounded, on real sockets) until what it has seen meets `condition`.
    func wait(timeout: Duration = .seconds(10), _ condition: @escaping @Sendable (Seen) -> Bool) async -> Bool {
        await seen.wait(until: condition, timeout: timeout)
    }
}
