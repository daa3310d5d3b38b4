import Testing
@testable import HTTP

/// Which connection gives way when the server is full, on fake instants (no sockets, no clock).
/// (Results are taken out of `#expect`, which cannot call mutating methods.)
@Suite struct ConnectionBudgetTests {
    let t0 = ContinuousClock.now
    func at(_ seconds: Int) -> ContinuousClock.Instant { t0 + .seconds(seconds) }

    func id(_ admission: ConnectionBudget.Admission) throws -> Int {
        guard case .admitted(let id, _, _) = admission else { throw TestFailure("refused: \(admission)") }
        return id
    }

    @Test func theLongestWaitingConnectionMakesRoomForANewcomer() throws {
        var budget = ConnectionBudget(limits: HTTPLimits(maxConnections: 4, maxConnectionsPerAddress: 2))
        let a1 = try id(budget.admit(ip: "10.0.0.1", now: at(0)))
        let a2 = try id(budget.admit(ip: "10.0.0.1", now: at(1)))
        let b1 = try id(budget.admit(ip: "10.0.0.2", now: at(2)))
        _ = try id(budget.admit(ip: "10.0.0.2", now: at(3)))
        // a1 is being served (our work, not its client's): a2 has waited longest.
        budget.waiting(a1, since: nil)
        let c1 = budget.admit(ip: "10.0.0.3", now: at(4))
        #expect(c1 == .admitted(5, pool: .general, evicting: a2))
        let evictedLearns = budget.waiting(a2, since: at(5))
        #expect(!evictedLearns, "an evicted connection learns it is gone")
        // A slow-loris trickling bytes keeps its place in line: its wait began with its request.
        budget.waiting(a1, since: at(6))
        let d1 = budget.admit(ip: "10.0.0.4", now: at(7))
        #expect(d1 == .admitted(6, pool: .general, evicting: b1))
        #expect(budget.count(.general) == 4)
    }

    @Test func anAddressAtItsShareOnlyDisplacesItsOwnConnections() throws {
        var budget = ConnectionBudget(limits: HTTPLimits(maxConnections: 10, maxConnectionsPerAddress: 2))
        _ = try id(budget.admit(ip: "10.0.0.9", now: at(0)))   // older than the attacker's, untouched
        let x1 = try id(budget.admit(ip: "10.0.0.1", now: at(1)))
        let x2 = try id(budget.admit(ip: "10.0.0.1", now: at(2)))
        let x3 = budget.admit(ip: "10.0.0.1", now: at(3))
        #expect(x3 == .admitted(4, pool: .general, evicting: x1))
        // With both of its connections busy on our side, the address gets nothing more.
        budget.waiting(x2, since: nil)
        budget.waiting(4, since: nil)
        let x4 = budget.admit(ip: "10.0.0.1", now: at(4))
        #expect(x4 == .refused("too many connections from 10.0.0.1"))
        #expect(budget.count() == 3)
    }

    @Test func credentialedRequestsUseTheReserveWhenNoOneCanGiveWay() throws {
        var budget = ConnectionBudget(limits: HTTPLimits(maxConnections: 2, reservedConnections: 1), reserveEnabled: true)
        let a = try id(budget.admit(ip: "10.0.0.1", now: at(0)))
        let b = try id(budget.admit(ip: "10.0.0.2", now: at(1)))
        // One busy on our side, one whose request carries credentials: neither is closed.
        budget.waiting(a, since: nil)
        let bServed = budget.credentials(b, valid: true)
        #expect(bServed)
        let probation = budget.admit(ip: "10.0.0.3", now: at(2))
        #expect(probation == .admitted(3, pool: .reserve, evicting: nil))
        let withoutCredentials = budget.credentials(3, valid: false)
        #expect(!withoutCredentials, "on the reserve a request without credentials is refused")
        let withCredentials = budget.credentials(3, valid: true)
        #expect(withCredentials)
        let full = budget.admit(ip: "10.0.0.4", now: at(3))
        #expect(full == .refused("too many connections"))
        // A reserve slot given to a newcomer stays a reserve slot.
        _ = budget.credentials(3, valid: false)
        budget.waiting(3, since: at(4))
        let next = budget.admit(ip: "10.0.0.5", now: at(5))
        #expect(next == .admitted(4, pool: .reserve, evicting: 3))
        // Credentials last for one request: the next wait on that connection may be cut short.
        let bNext = budget.credentials(b, valid: false)
        #expect(bNext)
        let last = budget.admit(ip: "10.0.0.6", now: at(6))
        #expect(last == .admitted(5, pool: .general, evicting: b))
    }

    @Test func withoutACredentialCheckThereIsNoReserve() throws {
        var budget = ConnectionBudget(limits: HTTPLimits(maxConnections: 1, reservedConnections: 8))
        let a = try id(budget.admit(ip: "10.0.0.1", now: at(0)))
        budget.waiting(a, since: nil)
        let refused = budget.admit(ip: "10.0.0.2", now: at(1))
        #expect(refused == .refused("too many connections"))
    }

    @Test func upgradedConnectionsHaveABudgetOfTheirOwnAndAreNeverEvicted() throws {
        var budget = ConnectionBudget(limits: HTTPLimits(maxConnections: 2, maxUpgradedConnections: 3, maxUpgradedPerAddress: 2))
        let a = try id(budget.admit(ip: "10.0.0.1", now: at(0)))
        let b = try id(budget.admit(ip: "10.0.0.1", now: at(1)))
        let upgrades = [budget.upgrade(a), budget.upgrade(b)]
        #expect(upgrades == [nil, nil])
        #expect(budget.count(.general) == 0 && budget.count(.upgraded) == 2)
        // The plain pool is free again, and the upgraded ones are not candidates to give way.
        let c = try id(budget.admit(ip: "10.0.0.1", now: at(2)))
        let perAddress = budget.upgrade(c)
        #expect(perAddress == "too many upgraded (WebSocket) connections from 10.0.0.1")
        let d = try id(budget.admit(ip: "10.0.0.2", now: at(3)))
        let dUpgrade = budget.upgrade(d)
        #expect(dUpgrade == nil)
        let e = try id(budget.admit(ip: "10.0.0.3", now: at(4)))
        let total = budget.upgrade(e)
        #expect(total == "too many upgraded (WebSocket) connections")
        let f = budget.admit(ip: "10.0.0.4", now: at(5))
        #expect(f == .admitted(6, pool: .general, evicting: c))
        budget.release(a)
        budget.release(a)
        #expect(budget.count(.upgraded) == 2 && budget.pool(of: d) == .upgraded)
    }
}
