import Glibc
import STUN

/// One UDP socket shared by many connections (a server such as the echo endpoint or the relay).
/// Which connection a datagram belongs to is `MuxRouter`'s decision (see there); this is its
/// socket and loop.
public final class UDPMux: @unchecked Sendable {
    // @unchecked: used only on `loop`'s thread (connections are created there too).
    public let loop: EventLoop
    public let socket: UDPSocket
    private var router = MuxRouter<MuxEndpoint>()
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)
    /// Datagrams from an address no verified check taught us, or that every claimant refused.
    public var unroutedDatagrams: Int { router.unroutedDatagrams }
    /// Addresses handed from one connection to another by a claim or a contender's proof.
    public var addressTakeovers: Int { router.addressTakeovers }

    /// Loop thread only.
    public init(loop: EventLoop, bind address: SocketAddress) throws(TransportError) {
        self.loop = loop
        socket = try UDPSocket(bind: address, receiveBuffer: 16 << 20, sendBuffer: 16 << 20)
        loop.register(fd: socket.fd) { [weak self] in
            guard let self else { return }
            let now = ContinuousClock.now
            drain(self.socket, buffer: self.buffer) { bytes, from in self.router.route(bytes, from: from, now: now) }
        }
    }

    /// An endpoint for the connection whose local ICE ufrag is `ufrag`. Loop thread only.
    public func endpoint(ufrag: String, advertised: SocketAddress? = nil) -> MuxEndpoint {
        let endpoint = MuxEndpoint(mux: self, ufrag: ufrag, advertised: advertised ?? socket.localAddress)
        router.add(endpoint)
        return endpoint
    }

    func remove(_ endpoint: MuxEndpoint) { router.remove(endpoint) }

    func claim(_ address: SocketAddress, for endpoint: MuxEndpoint, now: ContinuousClock.Instant) {
        router.claim(address, for: endpoint, now: now)
    }

    func route(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, now: ContinuousClock.Instant) {
        router.route(bytes, from: from, now: now)
    }

    /// Who gets `address`'s DTLS and media first, and who waits (tests, diagnostics).
    public func routing(of address: SocketAddress) -> (owner: String, contenders: [String])? {
        router.routing(of: address)
    }

    public func close() {
        loop.unregister(fd: socket.fd)
        socket.close()
        router = MuxRouter()
    }

    deinit { buffer.deallocate() }
}

/// A connection's view of a shared mux socket.
public final class MuxEndpoint: PacketIO, MuxRoutable {
    weak var mux: UDPMux?
    private let socket: UDPSocket
    public let ufrag: String
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

    public func deliver(_ bytes: UnsafeRawBufferPointer, from: SocketAddress, now: ContinuousClock.Instant) -> Delivery {
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
