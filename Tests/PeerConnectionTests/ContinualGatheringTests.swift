import ICE
import Media
import PeerConnection
import SessionSupport
import STUN
import Synchronization
import Testing
import Transport

/// What a connection said about its candidates and negotiation, with the virtual time of each.
final class GatheringLog: PeerConnectionDelegate {
    private let items = Mutex<[(at: ContinuousClock.Instant, event: PeerConnectionEvent)]>([])
    private let clock: @Sendable () -> ContinuousClock.Instant

    init(_ pc: PeerConnection, clock: @escaping @Sendable () -> ContinuousClock.Instant) {
        self.clock = clock
        pc.delegate = self
    }

    private func add(_ event: PeerConnectionEvent) {
        let now = clock()
        items.withLock { $0.append((now, event)) }
    }
    func peerConnection(_ pc: PeerConnection, didGenerate candidate: IceCandidate) { add(.iceCandidate(candidate)) }
    func peerConnection(_ pc: PeerConnection, didRemove candidates: [IceCandidate]) { add(.iceCandidatesRemoved(candidates)) }
    func peerConnectionShouldNegotiate(_ pc: PeerConnection) { add(.negotiationNeeded) }
    func peerConnection(_ pc: PeerConnection, didChange state: IceConnectionState) { add(.iceConnectionStateChanged(state)) }

    var candidates: [IceCandidate] {
        items.withLock { $0.compactMap { item -> IceCandidate? in if case .iceCandidate(let c) = item.event { c } else { nil } } }
    }
    var removed: [IceCandidate] {
        items.withLock { $0.flatMap { item -> [IceCandidate] in if case .iceCandidatesRemoved(let c) = item.event { c } else { [] } } }
    }
    var negotiationNeeded: [ContinuousClock.Instant] {
        items.withLock { $0.compactMap { item -> ContinuousClock.Instant? in if case .negotiationNeeded = item.event { item.at } else { nil } } }
    }
    func entered(_ state: IceConnectionState) -> [ContinuousClock.Instant] {
        items.withLock { $0.compactMap { item -> ContinuousClock.Instant? in
            if case .iceConnectionStateChanged(let s) = item.event, s == state { item.at } else { nil }
        } }
    }
    func clear() { items.withLock { $0.removeAll() } }
}

extension SocketAddress.IP {
    var text: String { SocketAddress(ip: self, port: 0).host }
}

/// Candidate lines of a description that name `ip`.
func candidateLines(_ pc: PeerConnection, at ip: SocketAddress.IP) -> [String] {
    (pc.localDescription?.sdp ?? "").split(separator: "\r\n").map(String.init)
        .filter { $0.hasPrefix("a=candidate:") && $0.contains(" \(ip.text) ") }
}

