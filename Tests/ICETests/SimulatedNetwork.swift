import SeededRandom
import Testing
import STUN
@testable import ICE

/// A tiny in-process network with a fake clock: delivers agents' transmits after a latency,
/// and can drop, duplicate, reorder, NAT and block packets. Also hosts fake STUN servers.
final class SimulatedNetwork {
    struct Packet {
        var deliverAt: ContinuousClock.Instant
        var sequence: Int
        var from: SocketAddress
        var to: SocketAddress
        var bytes: [UInt8]
    }

    struct Sent {
        var time: ContinuousClock.Instant
        var transmit: ICETransmit
        var message: STUNMessage?
    }

    let start = ContinuousClock.now
    var now: ContinuousClock.Instant
    var rng: SplitMix64
    var latency: Duration = .milliseconds(10)
    /// Extra random delay in 0..<jitter, which reorders packets.
    var jitter: Duration = .zero
    var lossRate = 0.0
    var duplicateRate = 0.0
    /// Return false to drop a packet (after NAT translation of the source).
    var filter: (SocketAddress, SocketAddress) -> Bool = { _, _ in true }
    /// Private address → public address (full-cone NAT).
    var nat: [SocketAddress: SocketAddress] = [:]
    var stunServers: Set<SocketAddress> = []

    private(set) var agents: [(agent: ICEAgent, name: String)] = []
    private var owners: [SocketAddress: ICEAgent] = [:]
    private var inFlight: [Packet] = []
    private var sequence = 0
    private(set) var sent: [Sent] = []
    private(set) var events: [String: [(ContinuousClock.Instant, ICEEvent)]] = [:]

    init(seed: UInt64 = 1) {
        now = start
        rng = SplitMix64(seed: seed)
    }

    var elapsed: Duration { now - start }

    func add(_ agent: ICEAgent, name: String, bases: [SocketAddress]) {
        agents.append((agent, name))
        for base in bases {
            owners[base] = agent
            agent.addLocalBase(base, now: now)
        }
        agent.finishGathering(now: now)
    }

    func name(of agent: ICEAgent) -> String {
        agents.first { $0.agent === agent }?.name ?? "?"
    }

    func events(of agent: ICEAgent) -> [ICEEvent] {
        (events[name(of: agent)] ?? []).map(\.1)
    }

    func states(of agent: ICEAgent) -> [ICEConnectionState] {
        events(of: agent).compactMap { if case .stateChanged(let s) = $0 { return s } else { return nil } }
    }

    /// When `agent` first entered `state`, as time since start.
    func time(of agent: ICEAgent, entering state: ICEConnectionState) -> Duration? {
        for (time, event) in events[name(of: agent)] ?? [] {
            if case .stateChanged(let s) = event, s == state { return time - start }
        }
        return nil
    }

    func localCandidates(of agent: ICEAgent) -> [Candidate] {
        events(of: agent).compactMap { if case .localCandidate(let c) = $0 { return c } else { return nil } }
    }

    /// Requests sent from a base, with their send times.
    func requests(from base: SocketAddress) -> [Sent] {
        sent.filter { $0.transmit.local == base && $0.message?.messageClass == .request }
    }

    /// Injects raw bytes as if `from` had sent them to `to`.
    func inject(_ bytes: [UInt8], from: SocketAddress, to: SocketAddress) {
        enqueue(from: from, to: to, bytes: bytes, at: now + latency)
    }

    /// Advances the fake clock, delivering packets and firing timers, until `stop` holds or `limit` passes.
    @discardableResult
    func run(for limit: Duration, until stop: () -> Bool = { false }) -> Bool {
        let end = now + limit
        var stalled = 0
        while true {
            collect()
            if stop() { return true }
            var next: ContinuousClock.Instant? = inFlight.map(\.deliverAt).min()
            for (agent, _) in agents {
                if let t = agent.pollTimeout(), next.map({ t < $0 }) ?? true { next = t }
            }
            guard let wake = next, wake <= end else {
                now = end
                collect()
                return stop()
            }
            if wake > now {
                now = wake
                stalled = 0
            } else {
                stalled += 1
                if stalled > 10_000 {
                    Issue.record("busy loop: a deadline at or before now that handleTimeout never clears (t=\(elapsed))")
                    return false
                }
            }
            deliverDue()
            for (agent, _) in agents {
                if let t = agent.pollTimeout(), t <= now { agent.handleTimeout(now: now) }
            }
        }
    }

