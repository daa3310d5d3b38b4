import STUN

/// Sans-I/O TURN client (RFC 8656) for one allocation on one server.
///
/// Feed it what the server sends (`handleDatagram`) and the time; take datagrams for the server
/// (`pollTransmit`), events (`pollEvent`) and the next deadline (`pollTimeout`, then
/// `handleTimeout`). `send(_:to:)` relays to a peer: permission and channel are set up on first
/// use, Send indications carry data until the channel is bound, ChannelData after. Not
/// thread-safe: call it from one serial context.
public final class TURNClient {
    public let configuration: TURNConfiguration
    public internal(set) var state: TURNState = .new
    public internal(set) var relayedAddress: SocketAddress?
    public internal(set) var mappedAddress: SocketAddress?
    public internal(set) var stats = TURNStats()

    // Long-term credential state, learned from the first 401.
    var realm: String?
    var nonce: String?
    var key: [UInt8] = []

    var transactions: [[UInt8]: Transaction] = [:]
    var sequence = 0
    var refreshAt: ContinuousClock.Instant?
    var permissions: [SocketAddress.IP: Permission] = [:]
    var channels: [SocketAddress: Channel] = [:]
    var channelPeers: [UInt16: SocketAddress] = [:]
    var nextChannel: UInt16 = ChannelData.channelRange.lowerBound
    var transmits: [[UInt8]] = []
    var events: [TURNEvent] = []

    enum Kind: Equatable {
        case allocate
        case refresh(lifetime: UInt32)
        case createPermission(SocketAddress)
        case channelBind(UInt16, SocketAddress)
    }

    struct Transaction {
        var kind: Kind
        var sequence: Int
        /// Requests carried credentials (a 401 to them means a wrong password).
        var authenticated: Bool
        /// 438 retries taken, bounded so a server cannot keep us looping.
        var staleRetries: Int
        var bytes: [UInt8]
        var tries = 1
        var wait: Duration
        var deadline: ContinuousClock.Instant
    }

    struct Permission {
        var installed = false
        var pending = false
        var refreshAt: ContinuousClock.Instant?
        /// Data waiting for the permission: (peer, bytes).
        var queue: [(SocketAddress, [UInt8])] = []
    }

    struct Channel {
        var number: UInt16
        var bound = false
        var pending = false
        var refreshAt: ContinuousClock.Instant?
    }

    public init(configuration: TURNConfiguration) {
        self.configuration = configuration
    }

    var server: SocketAddress { configuration.server }
    var isTerminal: Bool { state == .closed || state == .failed }

    // MARK: - driver plumbing

    /// Sends the first (unauthenticated) Allocate.
    public func start(now: ContinuousClock.Instant) {
        guard state == .new else { return }
        state = .allocating
        request(.allocate, now: now)
    }

    public func pollTransmit() -> [UInt8]? {
        transmits.isEmpty ? nil : transmits.removeFirst()
    }

    public func pollEvent() -> TURNEvent? {
        events.isEmpty ? nil : events.removeFirst()
    }

    public func pollTimeout() -> ContinuousClock.Instant? {
        guard !isTerminal else { return nil }
        var times = transactions.values.map(\.deadline)
        if let refreshAt { times.append(refreshAt) }
        times += permissions.values.compactMap(\.refreshAt)
        times += channels.values.compactMap(\.refreshAt)
        return times.min()
    }

    public func handleTimeout(now: ContinuousClock.Instant) {
        guard !isTerminal else { return }
        let due = transactions.filter { $0.value.deadline <= now }.sorted { $0.value.sequence < $1.value.sequence }
        for (id, transaction) in due { retransmitOrFail(id: id, transaction, now: now) }
        guard state == .allocated else { return }
        if let refreshAt, refreshAt <= now {
            self.refreshAt = nil
            request(.refresh(lifetime: configuration.lifetime), now: now)
        }
        for (ip, permission) in permissions where (permission.refreshAt.map { $0 <= now } ?? false) {
            permissions[ip]?.refreshAt = nil
            // A permission is per IP; the port in XOR-PEER-ADDRESS is ignored (RFC 8656 §9).
            createPermission(for: SocketAddress(ip: ip, port: 0), now: now)
        }
        for (peer, channel) in channels where (channel.refreshAt.map { $0 <= now } ?? false) {
            channels[peer]?.refreshAt = nil
            request(.channelBind(channel.number, peer), now: now)
        }
    }

    /// Frees the allocation (Refresh with lifetime 0). The driver may close its socket after
    /// sending what `pollTransmit` returns; `released` follows if the server's answer comes.
    public func close(now: ContinuousClock.Instant) {
        switch state {
        case .allocated:
            transactions.removeAll()
            refreshAt = nil
            for ip in permissions.keys { permissions[ip]?.refreshAt = nil; permissions[ip]?.queue = [] }
            for peer in channels.keys { channels[peer]?.refreshAt = nil }
            state = .releasing
            request(.refresh(lifetime: 0), now: now)
        case .new, .allocating:
            transactions.removeAll()
            state = .closed
        case .releasing, .closed, .failed:
            break
        }
    }

    /// Over TCP or TLS: the connection to the server is gone, and with it the allocation (RFC 8656 §3.1).
    public func connectionClosed() {
        switch state {
        case .releasing: state = .closed
        case .closed, .failed: break
        default:
            let connection = configuration.transport == .tls ? "TLS" : "TCP"
            enterFailed(TURNError(.connectionLost, "TURN server \(server) closed the \(connection) connection"))
        }
    }

    /// Over TLS: the handshake (the certificate included) or a record failed; `reason` says how.
    /// The allocation, made or not, is lost with the connection.
    public func connectionFailed(_ reason: String) {
        switch state {
        case .releasing: state = .closed
        case .closed, .failed: break
        default: enterFailed(TURNError(.tlsFailed, "TURN server \(server): \(reason)"))
        }
    }

