import Glibc
import STUN

/// One UDP socket shared by many connections (a server such as the echo endpoint or the relay).
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
public final class UDPMux: @unchecked Sendable {
    // @unchecked: used only on `loop`'s thread (connections are created there too).
    public let loop: EventLoop
    public let socket: UDPSocket
    private var byUfrag: [String: MuxEndpoint] = [:]
    private var byAddress: [SocketAddress: AddressRoute] = [:]
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)
    /// Datagrams from an address no verified check taught us, or that every claimant refused.
    public private(set) var unroutedDatagrams = 0
    /// Addresses handed from one connection to another by a claim or a contender's proof.
    public private(set) var addressTakeovers = 0
    /// How long a holder's last proof keeps its address from another connection's claim.
    public static let holdTime: Duration = .seconds(10)
    static let maxContenders = 2

    /// Who an address's traffic goes to: a class, so the per-packet proof is one store.
    final class AddressRoute {
        var owner: MuxEndpoint
        var provenAt: ContinuousClock.Instant?
        var contenders: [MuxEndpoint] = []
        init(owner: MuxEndpoint) { self.owner = owner }
    }

    /// Loop thread only.
    public init(loop: EventLoop, bind address: SocketAddress) throws(TransportError) {
        self.loop = loop
        socket = try UDPSocket(bind: address, receiveBuffer: 16 << 20, sendBuffer: 16 << 20)
        loop.register(fd: socket.fd) { [weak self] in
            guard let self else { return }
            let now = ContinuousClock.now
            drain(self.socket, buffer: self.buffer) { bytes, from in self.route(bytes, from: from, now: now) }
        }
    }

    /// An endpoint for the connection whose local ICE ufrag is `ufrag`. Loop thread only.
    public func endpoint(ufrag: String, advertised: SocketAddress? = nil) -> MuxEndpoint {
        let endpoint = MuxEndpoint(mux: self, ufrag: ufrag, advertised: advertised ?? socket.localAddress)
        byUfrag[ufrag] = endpoint
        return endpoint
    }

    func remove(_ endpoint: MuxEndpoint) {
        if byUfrag[endpoint.ufrag] === endpoint { byUfrag[endpoint.ufrag] = nil }
        for (address, route) in byAddress {
            route.contenders.removeAll { $0 === endpoint }
            guard route.owner === endpoint else { continue }
            if route.contenders.isEmpty {
                byAddress[address] = nil
            } else {
                route.owner = route.contenders.removeFirst()
                route.provenAt = nil
            }
        }
    }

    /// `endpoint`'s ICE verified a check from `address` (see the type's comment).
    func claim(_ address: SocketAddress, for endpoint: MuxEndpoint, now: ContinuousClock.Instant) {
        guard let route = byAddress[address] else {
            byAddress[address] = AddressRoute(owner: endpoint)
            return
        }
        guard route.owner !== endpoint else { return }
        route.contenders.removeAll { $0 === endpoint }
        if let proven = route.provenAt, proven.duration(to: now) < Self.holdTime {
            route.contenders.insert(endpoint, at: 0)
        } else {
            route.contenders.insert(route.owner, at: 0)
            route.owner = endpoint
            route.provenAt = nil
            addressTakeovers += 1
        }
        if route.contenders.count > Self.maxContenders { route.contenders.removeLast() }
    }

    func route(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, now: ContinuousClock.Instant) {
        // STUN (first byte 0-3) is the only kind parsed here; media and DTLS go by address.
        if bytes.count >= 20, bytes[0] < 4, let endpoint = requestOwner(bytes) {
            let delivery = endpoint.deliver(bytes, from: from, now: now)
            if delivery == .authenticated, let route = byAddress[from], route.owner === endpoint { route.provenAt = now }
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
            for (i, contender) in route.contenders.enumerated() {
                switch contender.deliver(bytes, from: from, now: now) {
                case .refused: continue
                case .accepted: return
                case .authenticated:
                    route.contenders[i] = route.owner
                    route.owner = contender
                    route.provenAt = now
                    addressTakeovers += 1
                    return
                }
            }
            unroutedDatagrams += 1
        }
    }

    /// The connection a STUN request with USERNAME "ourUfrag:theirs" is for.
    private func requestOwner(_ bytes: UnsafeRawBufferPointer) -> MuxEndpoint? {
        guard let message = try? STUNMessage(parsing: Array(bytes)), let username = message.username,
              let localUfrag = username.split(separator: ":", maxSplits: 1).first else { return nil }
        return byUfrag[String(localUfrag)]
    }

    /// Who gets `address`'s DTLS and media first, and who waits (tests, diagnostics).
    public func routing(of address: SocketAddress) -> (owner: String, contenders: [String])? {
        byAddress[address].map { ($0.owner.ufrag, $0.contenders.map(\.ufrag)) }
    }

    public func close() {
        loop.unregister(fd: socket.fd)
        socket.close()
        byUfrag.removeAll()
        byAddress.removeAll()
    }

    deinit { buffer.deallocate() }
}

/// A connection's view of a shared mux socket.
public final class MuxEndpoint: PacketIO {
    weak var mux: UDPMux?
    private let socket: UDPSocket
    let ufrag: String
    private let advertised: SocketAddress
    public var onReceive: ((UnsafeRawBufferPointer, SocketAddress, SocketAddress) -> Delivery)?
    /// The time of the datagram being delivered, for a claim made while handling it.
    private var deliveryTime: ContinuousClock.Instant?

    init(mux: UDPMux, ufrag: String, advertised: SocketAddress) {
        self.mux = mux
        self.socket = mux.socket
        self.ufrag = ufrag
        self.advertised = advertised
    }

    public var localAddresses: [SocketAddress] { [advertised] }
    /// Held strongly (a weak load per forwarded packet showed in profiles); a closed socket
    /// sends nothing.
    public var batchSocket: UDPSocket? { socket }

    func deliver(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, now: ContinuousClock.Instant) -> Delivery {
        deliveryTime = now
        defer { deliveryTime = nil }
        return onReceive?(bytes, from, advertised) ?? .refused
    }

    public func addressVerified(_ remote: SocketAddress) {
        mux?.claim(remote, for: self, now: deliveryTime ?? .now)
    }

    public func send(_ bytes: UnsafeRawBufferPointer, from local: SocketAddress, to remote: SocketAddress) -> Bool {
        mux?.socket.send(bytes, to: remote) ?? false
    }

    public func close() {
        mux?.remove(self)
        onReceive = nil
    }
}
