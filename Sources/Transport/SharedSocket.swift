import STUN

/// One socket many connections share (a server such as the echo endpoint or the relay), each
/// through a `MuxEndpoint` found by its local ICE ufrag; which connection a datagram belongs to
/// is `MuxRouter`'s decision. `UDPMux` is a real UDP socket, `VirtualMux` an address on a
/// `VirtualNetwork`: the routing is the same code for both.
public protocol SharedSocket: AnyObject, Sendable {
    var loop: EventLoop { get }
    /// The bound address: what endpoints advertise unless told otherwise.
    var localAddress: SocketAddress { get }
    /// Loop work only.
    var router: MuxRouter<MuxEndpoint> { get }
    /// The real socket under it, for batched sends (`UDPSendBatch`); nil for a virtual one.
    var batchSocket: UDPSocket? { get }
    /// Sends one datagram from the shared address. Loop work only.
    func send(_ bytes: UnsafeRawBufferPointer, to remote: SocketAddress) -> Bool
    func close()
}

extension SharedSocket {
    /// An endpoint for the connection whose local ICE ufrag is `ufrag`. Loop work only.
    public func endpoint(ufrag: String, advertised: SocketAddress? = nil) -> MuxEndpoint {
        loop.preconditionInLoop()
        let endpoint = MuxEndpoint(mux: self, ufrag: ufrag, advertised: advertised ?? localAddress)
        router.add(endpoint)
        return endpoint
    }

    /// Datagrams from an address no verified check taught us, or that every claimant refused.
    public var unroutedDatagrams: Int { router.unroutedDatagrams }
    /// Addresses handed from one connection to another by a claim or a contender's proof.
    public var addressTakeovers: Int { router.addressTakeovers }

    /// Who gets `address`'s DTLS and media first, and who waits (tests, diagnostics).
    public func routing(of address: SocketAddress) -> (owner: String, contenders: [String])? {
        router.routing(of: address)
    }

    /// Hands a datagram that arrived on the shared address to its connection. Loop work only.
    func receive(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, now: ContinuousClock.Instant) {
        loop.preconditionInLoop()
        router.route(bytes, from: from, now: now)
    }
}

/// A connection's view of a shared socket.
public final class MuxEndpoint: PacketIO, MuxRoutable {
    weak var mux: (any SharedSocket)?
    public let ufrag: String
    private let advertised: SocketAddress
    /// Held strongly (a weak load per forwarded packet showed in profiles); a closed socket
    /// sends nothing.
    public let batchSocket: UDPSocket?
    public var onReceive: ((UnsafeRawBufferPointer, SocketAddress, SocketAddress) -> Delivery)?
    /// The time of the datagram being delivered, for a claim made while handling it.
    private var deliveryTime: ContinuousClock.Instant?

    init(mux: any SharedSocket, ufrag: String, advertised: SocketAddress) {
        self.mux = mux
        self.ufrag = ufrag
        self.advertised = advertised
        batchSocket = mux.batchSocket
    }

    public var localAddresses: [SocketAddress] { [advertised] }

    public func deliver(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, now: ContinuousClock.Instant) -> Delivery {
        deliveryTime = now
        defer { deliveryTime = nil }
        return onReceive?(bytes, from, advertised) ?? .refused
    }

    public func addressVerified(_ remote: SocketAddress) {
        guard let mux else { return }
        mux.loop.preconditionInLoop()
        mux.router.claim(remote, for: self, now: deliveryTime ?? mux.loop.now)
    }

    public func send(_ bytes: UnsafeRawBufferPointer, from local: SocketAddress, to remote: SocketAddress) -> Bool {
        mux?.send(bytes, to: remote) ?? false
    }

    public func close() {
        mux?.loop.preconditionInLoop()
        mux?.router.remove(self)
        onReceive = nil
    }
}
