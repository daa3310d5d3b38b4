import SeededRandom
import STUN

/// Datagrams between attachments in process, on one event loop (pion's vnet is the model):
/// `VirtualEndpoint`s (a connection's sockets, a `PacketIO`) and `VirtualMux`es (a server's shared
/// socket) at addresses of the test's choosing. Each attachment has an access link per direction
/// (`uplink` for what it sends, `downlink` for what it receives) with loss, delay ± jitter, rate
/// and a bounded FIFO, outages (`VirtualLink.blackHole(for:)`) and counters; an attachment's
/// address as others see it can change under it (`rebind`, a NAT rebinding).
///
/// Every hop is a loop timer at the instant the datagram leaves it, so on a simulated loop the
/// whole network is deterministic for a seed. Loop work only.
public final class VirtualNetwork: @unchecked Sendable {
    // @unchecked: everything is touched only by `loop`'s work (checked in debug builds); it is
    // Sendable so a `PacketIOFactory` closure can capture it.
    public let loop: EventLoop
    private var seeds: SplitMix64
    /// Who receives datagrams sent to an address, and at which of its local addresses.
    private var routes: [SocketAddress: Route] = [:]
    /// Each local address's face to the network (itself unless rebound).
    private var publicAddress: [SocketAddress: SocketAddress] = [:]
    private var nextPort: [SocketAddress.IP: UInt16] = [:]
    private var _unroutable = 0

    private struct Route {
        weak var attachment: (any VirtualAttachment)?
        var local: SocketAddress
    }

    /// `seed` decides every random choice (each link draws from its own stream).
    public init(loop: EventLoop, seed: UInt64 = 1) {
        self.loop = loop
        seeds = SplitMix64(seed: seed)
    }

    /// Datagrams sent to an address nobody holds (never bound, closed, or left by a rebinding).
    public var unroutable: Int {
        loop.preconditionInLoop()
        return _unroutable
    }

    /// A connection's sockets at `addresses` (port 0: a free port from 50000 up).
    public func endpoint(at addresses: [SocketAddress]) throws(TransportError) -> VirtualEndpoint {
        let endpoint = VirtualEndpoint(network: self, uplink: link(), downlink: link())
        endpoint.localAddresses = try bind(addresses, to: endpoint)
        return endpoint
    }

    public func endpoint(at address: SocketAddress) throws(TransportError) -> VirtualEndpoint {
        try endpoint(at: [address])
    }

    /// A shared socket at `address` whose connections `MuxRouter` tells apart, as on a `UDPMux`.
    public func mux(at address: SocketAddress) throws(TransportError) -> VirtualMux {
        let mux = VirtualMux(network: self, uplink: link(), downlink: link())
        mux.localAddress = try bind([address], to: mux).first ?? address
        return mux
    }

    /// From now on datagrams from `local` reach others from `newAddress`, and only datagrams to
    /// `newAddress` reach it: its NAT mapping changed. Datagrams to the old address are lost.
    public func rebind(_ local: SocketAddress, to newAddress: SocketAddress) throws(TransportError) {
        loop.preconditionInLoop()
        let old = publicAddress[local] ?? local
        guard let route = routes[old], let attachment = route.attachment, route.local == local else {
            throw TransportError("\(local) is not bound on this virtual network")
        }
        guard isFree(newAddress) else { throw TransportError("\(newAddress) is already taken") }
        routes[old] = nil
        routes[newAddress] = Route(attachment: attachment, local: local)
        publicAddress[local] = newAddress
    }

    /// The address others see for `local` (itself unless rebound).
    public func publicAddress(of local: SocketAddress) -> SocketAddress {
        loop.preconditionInLoop()
        return publicAddress[local] ?? local
    }

    private func link() -> VirtualLink {
        VirtualLink(loop: loop, seed: seeds.next())
    }

    private func isFree(_ address: SocketAddress) -> Bool {
        routes[address]?.attachment == nil
    }

    func bind(_ addresses: [SocketAddress], to attachment: any VirtualAttachment) throws(TransportError) -> [SocketAddress] {
        loop.preconditionInLoop()
        guard !addresses.isEmpty else { throw TransportError("a virtual endpoint needs at least one address") }
        var bound: [SocketAddress] = []
        for requested in addresses {
            var address = requested
            if address.port == 0 {
                var port = nextPort[address.ip] ?? 50000
                while !isFree(SocketAddress(ip: address.ip, port: port)) { port &+= 1 }
                nextPort[address.ip] = port &+ 1
                address = SocketAddress(ip: address.ip, port: port)
            }
            guard isFree(address), !bound.contains(address) else {
                for done in bound { routes[done] = nil }
                throw TransportError("cannot bind \(address): already taken on this virtual network")
            }
            routes[address] = Route(attachment: attachment, local: address)
            publicAddress[address] = nil
            bound.append(address)
        }
        return bound
    }

