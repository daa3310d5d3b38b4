import SessionSupport
import STUN
import Synchronization
import Transport

/// A small TURN server for in-process tests: long-term credentials (401 then a signed
/// Allocate), Refresh, CreatePermission, ChannelBind, Send/Data indications and ChannelData.
/// Only what the client needs; no lifetimes enforced.
///
/// It runs on a `Simulation`'s virtual network (its ports are `VirtualEndpoint`s, its work is
/// the simulated loop's: `init(_ sim:)`), or on loopback UDP sockets polled by a loop of its
/// own (`init()`), for clients that cannot be put on a simulated loop (StreamingSession).
final class MiniTURNServer: @unchecked Sendable {
    // @unchecked: ports and allocations are touched only by `loop`'s work; counters behind a Mutex.
    struct Counters: Sendable {
        var allocations = 0, released = 0, unauthorized = 0, staleNonces = 0
        var channelDataFromClients = 0, indicationsFromClients = 0, relayedToClients = 0
    }

    final class Allocation {
        let client: SocketAddress
        let relay: Port
        var permissions: Set<SocketAddress.IP> = []
        var channels: [UInt16: SocketAddress] = [:]
        init(client: SocketAddress, relay: Port) {
            self.client = client
            self.relay = relay
        }
    }

    /// One UDP port of the server: where it receives, what it sends from. Loop work only.
    class Port {
        /// What arrives, with who sent it; set before `start`.
        var onDatagram: ([UInt8], SocketAddress) -> Void = { _, _ in }
        var address: SocketAddress { preconditionFailure("a Port subclass gives its address") }
        func start() {}
        func send(_ bytes: [UInt8], to remote: SocketAddress) {}
        func close() {}
    }

    let loop: EventLoop
    /// Where the server listens (its relayed addresses are on the same host, other ports).
    let address: SocketAddress
    let realm = "test"
    private var nonce = "abc123"
    /// Answer the first Refresh(0) with 438 Stale Nonce, as a server rotating nonces would.
    let staleNonceOnRelease: Bool
    let key: [UInt8]
    private let port: Port
    private var allocations: [SocketAddress: Allocation] = [:]
    /// Opens a port for a relayed address.
    private let openPort: () throws -> Port
    /// The sockets' receive buffer (nil on a virtual network).
    private let buffer: UnsafeMutableRawBufferPointer?
    let counters = Mutex(Counters())
    /// Each response leaves this much later (a far server: its relay candidate comes late).
    let responseDelay: Duration

