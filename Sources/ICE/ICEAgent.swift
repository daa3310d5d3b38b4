import STUN
import SeededRandom

/// Sans-I/O ICE agent (RFC 8445, trickle RFC 8838, consent RFC 7675) for one component.
///
/// Feed it local bases, remote credentials and candidates, received STUN datagrams and the time;
/// take datagrams to send (`pollTransmit`), events (`pollEvent`) and the next deadline
/// (`pollTimeout`, then call `handleTimeout`). Not thread-safe: call it from one serial context.
public final class ICEAgent {
    public private(set) var role: ICERole
    public private(set) var state: ICEConnectionState = .new
    public var selectedPair: (local: SocketAddress, remote: SocketAddress)? {
        (selected ?? restartPath).map { ($0.local, $0.remote) }
    }
    public internal(set) var localCredentials: ICECredentials
    public internal(set) var remoteCredentials: ICECredentials?
    /// Ours before the last restart. A peer whose connection to our address was made under them
    /// can keep checking with them after the restart: Chromium does not pair a new remote
    /// candidate at an address it already has a selected connection to, so our new ufrag is never
    /// used there and its checks carry the old one (an outage test: 6.7 s without media after the
    /// path returned, until that connection timed out). Its requests under them, with its current
    /// ufrag, are answered, and our checks on such a pair carry them too (its new ones 401).
    var previousLocalCredentials: ICECredentials?
    public private(set) var remoteIsLite = false
    public let configuration: ICEConfiguration
    public let tieBreaker: UInt64

    /// Every local candidate so far (host, srflx and learned prflx).
    public internal(set) var localCandidates: [Candidate] = []
    /// Every usable remote candidate so far (signalled and learned prflx).
    public var remoteCandidates: [Candidate] { remotes.map(\.candidate) }

    // Jitter source; tests replace it with a fixed seed.
    var random: SplitMix64

    /// Where checks are sent from: a host socket, or a TURN allocation's relayed address (the
    /// driver relays what is sent from it).
    struct Base {
        var address: SocketAddress
        var localPreference: UInt16
        /// The base's own candidate: host, or relay.
        var candidate: Candidate
    }

    struct Remote {
        var candidate: Candidate
        var address: SocketAddress
    }

    var bases: [Base] = []
    /// Bases ever added: each new one gets a lower local preference than all before it, also
    /// after some were removed (two candidates must not share a priority).
    var basesAdded = 0
    var remotes: [Remote] = [] { didSet { remoteIndex = nil } }
    /// `remotes` by address, made again after any change (lookups per received check stay O(1)).
    private var remoteIndex: [SocketAddress: Int]?
    /// Remote addresses an authenticated check came from or was answered by (a request whose
    /// MESSAGE-INTEGRITY verified with our password, or a response with the peer's). Only these
    /// may carry DTLS and media; a spoofed or unauthenticated packet never adds one.
    var verified: Set<SocketAddress> = []
    var pairs: [CandidatePair] = []
    var transactions: [[UInt8]: Transaction] = [:]
    var triggeredQueue: [PairKey] = []
    var gatherQueue: [(server: SocketAddress, base: SocketAddress)] = []
    var transmits: [ICETransmit] = []
    var events: [ICEEvent] = []
    var statsCounters = ICEStats()

    var selected: PairKey?
    /// During an ICE restart: the pair media stays on until checks select a new one.
    var restartPath: PairKey?
    /// Controlling side: nominate the best valid pair at the next pacing slot; its check is out.
    var nominationWanted = false
    var nominationInFlight = false
    var nextSendSlot: ContinuousClock.Instant?
    var gatheringFinished = false
    var gatheringCompleteSent = false
    var remoteEndOfCandidates = false
    var checkingClockStart: ContinuousClock.Instant?
    var prflxCounter = 0
    var transactionCounter = 0