    func unbind(_ attachment: any VirtualAttachment) {
        loop.preconditionInLoop()
        for (address, route) in routes where route.attachment === attachment || route.attachment == nil {
            routes[address] = nil
            publicAddress[route.local] = nil
        }
    }

    /// One of `attachment`'s addresses only (a socket closed while the others stay).
    func unbind(_ local: SocketAddress, of attachment: any VirtualAttachment) {
        loop.preconditionInLoop()
        for (address, route) in routes where route.local == local && route.attachment === attachment {
            routes[address] = nil
            publicAddress[local] = nil
        }
    }

    /// The host lost `ip` (`VirtualHost.removeAddress`): nothing sent to it arrives, nothing
    /// sent from it leaves, whoever had sockets there.
    func removeAddress(_ ip: SocketAddress.IP) {
        loop.preconditionInLoop()
        for (address, route) in routes where route.local.ip == ip {
            routes[address] = nil
            publicAddress[route.local] = nil
        }
    }

    /// Whether `local` is still `attachment`'s on the network (its address was not removed).
    private func holds(_ local: SocketAddress, _ attachment: any VirtualAttachment) -> Bool {
        routes[publicAddress[local] ?? local]?.attachment === attachment
    }

    /// A datagram from `attachment`'s `local` address: through its uplink, then the receiver's
    /// downlink, each a loop timer at the instant it leaves (the first is skipped when the
    /// uplink leaves it at once).
    @discardableResult
    func send(_ bytes: UnsafeRawBufferPointer, from local: SocketAddress, of attachment: any VirtualAttachment,
              to remote: SocketAddress) -> Bool {
        loop.preconditionInLoop()
        // A socket whose address the host lost cannot send (the kernel refuses: EADDRNOTAVAIL).
        guard holds(local, attachment) else { return false }
        let now = loop.now
        guard let leaves = attachment.uplink.pass(size: bytes.count, at: now) else { return true }
        let datagram = Datagram(bytes: Array(bytes), from: publicAddress[local] ?? local, to: remote)
        if leaves == now {
            arrive(datagram)
        } else {
            loop.schedule(at: leaves) { [weak self] in self?.arrive(datagram) }
        }
        return true
    }

    private struct Datagram {
        var bytes: [UInt8]
        var from: SocketAddress
        var to: SocketAddress
    }

    private func arrive(_ datagram: Datagram) {
        guard let route = routes[datagram.to], let attachment = route.attachment else {
            _unroutable += 1
            return
        }
        guard let leaves = attachment.downlink.pass(size: datagram.bytes.count, at: loop.now) else { return }
        let local = route.local
        loop.schedule(at: leaves) { [weak attachment] in
            datagram.bytes.withUnsafeBytes { attachment?.receive($0, from: datagram.from, at: local) }
        }
    }
}

/// What sits at addresses on a `VirtualNetwork`.
protocol VirtualAttachment: AnyObject {
    var uplink: VirtualLink { get }
    var downlink: VirtualLink { get }
    func receive(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, at local: SocketAddress)
}

/// One connection's sockets on a `VirtualNetwork`: what `SocketSet` is on real interfaces.
public final class VirtualEndpoint: PacketIO, VirtualAttachment {
    public let network: VirtualNetwork
    public internal(set) var localAddresses: [SocketAddress] = []
    /// What this endpoint sends goes through `uplink`; what it receives, through `downlink`.
    public let uplink: VirtualLink
    public let downlink: VirtualLink
    public var onReceive: ((UnsafeRawBufferPointer, SocketAddress, SocketAddress) -> Delivery)?
    public private(set) var isClosed = false

    init(network: VirtualNetwork, uplink: VirtualLink, downlink: VirtualLink) {
        self.network = network
        self.uplink = uplink
        self.downlink = downlink
    }

    /// Sends from `local` (or the first address when `local` is not ours, as `SocketSet` does).
    public func send(_ bytes: UnsafeRawBufferPointer, from local: SocketAddress, to remote: SocketAddress) -> Bool {
        guard !isClosed, let base = localAddresses.contains(local) ? local : localAddresses.first else { return false }
        return network.send(bytes, from: base, of: self, to: remote)
    }

    public func addLocalAddress(_ ip: SocketAddress.IP) throws(TransportError) -> SocketAddress {
        guard !isClosed else { throw TransportError("the endpoint is closed") }
        let bound = try network.bind([SocketAddress(ip: ip, port: 0)], to: self)
        localAddresses += bound
        return bound.first ?? SocketAddress(ip: ip, port: 0)
    }

    public func removeLocalAddress(_ address: SocketAddress) {
        guard localAddresses.contains(address) else { return }
        network.unbind(address, of: self)
        localAddresses.removeAll { $0 == address }
    }

    public func close() {
        guard !isClosed else { return }
        isClosed = true
        network.unbind(self)
        onReceive = nil
    }

    func receive(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, at local: SocketAddress) {
        _ = onReceive?(bytes, from, local)
    }
}
