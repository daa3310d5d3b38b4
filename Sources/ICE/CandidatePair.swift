import STUN

/// A pair is identified by the base (socket) it sends from and the remote address: server
/// reflexive local candidates are replaced by their base (RFC 8445 §6.1.2.4), so this is unique.
struct PairKey: Hashable, Sendable {
    var local: SocketAddress
    var remote: SocketAddress
}

struct CandidatePair {
    var key: PairKey
    var localPriority: UInt32
    var remotePriority: UInt32
    /// Local foundation + remote foundation; pairs sharing it unfreeze together.
    var foundation: String
    var state: ICEPairState = .frozen
    var priority: UInt64 = 0
    /// Priority of the local candidate the peer saw (host, srflx or prflx) once the pair is valid.
    var validLocalPriority: UInt32?
    var nominated = false
    /// Controlled side: the peer's USE-CANDIDATE arrived before our own check succeeded.
    var nominateOnSuccess = false
    /// The peer checks this pair with our credentials from before the last restart: ours on it
    /// carry them too (`ICEAgent.previousLocalCredentials`).
    var previousCredentials = false
    var rtt: Duration?
    var requestsSent = 0
    var responsesReceived = 0
    var requestsReceived = 0
    var responsesSent = 0

    /// RFC 8445 §6.1.2.3: 2^32*MIN(G,D) + 2*MAX(G,D) + (G>D?1:0), G the controlling side's.
    static func priority(local: UInt32, remote: UInt32, role: ICERole) -> UInt64 {
        let g = UInt64(role == .controlling ? local : remote)
        let d = UInt64(role == .controlling ? remote : local)
        return (min(g, d) << 32) + 2 * max(g, d) + (g > d ? 1 : 0)
    }

    mutating func updatePriority(role: ICERole) {
        priority = Self.priority(local: localPriority, remote: remotePriority, role: role)
    }

    /// Priority as a valid pair: with the local candidate the peer actually saw.
    func validPriority(role: ICERole) -> UInt64 {
        Self.priority(local: validLocalPriority ?? localPriority, remote: remotePriority, role: role)
    }
}

/// What an outstanding STUN transaction is for.
enum TransactionKind {
    case check(PairKey, useCandidate: Bool, role: ICERole)
    case consent(PairKey)
    case gather(server: SocketAddress, base: SocketAddress)
}

struct Transaction {
    var id: [UInt8]
    /// Creation order, so ties between equal deadlines resolve the same way every run.
    var sequence: Int
    var kind: TransactionKind
    var bytes: [UInt8]
    var local: SocketAddress
    var remote: SocketAddress
    var tries = 1
    var maxTries: Int
    /// A connectivity check fails at this time whatever its tries (nil: after `maxTries`).
    var giveUpAt: ContinuousClock.Instant?
    var rto: Duration
    var lastSent: ContinuousClock.Instant
    /// When the next retransmission is due, or (after the last try) when the transaction fails.
    var deadline: ContinuousClock.Instant
    /// Waiting for the pacer to retransmit.
    var retransmitDue = false
    /// Superseded by a triggered check: no retransmits and no failure, but responses still count.
    var cancelled = false

    /// Sent (again) at `now`: the next try is due `rto` later, or at `giveUpAt` if that is sooner.
    mutating func sent(at now: ContinuousClock.Instant, rto: Duration) {
        self.rto = rto
        lastSent = now
        deadline = min(now + rto, giveUpAt ?? now + rto)
    }
}