    /// On loopback UDP sockets, with a loop of its own.
    init(username: String = "u", password: String = "p", staleNonceOnRelease: Bool = false, responseDelay: Duration = .zero) throws {
        self.staleNonceOnRelease = staleNonceOnRelease
        self.responseDelay = responseDelay
        key = LongTermCredentials.key(username: username, realm: realm, password: password)
        let loop = try EventLoop(name: "mini-turn")
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)
        self.loop = loop
        self.buffer = buffer
        openPort = { try SocketPort(loop: loop, buffer: buffer) }
        port = try openPort()
        address = port.address
        listen()
    }

    /// On `sim`'s virtual network at a fresh address, port 3478.
    init(_ sim: Simulation, username: String = "u", password: String = "p", staleNonceOnRelease: Bool = false,
         responseDelay: Duration = .zero) throws {
        self.staleNonceOnRelease = staleNonceOnRelease
        self.responseDelay = responseDelay
        key = LongTermCredentials.key(username: username, realm: realm, password: password)
        loop = sim.loop
        buffer = nil
        let network = sim.network
        let address = sim.nextAddress(port: 3478)
        self.address = address
        openPort = { VirtualPort(try network.endpoint(at: SocketAddress(ip: address.ip, port: 0))) }
        port = try sim.loop.perform { VirtualPort(try network.endpoint(at: address)) }
        listen()
    }

    private func listen() {
        port.onDatagram = { [weak self] bytes, from in self?.fromClient(bytes, from: from) }
        port.start()
    }

    /// Closes every port; a server on sockets ends its loop too.
    func stop() {
        loop.execute { [self] in
            for allocation in allocations.values { allocation.relay.close() }
            allocations.removeAll()
            port.close()
            buffer?.deallocate()
        }
        if buffer != nil { loop.shutdown() }
    }

    private func fromClient(_ bytes: [UInt8], from client: SocketAddress) {
        let allocation = allocations[client]
        if let first = bytes.first, (0x40...0x7F).contains(first), bytes.count >= 4, let allocation {
            let number = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
            let length = Int(UInt16(bytes[2]) << 8 | UInt16(bytes[3]))
            guard let peer = allocation.channels[number], bytes.count >= 4 + length else { return }
            counters.withLock { $0.channelDataFromClients += 1 }
            allocation.relay.send(Array(bytes[4..<(4 + length)]), to: peer)
            return
        }
        guard let message = try? STUNMessage(parsing: bytes) else { return }
        if message.messageClass == .indication, message.method == .send, let allocation,
           let peer = message.xorPeerAddress, let data = message.data, allocation.permissions.contains(peer.ip) {
            counters.withLock { $0.indicationsFromClients += 1 }
            allocation.relay.send(data, to: peer)
            return
        }
        guard message.messageClass == .request else { return }
        guard message.messageIntegrity != nil, message.nonce == nonce, STUNMessage.verifyIntegrity(bytes, key: key) else {
            if message.messageIntegrity != nil { counters.withLock { $0.unauthorized += 1 } }
            reply(message, to: client, .errorResponse,
                  [.errorCode(code: 401, reason: "Unauthorized"), .realm(realm), .nonce(nonce)], signed: false)
            return
        }
        switch message.method {
        case .allocate:
            let relay: Port
            if let existing = allocations[client] { relay = existing.relay } else {
                guard let made = try? openPort() else { return }
                relay = made
                let allocation = Allocation(client: client, relay: relay)
                relay.onDatagram = { [weak self, weak allocation] data, peer in
                    guard let self, let allocation else { return }
                    fromPeer(allocation, data, from: peer)
                }
                relay.start()
                allocations[client] = allocation
                counters.withLock { $0.allocations += 1 }
            }
            reply(message, to: client, .successResponse,
                  [.xorRelayedAddress(relay.address), .xorMappedAddress(client), .lifetime(600)])
        case .refresh:
            if message.lifetime == 0, staleNonceOnRelease, nonce == "abc123" {
                nonce = "rotated"
                counters.withLock { $0.staleNonces += 1 }
                reply(message, to: client, .errorResponse,
                      [.errorCode(code: 438, reason: "Stale Nonce"), .realm(realm), .nonce(nonce)], signed: false)
                return
            }
            if message.lifetime == 0, let allocation {
                allocation.relay.close()
                allocations[client] = nil
                counters.withLock { $0.released += 1 }
            }
            reply(message, to: client, .successResponse, [.lifetime(message.lifetime ?? 600)])
        case .createPermission:
            if let peer = message.xorPeerAddress { allocation?.permissions.insert(peer.ip) }
            reply(message, to: client, .successResponse, [])
        case .channelBind:
            if let peer = message.xorPeerAddress, let number = message.channelNumber {
                allocation?.channels[number] = peer
                allocation?.permissions.insert(peer.ip)
            }
            reply(message, to: client, .successResponse, [])
        default:
            reply(message, to: client, .errorResponse, [.errorCode(code: 400, reason: "Bad Request")])
        }
    }

    private func fromPeer(_ allocation: Allocation, _ data: [UInt8], from peer: SocketAddress) {
        guard allocation.permissions.contains(peer.ip) else { return }
        counters.withLock { $0.relayedToClients += 1 }
        if let number = allocation.channels.first(where: { $0.value == peer })?.key {
            let n = data.count
            let header: [UInt8] = [UInt8(number >> 8), UInt8(number & 0xff), UInt8(n >> 8), UInt8(n & 0xff)]
            port.send(header + data, to: allocation.client)
        } else {
            let indication = STUNMessage(method: .data, messageClass: .indication, attributes: [.xorPeerAddress(peer), .data(data)])
            port.send(indication.encode(fingerprint: false), to: allocation.client)
        }
    }

    private func reply(_ request: STUNMessage, to client: SocketAddress, _ cls: STUNClass, _ attributes: [STUNAttribute],
                       signed: Bool = true) {
        let response = STUNMessage(method: request.method, messageClass: cls, transactionID: request.transactionID,
                                   attributes: attributes)
        let bytes = response.encode(integrityKey: signed ? key : nil, fingerprint: signed)
        guard responseDelay > .zero else {
            port.send(bytes, to: client)
            return
        }
        loop.schedule(at: loop.now.advanced(by: responseDelay)) { [self] in port.send(bytes, to: client) }
    }
}

/// A loopback UDP socket its loop polls.
private final class SocketPort: MiniTURNServer.Port {
    let socket: UDPSocket
    let loop: EventLoop
    let buffer: UnsafeMutableRawBufferPointer
    override var address: SocketAddress { socket.localAddress }

    init(loop: EventLoop, buffer: UnsafeMutableRawBufferPointer) throws {
        self.loop = loop
        self.buffer = buffer
        socket = try UDPSocket(bind: SocketAddress(ip: .v4(0x7f00_0001), port: 0))
    }

    /// Polled from now on (the listening port is started off the loop: the work is queued).
    override func start() {
        nonisolated(unsafe) let port = self   // used only by the loop's work
        loop.execute {
            port.loop.register(fd: port.socket.fd) {
                while let (n, from) = port.socket.receive(into: port.buffer) { port.onDatagram(Array(port.buffer[0..<n]), from) }
            }
        }
    }

    override func send(_ bytes: [UInt8], to remote: SocketAddress) { _ = socket.send(bytes, to: remote) }

    override func close() {
        loop.unregister(fd: socket.fd)
        socket.close()
    }
}

/// An endpoint on a virtual network.
private final class VirtualPort: MiniTURNServer.Port {
    let endpoint: VirtualEndpoint
    override var address: SocketAddress { endpoint.localAddresses.first ?? SocketAddress(ip: .v4(0), port: 0) }

    init(_ endpoint: VirtualEndpoint) { self.endpoint = endpoint }

    override func start() {
        endpoint.onReceive = { [weak self] bytes, from, _ in
            self?.onDatagram(Array(bytes), from)
            return .accepted
        }
    }

    override func send(_ bytes: [UInt8], to remote: SocketAddress) {
        _ = bytes.withUnsafeBytes { endpoint.send($0, from: address, to: remote) }
    }

    override func close() { endpoint.close() }
}