    private func collect() {
        for (agent, name) in agents {
            while let transmit = agent.pollTransmit() {
                sent.append(Sent(time: now, transmit: transmit, message: try? STUNMessage(parsing: transmit.bytes)))
                let source = nat[transmit.local] ?? transmit.local
                guard filter(source, transmit.remote) else { continue }
                if Double.random(in: 0..<1, using: &rng) < lossRate { continue }
                let copies = Double.random(in: 0..<1, using: &rng) < duplicateRate ? 2 : 1
                for _ in 0..<copies {
                    let extra = jitter == .zero ? Duration.zero : jitter * Double.random(in: 0..<1, using: &rng)
                    enqueue(from: source, to: transmit.remote, bytes: transmit.bytes, at: now + latency + extra)
                }
            }
            while let event = agent.pollEvent() {
                events[name, default: []].append((now, event))
            }
        }
    }

    private func enqueue(from: SocketAddress, to: SocketAddress, bytes: [UInt8], at time: ContinuousClock.Instant) {
        sequence += 1
        inFlight.append(Packet(deliverAt: time, sequence: sequence, from: from, to: to, bytes: bytes))
    }

    private func deliverDue() {
        let due = inFlight.filter { $0.deliverAt <= now }.sorted { ($0.deliverAt, $0.sequence) < ($1.deliverAt, $1.sequence) }
        inFlight.removeAll { $0.deliverAt <= now }
        for packet in due {
            if stunServers.contains(packet.to) {
                answerAsSTUNServer(packet)
                continue
            }
            // Undo NAT for packets sent to a public address.
            let destination = nat.first { $0.value == packet.to }?.key ?? packet.to
            owners[destination]?.handleSTUN(packet.bytes, from: packet.from, local: destination, now: now)
        }
    }

    private func answerAsSTUNServer(_ packet: Packet) {
        guard let request = try? STUNMessage(parsing: packet.bytes), request.messageClass == .request else { return }
        let response = STUNMessage(messageClass: .successResponse, transactionID: request.transactionID,
                                   attributes: [.xorMappedAddress(packet.from)])
        enqueue(from: packet.to, to: packet.from, bytes: response.encode(), at: now + latency)
    }
}

func addr(_ text: String, _ port: UInt16) -> SocketAddress {
    SocketAddress(host: text, port: port) ?? SocketAddress(ip: .v4(0), port: port)
}

/// Two agents wired to each other, with candidates exchanged (optionally later).
struct AgentPair {
    let network: SimulatedNetwork
    let a: ICEAgent
    let b: ICEAgent
    let aBases: [SocketAddress]
    let bBases: [SocketAddress]

    init(network: SimulatedNetwork = SimulatedNetwork(),
         aRole: ICERole = .controlling, bRole: ICERole = .controlled,
         aConfig: ICEConfiguration = ICEConfiguration(), bConfig: ICEConfiguration = ICEConfiguration(),
         aTieBreaker: UInt64 = 1000, bTieBreaker: UInt64 = 2000,
         aBases: [SocketAddress] = [addr("10.0.0.1", 1000)], bBases: [SocketAddress] = [addr("10.0.0.2", 2000)],
         exchangeCandidates: Bool = true, endOfCandidates: Bool = true) {
        self.network = network
        let aCreds = ICECredentials(ufrag: "aaaa", pwd: "aaaaaaaaaaaaaaaaaaaaaaaa")
        let bCreds = ICECredentials(ufrag: "bbbb", pwd: "bbbbbbbbbbbbbbbbbbbbbbbb")
        a = ICEAgent(role: aRole, local: aCreds, configuration: aConfig, tieBreaker: aTieBreaker)
        b = ICEAgent(role: bRole, local: bCreds, configuration: bConfig, tieBreaker: bTieBreaker)
        a.random = SplitMix64(seed: 11)
        b.random = SplitMix64(seed: 22)
        self.aBases = aBases
        self.bBases = bBases
        network.add(a, name: "a", bases: aBases)
        network.add(b, name: "b", bases: bBases)
        a.setRemoteCredentials(bCreds, remoteIsLite: bConfig.lite, now: network.now)
        b.setRemoteCredentials(aCreds, remoteIsLite: aConfig.lite, now: network.now)
        if exchangeCandidates {
            for c in b.localCandidates { a.addRemoteCandidate(c, now: network.now) }
            for c in a.localCandidates { b.addRemoteCandidate(c, now: network.now) }
        }
        if endOfCandidates {
            a.endOfRemoteCandidates(now: network.now)
            b.endOfRemoteCandidates(now: network.now)
        }
    }

    var bothConnected: Bool {
        [ICEConnectionState.connected, .completed].contains(a.state) && [ICEConnectionState.connected, .completed].contains(b.state)
    }

    /// The two selected pairs are mirror images of each other (with NAT, compare via `nat`).
    var selectionsMatch: Bool {
        guard let sa = a.selectedPair, let sb = b.selectedPair else { return false }
        let n = network.nat
        return (n[sa.local] ?? sa.local) == sb.remote && (n[sb.local] ?? sb.local) == sa.remote
    }
}