    // Consent freshness (full agents) and request liveness (lite agents).
    var nextConsentAt: ContinuousClock.Instant?
    var consentDue = false
    var lastConsentAt: ContinuousClock.Instant?
    var consentPendingSince: ContinuousClock.Instant?
    var lastValidRequestAt: ContinuousClock.Instant?
    /// When anything authenticated last arrived from the selected remote (checks, responses,
    /// and what the driver reports: media, DTLS).
    var lastReceivedAt: ContinuousClock.Instant?
    /// Lite: authenticated media in a row from one checked address other than the selected
    /// remote's, with nothing from the selected since it began (a rebinding's new port).
    var mediaElsewhere: (remote: SocketAddress, since: ContinuousClock.Instant, packets: Int)?
    var lastConsentSentAt: ContinuousClock.Instant?
    /// State to return to when consent recovers from `disconnected`.
    var stateBeforeDisconnect: ICEConnectionState = .connected

    public init(role: ICERole, local: ICECredentials, configuration: ICEConfiguration = ICEConfiguration(),
                tieBreaker: UInt64 = UInt64.random(in: 0...UInt64.max), seed: UInt64 = UInt64.random(in: 0...UInt64.max)) {
        // A lite agent is always controlled (RFC 8445 §6.1.1).
        self.role = configuration.lite ? .controlled : role
        self.localCredentials = local
        self.configuration = configuration
        self.tieBreaker = tieBreaker
        self.random = SplitMix64(seed: seed)
    }

    var isLite: Bool { configuration.lite }
    var isTerminal: Bool { state == .closed || state == .failed }

    // MARK: - local side

    /// Adds a local socket address: emits its host candidate and starts server-reflexive queries.
    public func addLocalBase(_ address: SocketAddress, now: ContinuousClock.Instant) {
        guard !isTerminal, !bases.contains(where: { $0.address == address }) else { return }
        // Earlier bases are preferred; the driver adds them in its order of preference.
        let preference = nextLocalPreference()
        let host = Candidate(foundation: foundation(type: .host, base: address, server: nil),
                             priority: Candidate.priority(type: .host, localPreference: preference),
                             address: address.host, port: address.port, type: .host)
        bases.append(Base(address: address, localPreference: preference, candidate: host))
        localCandidates.append(host)
        events.append(.localCandidate(host))
        for remote in remotes { addPair(base: bases[bases.count - 1], remote: remote) }
        if !isLite, !address.isLoopback, !address.isLinkLocal {
            for server in configuration.stunServers where server.isIPv4 == address.isIPv4 {
                gatherQueue.append((server, address))
            }
        }
        pump(now)
    }

    /// Adds a TURN allocation's relayed address as a base with its relay candidate (RFC 8445
    /// §5.1.1.2; raddr/rport = the server-reflexive address the TURN server saw). The driver
    /// sends what ICE sends from `relayed` through the allocation, and feeds back what arrives
    /// through it with `local: relayed`.
    public func addRelayCandidate(relayed: SocketAddress, mapped: SocketAddress?, server: SocketAddress,
                                  now: ContinuousClock.Instant) {
        guard !isTerminal, !bases.contains(where: { $0.address == relayed }) else { return }
        let preference = nextLocalPreference()
        let relay = Candidate(foundation: foundation(type: .relay, base: relayed, server: server),
                              priority: Candidate.priority(type: .relay, localPreference: preference),
                              address: relayed.host, port: relayed.port, type: .relay,
                              relatedAddress: mapped?.host, relatedPort: mapped?.port)
        bases.append(Base(address: relayed, localPreference: preference, candidate: relay))
        localCandidates.append(relay)
        events.append(.localCandidate(relay))
        for remote in remotes { addPair(base: bases[bases.count - 1], remote: remote) }
        pump(now)
    }

    private func nextLocalPreference() -> UInt16 {
        defer { basesAdded += 1 }
        return UInt16(clamping: 65535 - basesAdded)
    }

    /// The type of the local candidate a pair sends from (`relay` for a TURN allocation).
    public func localCandidateType(_ local: SocketAddress) -> CandidateType? {
        base(for: local)?.candidate.type
    }