/// Continual gathering on simulated time: a peer's host gains and loses addresses
/// (`VirtualHost`), as a netlink monitor reports them on a real machine.
@Suite("Continual gathering")
struct ContinualGatheringTests {
    @Test("an address that appears becomes a trickled host candidate the peer can pair with; when it goes, it is withdrawn and nothing else changes")
    func newAddressIsTrickledAndWithdrawn() async throws {
        let sim = Simulation()
        let host = sim.host(addresses: 1)
        let a = try sim.peer(on: host), b = try sim.peer()
        let log = GatheringLog(a) { [loop = sim.loop] in loop.now }
        try await a.addTransceiver(.audio)
        try await sim.negotiate(a, b)
        try sim.connect(a, b)
        let selected = a.selectedCandidatePair
        log.clear()

        let wifi = sim.nextAddress().ip
        let added = sim.loop.now
        sim.add(wifi, to: host)
        #expect(sim.run(within: .milliseconds(100)) { log.candidates.contains { $0.candidate.contains(" \(wifi.text) ") } })
        #expect(sim.loop.now == added, "trickled \(sim.loop.now - added) after the address appeared")
        let candidate = try Candidate(parsing: try #require(log.candidates.first).candidate)
        #expect(candidate.type == .host && candidate.port != 0)
        #expect(log.candidates.first?.sdpMid == "0")
        #expect(candidateLines(a, at: wifi).count == 1, "the local description carries it")
        #expect(a.iceGatheringState == .complete, "the first gathering stays complete; later candidates are trickled")
        // The peer takes it (checks on the new pair run at the next restart or lost path).
        try await b.addIceCandidate(try #require(log.candidates.first))
        let remote = await b.getStats().ofType("candidate-pair").compactMap { $0["remoteAddress"] }
        #expect(remote.contains(.string(try #require(candidate.socketAddress).description)), "\(remote)")

        sim.remove(wifi, from: host)
        #expect(sim.run(within: .milliseconds(100)) { !log.removed.isEmpty })
        #expect(log.removed.map(\.candidate) == [candidate.attributeValue])
        #expect(candidateLines(a, at: wifi).isEmpty, "withdrawn from the local description")
        // Not the selected path: no restart, media goes on where it was.
        sim.advance(by: .seconds(5))
        #expect(log.negotiationNeeded.isEmpty)
        #expect(a.selectedCandidatePair?.local == selected?.local && a.connectionState == .connected)
        await a.close()
        await b.close()
    }

    @Test("with a TURN server, a new address gets its own allocation: a relay candidate is trickled, and withdrawn with it")
    func newAddressGetsARelayCandidate() async throws {
        let sim = Simulation()
        let server = try MiniTURNServer(sim)
        defer { server.stop() }
        let host = sim.host(addresses: 1)
        let sockets = Holder<VirtualEndpoint>()
        let a = try sim.peer(on: host, { config in
            config.iceServers = [IceServer(urls: ["turn:\(server.address)?transport=udp"], username: "u", credential: "p")]
        }, endpoint: { sockets.value = $0 })
        let log = GatheringLog(a) { [loop = sim.loop] in loop.now }
        try await a.addTransceiver(.audio)
        try await a.setLocalDescription(try await a.createOffer())
        #expect(sim.run(within: .seconds(5)) { a.iceGatheringState == .complete })
        #expect(server.counters.withLock { $0.allocations } == 1)

        let lte = sim.nextAddress().ip
        sim.add(lte, to: host)
        let relayFromLTE = { log.candidates.compactMap { try? Candidate(parsing: $0.candidate) }.first { $0.type == .relay && $0.relatedAddress == lte.text } }
        #expect(sim.run(within: .seconds(2)) { relayFromLTE() != nil })
        #expect(server.counters.withLock { $0.allocations } == 2)
        #expect(log.candidates.compactMap { try? Candidate(parsing: $0.candidate) }.contains { $0.type == .host && $0.address == lte.text })

        sim.remove(lte, from: host)
        #expect(sim.run(within: .milliseconds(100)) { log.removed.count == 2 })
        let withdrawn = log.removed.compactMap { try? Candidate(parsing: $0.candidate) }
        #expect(Set(withdrawn.map(\.type)) == [.host, .relay], "\(withdrawn)")
        #expect(withdrawn.first { $0.type == .relay } == relayFromLTE())
        // The remaining allocation is released on close (its answer comes on virtual time).
        let closing = await sim.beginClose(a)
        let io = try #require(sockets.value)
        #expect(sim.run(within: .seconds(2)) { server.counters.withLock { $0.released } == 1 && io.isClosed })
        await closing.value
    }

    enum Side: String, CaseIterable { case controlling, controlled }

    @Test("the selected address vanishes: the peer restarts ICE by itself and video resumes on its other address, both ways",
          arguments: Side.allCases)
    func selectedAddressVanishes(_ side: Side) async throws {
        let sim = Simulation()
        let host = sim.host(addresses: 2)
        let multi = try sim.peer(on: host), single = try sim.peer()
        let (offerer, answerer) = side == .controlling ? (multi, single) : (single, multi)
        // One camera, a track to each side: video both ways.
        let source = VideoSource()
        for (pc, id) in [(offerer, "o"), (answerer, "a")] { try encodeEveryFrame(try await pc.addTrack(VideoTrack(id: id, source: source), codecs: [.vp8])) }
        try await sim.negotiate(offerer, answerer)
        try sim.connect(offerer, answerer)
        let atMulti = ArrivalLog { [loop = sim.loop] in loop.now }, atSingle = ArrivalLog { [loop = sim.loop] in loop.now }
        try #require(multi.transceivers.first?.receiver.videoTrack).addRenderer(atMulti)
        try #require(single.transceivers.first?.receiver.videoTrack).addRenderer(atSingle)
        let feed = PatternFeed(sim, into: source)
        #expect(feed.run(within: .seconds(5)) { atMulti.count >= 10 && atSingle.count >= 10 })
        let (first, second) = (host.addresses[0], host.addresses[1])
        #expect(multi.selectedCandidatePair?.local.hasPrefix(first.text + ":") == true, "\(String(describing: multi.selectedCandidatePair))")
        let ufrag = iceUfrag(multi)
        let log = GatheringLog(multi) { [loop = sim.loop] in loop.now }
        let before = (atMulti.count, atSingle.count)

        let lost = sim.loop.now
        sim.remove(first, from: host)
        // It asks for a restart itself; its signaling carries the offer (here, at once).
        #expect(feed.run(within: .seconds(1)) { !log.negotiationNeeded.isEmpty })
        let asked = try #require(log.negotiationNeeded.first) - lost
        #expect(log.removed.count == 1 && log.removed.first?.candidate.contains(" \(first.text) ") == true)
        try await renegotiate(multi, multi === offerer ? answerer : offerer)
        #expect(iceUfrag(multi) != ufrag, "new credentials")
        for pc in [multi, single] { #expect(await feed.run(within: .seconds(5), untilAsync: { await restartedPairSelected(pc) })) }
        feed.run(for: .seconds(2))
        let end = sim.loop.now
        #expect(multi.selectedCandidatePair?.local.hasPrefix(second.text + ":") == true, "\(String(describing: multi.selectedCandidatePair))")
        let gaps = (atMulti.longestGap(from: lost, to: end), atSingle.longestGap(from: lost, to: end))
        print("selected address lost (\(side.rawValue) side): restart asked after \(asked), longest frame gap at the peer that moved \(gaps.0), at the other \(gaps.1)")
        #expect(gaps.0 <= .milliseconds(500) && gaps.1 <= .milliseconds(500), "freezes \(gaps)")
        #expect(atMulti.count >= before.0 + 50 && atSingle.count >= before.1 + 50)
        for pc in [multi, single] {
            #expect(pc.connectionState == .connected)
            #expect(await pc.transportStatistics()["srtpErrors"] == 0, "DTLS and SRTP ran on")
        }
        await multi.close()
        await single.close()
    }

    @Test("gatherOnce: interface changes are ignored")
    func gatherOnceIgnoresChanges() async throws {
        let sim = Simulation()
        let host = sim.host(addresses: 1)
        let a = try sim.peer(on: host) { $0.continualGatheringPolicy = .gatherOnce }
        let log = GatheringLog(a) { [loop = sim.loop] in loop.now }
        try await a.addTransceiver(.audio)
        try await a.setLocalDescription(try await a.createOffer())
        #expect(sim.run(within: .seconds(1)) { a.iceGatheringState == .complete })
        let extra = sim.nextAddress().ip
        sim.add(extra, to: host)
        sim.advance(by: .seconds(1))
        #expect(log.candidates.count == 1, "only the first gathering's: \(log.candidates)")
        await a.close()
    }
}
