// Which connections the server holds, and which one gives way when it is full (sans-I/O: the
// server reports what each connection is doing, with the time; this decides).
//
// Plain connections share `maxConnections` (and a share per address); upgraded ones (WebSocket)
// have their own budget. When the plain pool is full, the connection that has waited longest on
// its client without presenting credentials — an idle keep-alive, or a slow-loris still sending
// its request — is closed for the newcomer, so slow clients cannot hold the server; when every
// connection is busy or credentialed, a small reserve admits newcomers "on probation": only a
// request with valid credentials is served on it.

struct ConnectionBudget: Sendable {
    typealias ID = Int
    typealias Instant = ContinuousClock.Instant

    enum Pool: Sendable, Equatable { case general, reserve, upgraded }

    enum Admission: Sendable, Equatable {
        /// Serve connection `id`; on the reserve it must present credentials with every request.
        /// `evicting`: close that connection first (its slot is the newcomer's).
        case admitted(ID, pool: Pool, evicting: ID?)
        case refused(String)
    }

    private struct Entry {
        var ip: String
        var pool: Pool
        /// The current request carried valid credentials: not evicted while it lasts.
        var credentialed = false
        /// Since when the connection waits on its client (its request or its reading of our
        /// response); nil while the server works on a request.
        var waitingSince: Instant?
    }

    let limits: HTTPLimits
    /// False when the server has no way to check credentials: then there is no reserve.
    var reserveEnabled: Bool
    private var entries: [ID: Entry] = [:]
    private var nextID = 0

    init(limits: HTTPLimits, reserveEnabled: Bool = false) {
        self.limits = limits
        self.reserveEnabled = reserveEnabled
    }

    /// Connections held now, in `pool` (all pools when nil).
    func count(_ pool: Pool? = nil) -> Int {
        entries.values.reduce(0) { $0 + (pool == nil || $1.pool == pool ? 1 : 0) }
    }

    func pool(of id: ID) -> Pool? { entries[id]?.pool }

    /// A new connection from `ip`, accepted at `now`.
    mutating func admit(ip: String, now: Instant) -> Admission {
        let plainFromIP = entries.values.filter { $0.ip == ip && $0.pool != .upgraded }.count
        if plainFromIP >= limits.maxConnectionsPerAddress {
            // An address at its share only ever displaces its own connections.
            guard let victim = longestWaiting(from: ip) else { return .refused("too many connections from \(ip)") }
            return replace(victim, ip: ip, now: now)
        }
        if count(.general) < limits.maxConnections { return add(ip: ip, pool: .general, now: now) }
        if let victim = longestWaiting(from: nil) { return replace(victim, ip: ip, now: now) }
        if reserveEnabled && count(.reserve) < limits.reservedConnections { return add(ip: ip, pool: .reserve, now: now) }
        return .refused("too many connections")
    }

    /// The connection now waits on its client (for a request, or to take our response) since
    /// `since`; nil: the server works on its request. False when it was evicted meanwhile.
    @discardableResult
    mutating func waiting(_ id: ID, since: Instant?) -> Bool {
        guard entries[id] != nil else { return false }
        entries[id]?.waitingSince = since
        return true
    }

    /// Whether the current request carries valid credentials (false again for the next one).
    /// Returns false when the connection may not serve it: evicted, or on the reserve without
    /// credentials.
    mutating func credentials(_ id: ID, valid: Bool) -> Bool {
        guard let entry = entries[id] else { return false }
        entries[id]?.credentialed = valid
        return valid || entry.pool != .reserve
    }

    /// Moves the connection to the upgraded budget; the refusal when that is full.
    mutating func upgrade(_ id: ID) -> String? {
        guard let entry = entries[id] else { return "connection closed" }
        let upgraded = entries.values.filter { $0.pool == .upgraded }
        if upgraded.count >= limits.maxUpgradedConnections { return "too many upgraded (WebSocket) connections" }
        if upgraded.filter({ $0.ip == entry.ip }).count >= limits.maxUpgradedPerAddress {
            return "too many upgraded (WebSocket) connections from \(entry.ip)"
        }
        entries[id] = Entry(ip: entry.ip, pool: .upgraded, credentialed: false, waitingSince: nil)
        return nil
    }

    /// The connection ended (idempotent: an evicted one is already gone).
    mutating func release(_ id: ID) {
        entries[id] = nil
    }

    private mutating func add(ip: String, pool: Pool, now: Instant) -> Admission {
        nextID += 1
        entries[nextID] = Entry(ip: ip, pool: pool, waitingSince: now)
        return .admitted(nextID, pool: pool, evicting: nil)
    }

    /// The newcomer takes the victim's slot (and pool: a reserve slot stays on probation).
    private mutating func replace(_ victim: ID, ip: String, now: Instant) -> Admission {
        let pool = entries.removeValue(forKey: victim)?.pool ?? .general
        nextID += 1
        entries[nextID] = Entry(ip: ip, pool: pool, waitingSince: now)
        return .admitted(nextID, pool: pool, evicting: victim)
    }

    /// The plain connection (of `ip`, or of anyone) that has waited longest on its client
    /// without credentials; ties go to the older id.
    private func longestWaiting(from ip: String?) -> ID? {
        var best: (id: ID, since: Instant)?
        for (id, entry) in entries where entry.pool != .upgraded && !entry.credentialed && (ip == nil || entry.ip == ip) {
            guard let since = entry.waitingSince else { continue }
            if let current = best, current.since < since || (current.since == since && current.id < id) { continue }
            best = (id, since)
        }
        return best?.id
    }
}
