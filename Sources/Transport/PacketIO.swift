import Glibc
import STUN

/// What a connection made of a datagram it was given: a shared socket (`UDPMux`) offers what
/// one connection refuses to the others that verified the same address.
public enum Delivery: Sendable {
    /// Not this connection's: from an address its ICE has not verified, media that failed
    /// authentication, a DTLS handshake it is not part of.
    case refused
    /// Taken (STUN, a handshake record), but nothing proved the sender is its peer.
    case accepted
    /// Proved to come from its peer: media that authenticated, a DTLS handshake that completed,
    /// an authenticated ICE check on an established connection.
    case authenticated
}

/// The datagram path of one connection: the local bases it gathers candidates on, a way to
/// send from a base, and a callback for what arrives. Used only on the owning loop's thread.
public protocol PacketIO: AnyObject {
    var localAddresses: [SocketAddress] { get }
    /// Called on the loop thread; the buffer is valid only during the call.
    var onReceive: ((UnsafeRawBufferPointer, _ from: SocketAddress, _ local: SocketAddress) -> Delivery)? { get set }
    @discardableResult
    func send(_ bytes: UnsafeRawBufferPointer, from local: SocketAddress, to remote: SocketAddress) -> Bool
    func close()
    /// The one socket every send goes out on, when there is one (a shared server port): sends
    /// may then be batched (`UDPSendBatch`) with other connections' on the same socket.
    var batchSocket: UDPSocket? { get }
    /// ICE verified `remote` (an authenticated check came from it): a shared socket may now
    /// route that address's DTLS and media to this connection. Nothing else teaches it addresses.
    func addressVerified(_ remote: SocketAddress)
    /// Continual gathering: a socket on `ip`, an address an interface just got. Returns its
    /// address with the port it was given. Throws when it cannot be bound, or when this path's
    /// addresses are fixed (a shared server port).
    func addLocalAddress(_ ip: SocketAddress.IP) throws(TransportError) -> SocketAddress
    /// Closes the socket at `address`: its interface address went away.
    func removeLocalAddress(_ address: SocketAddress)
}

extension PacketIO {
    public var batchSocket: UDPSocket? { nil }
    public func addressVerified(_ remote: SocketAddress) {}
    public func addLocalAddress(_ ip: SocketAddress.IP) throws(TransportError) -> SocketAddress {
        throw TransportError("this datagram path has a fixed set of local addresses")
    }
    public func removeLocalAddress(_ address: SocketAddress) {}
}

extension PacketIO {
    @discardableResult
    public func send(_ bytes: [UInt8], from local: SocketAddress, to remote: SocketAddress) -> Bool {
        bytes.withUnsafeBytes { send($0, from: local, to: remote) }
    }
}

/// Reads every waiting datagram from a socket into one reused buffer. While each is delivered,
/// `loop.datagramArrival` holds when the kernel received it.
func drain(_ socket: UDPSocket, loop: EventLoop, buffer: UnsafeMutableRawBufferPointer,
           _ deliver: (UnsafeRawBufferPointer, SocketAddress) -> Void) {
    var clock = ArrivalClock()
    defer { loop.datagramArrival = nil }
    for _ in 0..<256 {   // bounded so one busy socket cannot starve the loop's timers
        guard let (n, from, stamp) = socket.receiveStamped(into: buffer) else { return }
        loop.datagramArrival = clock.instant(realtimeNs: stamp)
        deliver(UnsafeRawBufferPointer(rebasing: buffer[0..<n]), from)
    }
}

/// Turns the kernel's receive stamps (CLOCK_REALTIME) into the loop's clock: the monotonic now
/// minus how long ago the stamp was, both clocks read together. A busy loop reads a batch of
/// datagrams at once; stamped by when it read them they looked as if they had come back to back,
/// and a probe cluster behind a 500 kbit/s link measured 1.8 Mbit/s (libwebrtc also takes
/// arrival times from the kernel). Stamps from the future (the realtime clock stepped) or over
/// a second old are clamped.
struct ArrivalClock {
    typealias Reading = (monotonic: ContinuousClock.Instant, realtimeNs: Int64)
    private var pair: Reading?
    private let read: () -> Reading

    init(read: @escaping () -> Reading = ArrivalClock.readClocks) { self.read = read }

    /// The loop-clock instant of a kernel stamp (0: none, now).
    mutating func instant(realtimeNs stamp: Int64) -> ContinuousClock.Instant {
        // Read the clocks once per batch, again only for a stamp newer than the last reading.
        if pair == nil || stamp > pair!.realtimeNs { pair = read() }
        let (monotonic, realtime) = pair!
        guard stamp > 0 else { return monotonic }
        return monotonic - .nanoseconds(min(max(realtime - stamp, 0), 1_000_000_000))
    }

    static func readClocks() -> Reading {
        var ts = timespec()
        let monotonic = ContinuousClock.now
        clock_gettime(CLOCK_REALTIME, &ts)
        return (monotonic, Int64(ts.tv_sec) * 1_000_000_000 + Int64(ts.tv_nsec))
    }
}

/// One socket per local interface address: what a client PeerConnection uses. Sockets come
/// and go with the interfaces' addresses while it runs (continual gathering).
public final class SocketSet: PacketIO {
    public let loop: EventLoop
    private var sockets: [UDPSocket] = []
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)
    public var onReceive: ((UnsafeRawBufferPointer, SocketAddress, SocketAddress) -> Delivery)?

    /// Binds each address (port 0 = any). Loop thread only.
    public init(loop: EventLoop, addresses: [SocketAddress]) throws(TransportError) {
        self.loop = loop
        for address in addresses {
            // An interface that cannot be bound (gone, or no permission) is skipped, not fatal.
            _ = try? open(address)
        }
        guard !sockets.isEmpty else {
            throw TransportError("could not bind a UDP socket on any of \(addresses.map(\.description).joined(separator: ", "))")
        }
    }

    private func open(_ address: SocketAddress) throws(TransportError) -> UDPSocket {
        let socket = try UDPSocket(bind: address)
        sockets.append(socket)
        loop.register(fd: socket.fd) { [weak self, socket] in
            guard let self else { return }
            drain(socket, loop: self.loop, buffer: self.buffer) { bytes, from in
                _ = self.onReceive?(bytes, from, socket.localAddress)
            }
        }
        return socket
    }

    public func addLocalAddress(_ ip: SocketAddress.IP) throws(TransportError) -> SocketAddress {
        loop.preconditionInLoop()
        return try open(SocketAddress(ip: ip, port: 0)).localAddress
    }

    public func removeLocalAddress(_ address: SocketAddress) {
        loop.preconditionInLoop()
        guard let index = sockets.firstIndex(where: { $0.localAddress == address }) else { return }
        let socket = sockets.remove(at: index)
        loop.unregister(fd: socket.fd)
        socket.close()
    }

    public var localAddresses: [SocketAddress] { sockets.map(\.localAddress) }

    public func send(_ bytes: UnsafeRawBufferPointer, from local: SocketAddress, to remote: SocketAddress) -> Bool {
        loop.preconditionInLoop()
        guard let socket = sockets.first(where: { $0.localAddress == local }) ?? sockets.first else { return false }
        return socket.send(bytes, to: remote)
    }

    public func close() {
        loop.preconditionInLoop()
        for socket in sockets {
            loop.unregister(fd: socket.fd)
            socket.close()
        }
        sockets.removeAll()
        onReceive = nil
    }

    deinit { buffer.deallocate() }
}