    /// The driver has added every base; `gatheringComplete` follows once srflx queries are done.
    public func finishGathering(now: ContinuousClock.Instant) {
        guard !isTerminal else { return }
        gatheringFinished = true
        pump(now)
    }

    // MARK: - remote side

    public func setRemoteCredentials(_ credentials: ICECredentials, remoteIsLite: Bool, now: ContinuousClock.Instant) {
        guard !isTerminal else { return }
        remoteCredentials = credentials
        self.remoteIsLite = remoteIsLite
        // Against a lite peer the full agent must control (RFC 8445 §6.1.1).
        if remoteIsLite, !isLite, role != .controlling { switchRole(to: .controlling) }
        if checkingClockStart == nil { checkingClockStart = now }
        if isLite, state == .new { setState(.checking) }
        pump(now)
    }

    /// Adds a signalled (or trickled) remote candidate. Names (mDNS) and non-UDP are ignored:
    /// the peer's checks reveal such addresses as peer-reflexive candidates. Beyond
    /// `maxRemoteCandidates` new ones are refused (counted); `remoteCandidateRoom` tells first.
    public func addRemoteCandidate(_ candidate: Candidate, now: ContinuousClock.Instant) {
        addRemoteCandidates([candidate], now: now)
    }

    /// Several at once, with one round of work after the last (a trickle batch, an offer).
    public func addRemoteCandidates(_ candidates: [Candidate], now: ContinuousClock.Instant) {
        guard !isTerminal else { return }
        var added = false
        for candidate in candidates where insertRemote(candidate) { added = true }
        if added { pump(now) }
    }

    /// How many of `candidates` name an address not yet known (what they would take of the room).
    public func newRemoteAddresses(in candidates: [Candidate]) -> Int {
        Set(candidates.compactMap(\.socketAddress)).filter { remoteIndex(of: $0) == nil }.count
    }

    /// How many more signalled remote candidates fit under `maxRemoteCandidates`.
    public var remoteCandidateRoom: Int { max(0, configuration.maxRemoteCandidates - remotes.count) }

    /// True when a new address was added (pairs formed).
    private func insertRemote(_ candidate: Candidate) -> Bool {
        guard candidate.transport == "udp", candidate.component == 1, let address = candidate.socketAddress,
              !address.isUnspecified, address.port != 0 else {
            statsCounters.ignoredRemoteCandidates += 1
            return false
        }
        if let index = remoteIndex(of: address) {
            // A signalled candidate replaces one learned as peer-reflexive (RFC 8445 §7.3.1.3).
            if remotes[index].candidate.type == .prflx, candidate.type != .prflx {
                remotes[index].candidate = candidate
                for i in pairs.indices where pairs[i].key.remote == address {
                    pairs[i].remotePriority = candidate.priority
                    pairs[i].updatePriority(role: role)
                }
                sortPairs()
            }
            return false
        }
        guard remotes.count < configuration.maxRemoteCandidates else {
            statsCounters.refusedRemoteCandidates += 1
            return false
        }
        let remote = Remote(candidate: candidate, address: address)
        remotes.append(remote)
        for base in bases { addPair(base: base, remote: remote) }
        return true
    }

    func remoteIndex(of address: SocketAddress) -> Int? {
        if remoteIndex == nil {
            var index: [SocketAddress: Int] = [:]
            index.reserveCapacity(remotes.count)
            for (i, remote) in remotes.enumerated() { index[remote.address] = i }
            remoteIndex = index
        }
        return remoteIndex?[address]
    }

    /// Whether `address` has proven itself the peer's with an authenticated check (see
    /// `verified`). The driver drops DTLS and media from any other address.
    public func isVerified(_ address: SocketAddress) -> Bool {
        verified.contains(address)
    }

    public func endOfRemoteCandidates(now: ContinuousClock.Instant) {
        guard !isTerminal else { return }
        remoteEndOfCandidates = true
        pump(now)
    }

    // MARK: - driver plumbing

    public func handleTimeout(now: ContinuousClock.Instant) {
        guard !isTerminal else { return }
        pump(now)
    }