    // MARK: - relaying

    /// Relays `data` to `peer`. Returns false when there is no allocation to send it through.
    @discardableResult
    public func send(_ data: [UInt8], to peer: SocketAddress, now: ContinuousClock.Instant) -> Bool {
        guard state == .allocated else {
            stats.droppedUnallocated += 1
            return false
        }
        if let channel = channels[peer], channel.bound {
            sendChannelData(data, channel: channel.number)
            return true
        }
        if channels[peer] == nil, nextChannel <= ChannelData.channelRange.upperBound {
            // Bound channels cut 36 bytes of Send indication to 4 on every packet.
            let number = nextChannel
            nextChannel += 1
            channels[peer] = Channel(number: number, pending: true)
            channelPeers[number] = peer
            request(.channelBind(number, peer), now: now)
        }
        if permissions[peer.ip]?.installed == true {
            sendIndication(data, to: peer)
            return true
        }
        if permissions[peer.ip]?.pending != true { createPermission(for: peer, now: now) }
        if (permissions[peer.ip]?.queue.count ?? 0) < configuration.maxQueuedPerPeer {
            permissions[peer.ip]?.queue.append((peer, data))
        } else {
            stats.droppedQueueFull += 1
        }
        return true
    }

    func createPermission(for peer: SocketAddress, now: ContinuousClock.Instant) {
        if permissions[peer.ip] == nil { permissions[peer.ip] = Permission() }
        permissions[peer.ip]?.pending = true
        request(.createPermission(peer), now: now)
    }

    func sendChannelData(_ data: [UInt8], channel: UInt16) {
        transmits.append(ChannelData.encode(channel: channel, data: data, transport: configuration.transport))
        stats.channelDataSent += 1
    }

    func sendIndication(_ data: [UInt8], to peer: SocketAddress) {
        stats.indicationsSent += 1
        let message = STUNMessage(method: .send, messageClass: .indication, attributes: [.xorPeerAddress(peer), .data(data)])
        transmits.append(message.encode(fingerprint: false))
    }

    // MARK: - requests

    func request(_ kind: Kind, now: ContinuousClock.Instant, staleRetries: Int = 0) {
        var attributes: [STUNAttribute]
        let method: STUNMethod
        switch kind {
        case .allocate:
            method = .allocate
            attributes = [.requestedTransport(17), .lifetime(configuration.lifetime)]
        case .refresh(let lifetime):
            method = .refresh
            attributes = [.lifetime(lifetime)]
        case .createPermission(let peer):
            method = .createPermission
            attributes = [.xorPeerAddress(peer)]
        case .channelBind(let number, let peer):
            method = .channelBind
            attributes = [.channelNumber(number), .xorPeerAddress(peer)]
        }
        let authenticated = realm != nil && nonce != nil
        if let realm, let nonce {
            attributes += [.username(configuration.username), .realm(realm), .nonce(nonce)]
        }
        let message = STUNMessage(method: method, messageClass: .request, attributes: attributes)
        let bytes = message.encode(integrityKey: authenticated ? key : nil, fingerprint: false)
        let wait = configuration.transport == .udp ? configuration.rto : configuration.reliableTimeout
        sequence += 1
        transactions[message.transactionID] = Transaction(kind: kind, sequence: sequence, authenticated: authenticated,
                                                          staleRetries: staleRetries, bytes: bytes, wait: wait,
                                                          deadline: now + wait)
        transmits.append(bytes)
    }

    func retransmitOrFail(id: [UInt8], _ transaction: Transaction, now: ContinuousClock.Instant) {
        let reliable = configuration.transport.isStream
        if !reliable, transaction.tries < configuration.maxTries {
            var t = transaction
            t.tries += 1
            t.wait = t.tries == configuration.maxTries ? configuration.rto * configuration.lastWaitMultiplier : t.wait * 2
            t.deadline = now + t.wait
            transactions[id] = t
            transmits.append(t.bytes)
            stats.retransmissions += 1
            return
        }
        transactions[id] = nil
        let tries = reliable ? 1 : transaction.tries
        fail(transaction.kind, TURNError(.timeout, "TURN server \(server) did not answer the \(name(transaction.kind)) request (\(tries) \(tries == 1 ? "try" : "tries"))"))
    }

    func name(_ kind: Kind) -> String {
        switch kind {
        case .allocate: return "Allocate"
        case .refresh: return "Refresh"
        case .createPermission: return "CreatePermission"
        case .channelBind: return "ChannelBind"
        }
    }

    /// A request is gone for good: the allocation fails, or one peer's setup does.
    func fail(_ kind: Kind, _ error: TURNError) {
        switch kind {
        case .allocate:
            enterFailed(error)
        case .refresh(let lifetime):
            if lifetime == 0 {
                state = .closed
            } else {
                enterFailed(error)
            }
        case .createPermission(let peer):
            permissions[peer.ip]?.pending = false
            permissions[peer.ip]?.queue = []
            if permissions[peer.ip]?.installed != true { permissions[peer.ip] = nil }
            events.append(.peerFailed(peer: peer, error))
        case .channelBind(let number, let peer):
            // Without the channel, Send indications still work.
            channels[peer] = nil
            channelPeers[number] = nil
            events.append(.peerFailed(peer: peer, error))
        }
    }

    func enterFailed(_ error: TURNError) {
        guard !isTerminal else { return }
        state = .failed
        transactions.removeAll()
        refreshAt = nil
        permissions.removeAll()
        channels.removeAll()
        channelPeers.removeAll()
        events.append(.failed(error))
    }
}
