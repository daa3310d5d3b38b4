import Testing
import STUN
@testable import ICE

/// The lite side follows its peer to a new address once the old one went quiet (NAT
/// rebinding), and a full agent finds a path that came back within one probe interval.
@Suite struct RebindingTests {
    private static let pwd = "aaaaaaaaaaaaaaaaaaaaaaaa"

    private static func check(_ id: UInt8) -> [UInt8] {
        STUNMessage(messageClass: .request, transactionID: [UInt8](repeating: id, count: 12),
                    attributes: [.username("aaaa:bbbb"), .iceControlling(9), .priority(1)])
            .encode(integrityKey: Array(pwd.utf8), fingerprint: true)
    }

    private func lite() -> (ICEAgent, SocketAddress) {
        let agent = ICEAgent(role: .controlled, local: ICECredentials(ufrag: "aaaa", pwd: Self.pwd),
                             configuration: ICEConfiguration(lite: true))
        let base = addr("10.0.0.1", 1000)
        agent.addLocalBase(base, now: .now)
        return (agent, base)
    }

    @Test("a check from a new port moves the lite side's path once the old port has been quiet for a second")
    func liteFollowsARebinding() {
        let (agent, base) = lite()
        let t0 = ContinuousClock.now
        let old = addr("192.0.2.7", 50000), new = addr("192.0.2.7", 50123)
        #expect(agent.handleSTUN(Self.check(1), from: old, local: base, now: t0))
        #expect(agent.selectedPair?.remote == old)
        // Media keeps arriving from the old port: a check from elsewhere (a backup path, a
        // replay) does not move the path.
        agent.noteReceived(from: old, now: t0 + .milliseconds(900))
        #expect(agent.handleSTUN(Self.check(2), from: new, local: base, now: t0 + .milliseconds(1500)))
        #expect(agent.selectedPair?.remote == old)
        // The old port goes quiet; the next check from the new one takes the path.
        #expect(agent.handleSTUN(Self.check(3), from: new, local: base, now: t0 + .milliseconds(1950)))
        #expect(agent.selectedPair?.remote == new)
        #expect(agent.stats.rebinds == 1)
        var changes: [SocketAddress] = []
        while let event = agent.pollEvent() { if case .selectedPairChanged(_, let remote) = event { changes.append(remote) } }
        #expect(changes == [old, new])
        // And media from the new address counts as the peer's.
        agent.noteReceived(from: new, now: t0 + .seconds(2))
        #expect(agent.state == .connected || agent.state == .completed)
    }

    /// The rebinding's first check came while the old port was still heard (a packet in flight
    /// on the old mapping): answered, no move — and the peer, answered, checks again only seconds
    /// later. Its media, from the new port, moves the path once the old one has been quiet 0.1 s
    /// (a check alone needs a second: a backup pair is checked, never sent media).
    @Test("media from a port that passed a check moves the lite side's path once the old port is quiet 0.1 s")
    func liteFollowsARebindingOnMedia() {
        let (agent, base) = lite()
        let t0 = ContinuousClock.now
        let old = addr("192.0.2.7", 50000), new = addr("192.0.2.7", 50123), stranger = addr("192.0.2.9", 4000)
        #expect(agent.handleSTUN(Self.check(1), from: old, local: base, now: t0))
        agent.noteReceived(from: old, now: t0 + .milliseconds(2000))
        #expect(agent.handleSTUN(Self.check(2), from: new, local: base, now: t0 + .milliseconds(2050)))
        #expect(agent.selectedPair?.remote == old)
        agent.noteReceived(from: new, now: t0 + .milliseconds(2080))
        #expect(agent.selectedPair?.remote == old, "the old port was heard 0.08 s ago")
        // Media from an address that never passed a check moves nothing.
        agent.noteReceived(from: stranger, now: t0 + .milliseconds(2120))
        #expect(agent.selectedPair?.remote == old)
        agent.noteReceived(from: new, now: t0 + .milliseconds(2120))
        #expect(agent.selectedPair?.remote == new)
        #expect(agent.stats.rebinds == 1)
        #expect(agent.state == .connected || agent.state == .completed)
    }

    /// The first packet after the gap left on the old mapping (a straggler): the new port's next
    /// few packets move the path without waiting out the old port's 0.1 s, and a packet from the
    /// old port meanwhile (both still alive) starts their count over.
    @Test("three packets in a row from a checked new port move the path; one from the old port starts the run over")
    func liteFollowsARunOfMedia() {
        let (agent, base) = lite()
        let t0 = ContinuousClock.now
        let old = addr("192.0.2.7", 50000), new = addr("192.0.2.7", 50123)
        let ms = { (n: Int) in t0 + .milliseconds(n) }
        #expect(agent.handleSTUN(Self.check(1), from: old, local: base, now: t0))
        agent.noteReceived(from: old, now: ms(2000))
        #expect(agent.handleSTUN(Self.check(2), from: new, local: base, now: ms(2001)))
        agent.noteReceived(from: new, now: ms(2002))
        agent.noteReceived(from: new, now: ms(2003))
        agent.noteReceived(from: old, now: ms(2004))
        agent.noteReceived(from: new, now: ms(2005))
        agent.noteReceived(from: new, now: ms(2006))
        #expect(agent.selectedPair?.remote == old, "two in a row since the old port was last heard")
        agent.noteReceived(from: new, now: ms(2007))
        #expect(agent.selectedPair?.remote == new)
        #expect(agent.stats.rebinds == 1)
        // The old port's straggling packets no longer count as the path's.
        agent.noteReceived(from: old, now: ms(2008))
        #expect(agent.selectedPair?.remote == new)
    }

    @Test("a full agent probes a silent path every 0.1 s and is connected again within one probe of its return")
    func outageIsFoundWithinAProbe() throws {
        let network = SimulatedNetwork()
        let p = AgentPair(network: network)
        #expect(network.run(for: .seconds(2)) { p.bothConnected })
        network.filter = { _, _ in false }   // both directions cut
        #expect(network.run(for: .seconds(10)) { p.a.state == .disconnected })
        network.run(for: .seconds(10))
        let back = network.elapsed
        network.filter = { _, _ in true }
        #expect(network.run(for: .seconds(2)) { p.a.state == .completed || p.a.state == .connected })
        let recovered = try #require(network.states(of: p.a).last.map { _ in network.elapsed })
        #expect(recovered - back <= .milliseconds(100 + 20), "connected again \(recovered - back) after the path returned")
    }
}