    public func pollTransmit() -> ICETransmit? {
        transmits.isEmpty ? nil : transmits.removeFirst()
    }

    public func pollEvent() -> ICEEvent? {
        events.isEmpty ? nil : events.removeFirst()
    }

    /// The earliest instant at which `handleTimeout` has work to do.
    public func pollTimeout() -> ContinuousClock.Instant? {
        guard !isTerminal else { return nil }
        var earliest: ContinuousClock.Instant?
        func consider(_ t: ContinuousClock.Instant?) {
            guard let t else { return }
            if earliest.map({ t < $0 }) ?? true { earliest = t }
        }
        if hasPendingRequest, let slot = nextSendSlot { consider(slot) }
        for transaction in transactions.values where !transaction.retransmitDue {
            consider(transaction.deadline)
        }
        // These mirror the conditions in `runTimers`, so a reported deadline always makes progress.
        if selected == nil {
            if let start = checkingClockStart { consider(start + configuration.checkingTimeout) }
            if restartPath != nil, let last = lastConsentAt { consider(last + configuration.consentTimeout) }
        } else if isLite {
            if let last = lastValidRequestAt { consider(last + configuration.consentTimeout) }
        } else {
            consider(nextConsentAt)
            if let since = consentPendingSince, state == .connected || state == .completed {
                consider(since + configuration.disconnectedTimeout)
            }
            if let last = lastConsentAt { consider(last + configuration.consentTimeout) }
            if let quiet = lastReceivedAt {
                if state == .connected || state == .completed { consider(quiet + configuration.receivingTimeout) }
                // A probe already due waits for the next send slot (`hasPendingRequest`): its
                // own deadline, past by then, would wake the driver for nothing until the slot —
                // a busy spin on a thread, a livelock on a simulated clock.
                if !consentDue { consider(nextProbe(quietSince: quiet)) }
            }
        }
        return earliest
    }

    /// Authenticated traffic from `remote` the driver saw (media that passed SRTP, DTLS): it
    /// keeps the selected pair `connected` as STUN does. One comparison per packet.
    ///
    /// Lite: media from another address that has passed a check moves the path there once the
    /// selected one has been quiet `rebindOnMediaAfter`, or after `rebindOnMediaPackets` such
    /// packets in a row with nothing from the selected one (a NAT rebinding whose first check
    /// came while the old port was still heard: the peer took our answer as consent and checks
    /// again only seconds later, while its media already comes from the new port).
    public func noteReceived(from remote: SocketAddress, now: ContinuousClock.Instant) {
        guard let key = selected else { return }
        guard key.remote == remote else {
            if isLite { rebindOnMedia(from: remote, now: now) }
            return
        }
        heardOnSelected(now)
    }

    private func rebindOnMedia(from remote: SocketAddress, now: ContinuousClock.Instant) {
        guard let pair = pairs.first(where: { $0.key.remote == remote && $0.state == .succeeded }) else { return }
        // A packet from the selected remote since the run began (it is still alive) starts it over.
        var run = (remote: remote, since: now, packets: 1)
        if let last = mediaElsewhere, last.remote == remote, lastReceivedAt.map({ $0 <= last.since }) ?? true {
            run = (remote, last.since, last.packets + 1)
        }
        mediaElsewhere = run
        let quiet = run.packets >= configuration.rebindOnMediaPackets ? .zero : configuration.rebindOnMediaAfter
        rebindIfQuiet(to: pair.key, after: quiet, now: now)
    }

    /// Lite: the peer's path moved (a NAT rebound its port) — to `key`, once the selected
    /// remote has been quiet `quiet` (after a check `rebindAfter`, after media `rebindOnMediaAfter`
    /// or none).
    func rebindIfQuiet(to key: PairKey, after quiet: Duration, now: ContinuousClock.Instant) {
        guard lastReceivedAt.map({ now >= $0 + quiet }) ?? true else { return }
        statsCounters.rebinds += 1
        select(key, now: now)
    }

