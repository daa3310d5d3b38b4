import STUN

public enum MuxRouterLimits {
    /// How long a holder's last proof keeps its address from another connection's claim.
    public static let holdTime: Duration = .seconds(10)
    /// Claimants kept per address besides the holder. Beyond it a newcomer's claim is not
    /// kept: first come keeps its place, so sessions an attacker opens later cannot push out a
    /// peer that was there first (they can only be refused its traffic).
    public static let maxContenders = 8
}

/// What a shared socket's router needs of a connection: its local ICE ufrag, and a way to hand
/// it a datagram and hear what it made of it.
public protocol MuxRoutable: AnyObject {
    var ufrag: String { get }
    func deliver(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, now: ContinuousClock.Instant) -> Delivery
}

/// Which connection on a shared socket a datagram belongs to (sans-I/O: datagrams, claims and
/// the time in; deliveries out).
///
/// A STUN request goes to the connection whose local ufrag its USERNAME names; it teaches the
/// mux nothing by itself. Only when that connection's ICE has verified the request's
/// MESSAGE-INTEGRITY does the connection claim the sender's address (`claim`), and only then
/// do that address's DTLS and media reach it: a forged check cannot re-point anyone's media,
/// and nobody's DTLS answers an address no check proved.
///
/// A connection that claims an address another one holds takes it over unless the holder has
/// proved itself there within `holdTime` (authenticated media, a completed handshake, or its
/// own authenticated check once connected). Then the newcomer waits as a contender: it is
/// offered what the holder refuses (media that fails the holder's SRTP authentication, a new
/// DTLS handshake), and takes over when it proves itself. So an attacker who opens a session of
/// its own and spoofs a victim's address with valid checks for it gets nothing the victim sends,
/// while a client that starts a new session from the port of an ending one still reaches it.
public final class MuxRouter<Endpoint: MuxRoutable> {
    // A class: a connection handed a datagram by `route` claims its address (`claim`) before
    // `route` returns, which a struct's exclusive access would not allow.
    private var byUfrag: [String: Endpoint] = [:]
    private var byAddress: [SocketAddress: AddressRoute] = [:]
    /// Datagrams from an address no verified check taught us, or that every claimant refused.
    public private(set) var unroutedDatagrams = 0
    /// Addresses handed from one connection to another by a claim or a contender's proof.
    public private(set) var addressTakeovers = 0

    struct Claimant {
        var endpoint: Endpoint
        var provenAt: ContinuousClock.Instant?
    }

    /// Whether `a` last proved itself before `b` (never counts as earliest): a departing holder
    /// hands its address to the contender that proved itself last.
    static func provedBefore(_ a: Claimant, _ b: Claimant) -> Bool {
        guard let y = b.provenAt else { return false }
        guard let x = a.provenAt else { return true }
        return x < y
    }

    /// Who an address's traffic goes to: a class, so the per-packet proof is one store.
    final class AddressRoute {
        var owner: Endpoint
        var provenAt: ContinuousClock.Instant?
        var contenders: [Claimant] = []
        init(owner: Endpoint) { self.owner = owner }

        /// The holder steps back for `contenders[index]`, keeping its own proof time.
        func promote(_ index: Int, provenAt time: ContinuousClock.Instant?) {
            let old = Claimant(endpoint: owner, provenAt: provenAt)
            owner = contenders[index].endpoint
            provenAt = time
            contenders[index] = old
        }

        func add(_ claimant: Claimant) {
            guard contenders.count < MuxRouterLimits.maxContenders else { return }
            contenders.append(claimant)
        }
    }

    public init() {}

    /// Routes STUN requests naming `endpoint.ufrag` to it (a later one with that ufrag replaces it).
    public func add(_ endpoint: Endpoint) {
        byUfrag[endpoint.ufrag] = endpoint
    }

    public func remove(_ endpoint: Endpoint) {
        if byUfrag[endpoint.ufrag] === endpoint { byUfrag[endpoint.ufrag] = nil }
        for (address, route) in byAddress {
            route.contenders.removeAll { $0.endpoint === endpoint }
            guard route.owner === endpoint else { continue }
            if let next = route.contenders.indices.max(by: { Self.provedBefore(route.contenders[$0], route.contenders[$1]) }) {
                route.promote(next, provenAt: route.contenders[next].provenAt)
                route.contenders.remove(at: next)
            } else {
                byAddress[address] = nil
            }
        }
    }

    /// `endpoint`'s ICE verified a check from `address` (see the type's comment).
    public func claim(_ address: SocketAddress, for endpoint: Endpoint, now: ContinuousClock.Instant) {
        guard let route = byAddress[address] else {
            byAddress[address] = AddressRoute(owner: endpoint)
            return
        }
        guard route.owner !== endpoint else { return }
        if let proven = route.provenAt, proven.duration(to: now) < MuxRouterLimits.holdTime {
            if !route.contenders.contains(where: { $0.endpoint === endpoint }) { route.add(Claimant(endpoint: endpoint)) }
            return
        }
        if let earlier = route.contenders.firstIndex(where: { $0.endpoint === endpoint }) {
            route.promote(earlier, provenAt: nil)
        } else if route.contenders.count < MuxRouterLimits.maxContenders {
            route.contenders.append(Claimant(endpoint: endpoint))
            route.promote(route.contenders.count - 1, provenAt: nil)
        } else {
            return   // no room: the claimants already here keep it
        }
        addressTakeovers += 1
    }

    public func route(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, now: ContinuousClock.Instant) {
        // STUN (first byte 0-3) is the only kind parsed here; media and DTLS go by address.
        if bytes.count >= 20, bytes[0] < 4, let endpoint = requestOwner(bytes) {
            let delivery = endpoint.deliver(bytes, from: from, now: now)
            if delivery == .authenticated, let route = byAddress[from] {
                if route.owner === endpoint {
                    route.provenAt = now
                } else if let i = route.contenders.firstIndex(where: { $0.endpoint === endpoint }) {
                    route.contenders[i].provenAt = now
                }
            }
            return
        }
        guard let route = byAddress[from] else {
            unroutedDatagrams += 1
            return
        }
        switch route.owner.deliver(bytes, from: from, now: now) {
        case .authenticated: route.provenAt = now
        case .accepted: break
        case .refused:
            for i in route.contenders.indices {
                switch route.contenders[i].endpoint.deliver(bytes, from: from, now: now) {
                case .refused: continue
                case .accepted: return
                case .authenticated:
                    route.promote(i, provenAt: now)
                    addressTakeovers += 1
                    return
                }
            }
            unroutedDatagrams += 1
        }
    }

    /// The connection a STUN request with USERNAME "ourUfrag:theirs" is for.
    private func requestOwner(_ bytes: UnsafeRawBufferPointer) -> Endpoint? {
        guard let message = try? STUNMessage(parsing: Array(bytes)), let username = message.username,
              let localUfrag = username.split(separator: ":", maxSplits: 1).first else { return nil }
        return byUfrag[String(localUfrag)]
    }

    /// Who gets `address`'s DTLS and media first, and who waits (tests, diagnostics).
    public func routing(of address: SocketAddress) -> (owner: String, contenders: [String])? {
        byAddress[address].map { ($0.owner.ufrag, $0.contenders.map(\.endpoint.ufrag)) }
    }

}

