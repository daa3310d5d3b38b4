import STUN
import Synchronization
import Transport

/// A small TURN server on loopback for in-process tests: long-term credentials (401 then a
/// signed Allocate), Refresh, CreatePermission, ChannelBind, Send/Data indications and
/// ChannelData. Only what the client needs; no lifetimes enforced.
final class MiniTURNServer: @unchecked Sendable {
    // @unchecked: sockets and allocations are touched only on `loop`'s thread; counters behind a Mutex.
    struct Counters: Sendable {
        var allocations = 0, released = 0, unauthorized = 0, staleNonces = 0
        var channelDataFromClients = 0, indicationsFromClients = 0, relayedToClients = 0
    }

    final class Allocation {
        let client: SocketAddress
        let relay: UDPSocket
        var permissions: Set<SocketAddress.IP> = []
        var channels: [UInt16: SocketAddress] = [:]
        init(client: SocketAddress, relay: UDPSocket) {
            self.client = client
            self.relay = relay
        }
    }

    let loop: EventLoop
    let socket: UDPSocket
    var address: SocketAddress { socket.localAddress }
    let realm = "test"
    private var nonce = "abc123"
    /// Answer the first Refresh(0) with 438 Stale Nonce, as a server rotating nonces would.
    let staleNonceOnRelease: Bool
    let key: [UInt8]
    private var allocations: [SocketAddress: Allocation] = [:]
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)
    let counters = Mutex(Counters())
    /// Each response leaves this much later (a far server: its relay candidate comes late).
    let responseDelay: Duration

    init(username: String = "u", password: String = "p", staleNonceOnRelease: Bool = false, responseDelay: Duration = .zero) throws {
        self.staleNonceOnRelease = staleNonceOnRelease
        self.responseDelay = responseDelay
        loop = try EventLoop(name: "mini-turn")
        socket = try UDPSocket(bind: SocketAddress(ip: .v4(0x7f00_0001), port: 0))
        key = LongTermCredentials.key(username: username, realm: realm, password: password)
        loop.execute { [self] in
            loop.register(fd: socket.fd) { [self] in
                while let (n, from) = socket.receive(into: buffer) {
                    fromClient(Array(buffer[0..<n]), from: from)
                }
            }
        }
    }

    func stop() {
        loop.execute { [self] in
            loop.unregister(fd: socket.fd)
            for allocation in allocations.values {
                loop.unregister(fd: allocation.relay.fd)
                allocation.relay.close()
            }
            allocations.removeAll()
            socket.close()
            buffer.deallocate()
        }
        loop.shutdown()
    }

    private func fromClient(_ bytes: [UInt8], from client: SocketAddress) {
        let allocation = allocations[client]
        if let first = bytes.first, (0x40...0x7F).contains(first), bytes.count >= 4, let allocation {
            let number = UInt16(bytes[0]) << 8 | UInt16(bytes[1])
            let length = Int(UInt16(bytes[2]) << 8 | UInt16(bytes[3]))
            guard let peer = allocation.channels[number], bytes.count >= 4 + length else { return }
            counters.withLock { $0.channelDataFromClients += 1 }
            _ = allocation.relay.send(Array(bytes[4..<(4 + length)]), to: peer)
            return
        }
        guard let message = try? STUNMessage(parsing: bytes) else { return }
        if message.messageClass == .indication, message.method == .send, let allocation,
           let peer = message.xorPeerAddress, let data = message.data, allocation.permissions.contains(peer.ip) {
            counters.withLock { $0.indicationsFromClients += 1 }
            _ = allocation.relay.send(data, to: peer)
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
            let existing = allocations[client]
            let relay: UDPSocket
            if let existing { relay = existing.relay } else {
                guard let made = try? UDPSocket(bind: SocketAddress(ip: .v4(0x7f00_0001), port: 0)) else { return }
                relay = made
                let allocation = Allocation(client: client, relay: relay)
                allocations[client] = allocation
                counters.withLock { $0.allocations += 1 }
                loop.register(fd: relay.fd) { [self, allocation] in fromPeer(allocation) }
            }
            reply(message, to: client, .successResponse,
                  [.xorRelayedAddress(relay.localAddress), .xorMappedAddress(client), .lifetime(600)])
        case .refresh:
            if message.lifetime == 0, staleNonceOnRelease, nonce == "abc123" {
                nonce = "rotated"
                counters.withLock { $0.staleNonces += 1 }
                reply(message, to: client, .errorResponse,
                      [.errorCode(code: 438, reason: "Stale Nonce"), .realm(realm), .nonce(nonce)], signed: false)
                return
            }
            if message.lifetime == 0, let allocation {
                loop.unregister(fd: allocation.relay.fd)
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

    private func fromPeer(_ allocation: Allocation) {
        while let (n, peer) = allocation.relay.receive(into: buffer) {
            guard allocation.permissions.contains(peer.ip) else { continue }
            let data = Array(buffer[0..<n])
            counters.withLock { $0.relayedToClients += 1 }
            if let number = allocation.channels.first(where: { $0.value == peer })?.key {
                let header: [UInt8] = [UInt8(number >> 8), UInt8(number & 0xff), UInt8(n >> 8), UInt8(n & 0xff)]
                _ = socket.send(header + data, to: allocation.client)
            } else {
                let indication = STUNMessage(method: .data, messageClass: .indication,
                                             attributes: [.xorPeerAddress(peer), .data(data)])
                _ = socket.send(indication.encode(fingerprint: false), to: allocation.client)
            }
        }
    }

    private func reply(_ request: STUNMessage, to client: SocketAddress, _ cls: STUNClass, _ attributes: [STUNAttribute],
                       signed: Bool = true) {
        let response = STUNMessage(method: request.method, messageClass: cls, transactionID: request.transactionID,
                                   attributes: attributes)
        let bytes = response.encode(integrityKey: signed ? key : nil, fingerprint: signed)
        guard responseDelay > .zero else {
            _ = socket.send(bytes, to: client)
            return
        }
        loop.schedule(at: .now.advanced(by: responseDelay)) { [self] in _ = socket.send(bytes, to: client) }
    }
}