    /// Stops everything; no more transmits, events after `stateChanged(.closed)`, or deadlines.
    public func close() {
        guard state != .closed else { return }
        transactions.removeAll()
        triggeredQueue.removeAll()
        gatherQueue.removeAll()
        transmits.removeAll()
        nextConsentAt = nil
        consentDue = false
        setState(.closed)
    }

    public var stats: ICEStats {
        var s = statsCounters
        s.pairs = pairs.map { pair in
            ICEPairStats(local: pair.key.local, remote: pair.key.remote, state: pair.state,
                         nominated: pair.nominated, selected: pair.key == selected, priority: pair.priority,
                         currentRTT: pair.rtt, requestsSent: pair.requestsSent,
                         responsesReceived: pair.responsesReceived, requestsReceived: pair.requestsReceived,
                         responsesSent: pair.responsesSent)
        }
        s.selectedPairRTT = selectedPairRTT
        return s
    }

    /// The selected pair's round-trip time from its checks (nil before one was answered).
    public var selectedPairRTT: Duration? { selected.flatMap { key in pairs.first { $0.key == key }?.rtt } }

    // MARK: - internals shared by the other files

    func setState(_ new: ICEConnectionState) {
        guard new != state else { return }
        state = new
        events.append(.stateChanged(new))
    }

    func switchRole(to new: ICERole) {
        guard new != role else { return }
        role = new
        events.append(.roleChanged(new))
        for i in pairs.indices { pairs[i].updatePriority(role: role) }
        sortPairs()
        if role == .controlled {
            nominationWanted = false
            nominationInFlight = false
        } else if selected == nil, !isLite {
            nominationWanted = bestValidPair() != nil
        }
    }

    /// Foundation: equal for candidates of the same type, base IP and STUN server (RFC 8445 §5.1.1.3).
    func foundation(type: CandidateType, base: SocketAddress, server: SocketAddress?) -> String {
        let text = "\(type.rawValue)|\(base.host)|\(server?.description ?? "")|udp"
        return String(fnv1a(text) % 1_000_000_000)
    }

    private func fnv1a(_ text: String) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return hash
    }

    func base(for address: SocketAddress) -> Base? {
        bases.first { $0.address == address }
    }

    func pairIndex(_ key: PairKey) -> Int? {
        pairs.firstIndex { $0.key == key }
    }

    /// Forms the pair (base, remote) if the families match and it is new. Returns its key.
    @discardableResult
    func addPair(base: Base, remote: Remote) -> PairKey? {
        guard base.address.isIPv4 == remote.address.isIPv4 else { return nil }
        let key = PairKey(local: base.address, remote: remote.address)
        if pairIndex(key) != nil { return key }
        var pair = CandidatePair(key: key, localPriority: base.candidate.priority, remotePriority: remote.candidate.priority,
                                 foundation: base.candidate.foundation + ":" + remote.candidate.foundation)
        pair.updatePriority(role: role)
        // The first pair of a foundation waits; others stay frozen until it succeeds (§6.1.2.6).
        let foundationBusy = pairs.contains {
            $0.foundation == pair.foundation && ($0.state == .waiting || $0.state == .inProgress)
        }
        pair.state = foundationBusy ? .frozen : .waiting
        pairs.append(pair)
        sortPairs()
        if pairs.count > configuration.maxPairs {
            // Drop the lowest-priority pair nobody is using.
            if let victim = pairs.lastIndex(where: { ($0.state == .frozen || $0.state == .waiting) && $0.key != key }) {
                let removed = pairs.remove(at: victim).key
                triggeredQueue.removeAll { $0 == removed }
            }
        }
        return key
    }

    func sortPairs() {
        pairs.sort { $0.priority > $1.priority }
    }

    /// The highest-priority succeeded pair, ranked by the local candidate the peer saw.
    func bestValidPair() -> PairKey? {
        pairs.filter { $0.state == .succeeded }
            .max { $0.validPriority(role: role) < $1.validPriority(role: role) }?.key
    }

    func emit(_ transmit: ICETransmit) {
        transmits.append(transmit)
    }
}
