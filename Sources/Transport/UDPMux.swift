import Glibc
import STUN

/// One UDP socket shared by many connections (a server such as the echo endpoint or the relay).
/// A STUN request is routed by the local ufrag in its USERNAME and teaches the mux its address
/// (also an address another connection had: a client that starts a new session from the same
/// port while its old one is still ending must reach the new one); anything else goes to the
/// connection its address belongs to.
public final class UDPMux: @unchecked Sendable {
    // @unchecked: used only on `loop`'s thread (connections are created there too).
    public let loop: EventLoop
    public let socket: UDPSocket
    private var byUfrag: [String: MuxEndpoint] = [:]
    private var byAddress: [SocketAddress: MuxEndpoint] = [:]
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)
    public private(set) var unroutedDatagrams = 0

    /// Loop thread only.
    public init(loop: EventLoop, bind address: SocketAddress) throws(TransportError) {
        self.loop = loop
        socket = try UDPSocket(bind: address, receiveBuffer: 16 << 20, sendBuffer: 16 << 20)
        loop.register(fd: socket.fd) { [weak self] in
            guard let self else { return }
            drain(self.socket, buffer: self.buffer) { bytes, from in self.route(bytes, from: from) }
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
        for (address, owner) in byAddress where owner === endpoint { byAddress[address] = nil }
    }

    func route(_ bytes: UnsafeRawBufferPointer, from: SocketAddress) {
        // STUN (first byte 0-3) is the only kind parsed here; media and DTLS go by address.
        if bytes.count >= 20, bytes[0] < 4, let endpoint = requestOwner(bytes) {
            if byAddress[from] !== endpoint { byAddress[from] = endpoint }
            endpoint.deliver(bytes, from: from)
            return
        }
        if let endpoint = byAddress[from] {
            endpoint.deliver(bytes, from: from)
            return
        }
        unroutedDatagrams += 1
    }

    /// The connection a STUN request with USERNAME "ourUfrag:theirs" is for.
    private func requestOwner(_ bytes: UnsafeRawBufferPointer) -> MuxEndpoint? {
        guard let message = try? STUNMessage(parsing: Array(bytes)), let username = message.username,
              let localUfrag = username.split(separator: ":", maxSplits: 1).first else { return nil }
        return byUfrag[String(localUfrag)]
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
    public var onReceive: ((UnsafeRawBufferPointer, SocketAddress, SocketAddress) -> Void)?

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

    func deliver(_ bytes: UnsafeRawBufferPointer, from: SocketAddress) {
        onReceive?(bytes, from, advertised)
    }

    public func send(_ bytes: UnsafeRawBufferPointer, from local: SocketAddress, to remote: SocketAddress) -> Bool {
        mux?.socket.send(bytes, to: remote) ?? false
    }

    public func close() {
        mux?.remove(self)
        onReceive = nil
    }
}
