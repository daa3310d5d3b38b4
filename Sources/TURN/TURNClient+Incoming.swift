import STUN

/// What the server sends: responses to our requests, Data indications and ChannelData.
extension TURNClient {
    /// Feeds one datagram (or one frame of a TCP stream, see `TURNStreamFramer`) from the server.
    /// Anything malformed is counted and dropped.
    public func handleDatagram(_ bytes: [UInt8], now: ContinuousClock.Instant) {
        guard !isTerminal else { return }
        if ChannelData.isChannelData(bytes) {
            guard let (number, data) = ChannelData.decode(bytes) else {
                stats.garbage += 1
                return
            }
            guard let peer = channelPeers[number], channels[peer]?.bound == true else {
                stats.unknownChannel += 1
                return
            }
            stats.channelDataReceived += 1
            events.append(.data(peer: peer, bytes: data))
            return
        }
        guard STUNMessage.isSTUN(bytes), let message = try? STUNMessage(parsing: bytes) else {
            stats.garbage += 1
            return
        }
        switch message.messageClass {
        case .indication:
            guard message.method == .data else { return }
            guard let peer = message.xorPeerAddress, let data = message.data else {
                stats.dataWithoutPeer += 1
                return
            }
            stats.indicationsReceived += 1
            events.append(.data(peer: peer, bytes: data))
        case .successResponse, .errorResponse:
            guard let transaction = transactions[message.transactionID] else {
                stats.unknownTransaction += 1
                return
            }
            // A response that claims integrity must prove it; unsigned error responses (401, 438) are expected.
            if message.messageIntegrity != nil, transaction.authenticated, !STUNMessage.verifyIntegrity(bytes, key: key) {
                stats.badIntegrity += 1
                return
            }
            transactions[message.transactionID] = nil
            if message.messageClass == .successResponse {
                succeeded(transaction.kind, message, now: now)
            } else {
                failed(transaction, message, now: now)
            }
        case .request:
            stats.garbage += 1
        }
    }

    // MARK: success

    func succeeded(_ kind: Kind, _ response: STUNMessage, now: ContinuousClock.Instant) {
        switch kind {
        case .allocate:
            guard state == .allocating else { return }
            guard let relayed = response.xorRelayedAddress else {
                enterFailed(TURNError(.malformedResponse, "TURN server \(server) answered Allocate without XOR-RELAYED-ADDRESS"))
                return
            }
            relayedAddress = relayed
            mappedAddress = response.xorMappedAddress
            state = .allocated
            let lifetime = response.lifetime ?? configuration.lifetime
            scheduleRefresh(lifetime: lifetime, now: now)
            events.append(.allocated(relayed: relayed, mapped: mappedAddress, lifetime: lifetime))
        case .refresh(let asked):
            if asked == 0 {
                state = .closed
                events.append(.released)
            } else if state == .allocated {
                scheduleRefresh(lifetime: response.lifetime ?? asked, now: now)
            }
        case .createPermission(let peer):
            guard state == .allocated else { return }
            installPermission(peer.ip, now: now)
        case .channelBind(let number, let peer):
            guard state == .allocated, channels[peer]?.number == number else { return }
            channels[peer]?.bound = true
            channels[peer]?.pending = false
            channels[peer]?.refreshAt = now + configuration.channelRefresh
            // Binding a channel installs the permission too (RFC 8656 §12).
            installPermission(peer.ip, now: now)
        }
    }

    /// Refresh a minute before expiry, or halfway through a short lifetime.
    func scheduleRefresh(lifetime: UInt32, now: ContinuousClock.Instant) {
        let seconds = lifetime > 120 ? Int(lifetime) - 60 : max(1, Int(lifetime) / 2)
        refreshAt = now + .seconds(seconds)
    }

    func installPermission(_ ip: SocketAddress.IP, now: ContinuousClock.Instant) {
        var permission = permissions[ip] ?? Permission()
        let queued = permission.queue
        let wasPending = permission.pending
        permission.installed = true
        permission.queue = []
        if wasPending || permission.refreshAt == nil { permission.refreshAt = now + configuration.permissionRefresh }
        permission.pending = false
        permissions[ip] = permission
        for (peer, data) in queued {
            if let channel = channels[peer], channel.bound {
                sendChannelData(data, channel: channel.number)
            } else {
                sendIndication(data, to: peer)
            }
        }
    }

    // MARK: errors

    func failed(_ transaction: Transaction, _ response: STUNMessage, now: ContinuousClock.Instant) {
        let (code, reason) = response.errorCode ?? (0, "no ERROR-CODE")
        let kind = transaction.kind
        if code == 401, !transaction.authenticated, let realm = response.realm, let nonce = response.nonce {
            // The expected challenge: retry with the long-term credentials.
            learn(realm: realm, nonce: nonce)
            request(kind, now: now)
            return
        }
        if code == 438, let nonce = response.nonce, transaction.staleRetries < 3 {
            learn(realm: response.realm ?? realm ?? "", nonce: nonce)
            request(kind, now: now, staleRetries: transaction.staleRetries + 1)
            return
        }
        let text = "\(code) \(reason)"
        let error: TURNError
        if code == 401 {
            error = TURNError(.unauthorized, code: code,
                              "TURN server \(server) rejected the credentials for user \(configuration.username) (\(text))")
        } else if case .refresh(let lifetime) = kind, lifetime == 0 {
            // Releasing: the allocation is gone either way.
            state = .closed
            return
        } else {
            error = TURNError(.rejected, code: code, "TURN server \(server) refused \(name(kind)) (\(text))")
        }
        fail(kind, error)
    }

    func learn(realm: String, nonce: String) {
        if realm != self.realm {
            key = LongTermCredentials.key(username: configuration.username, realm: realm, password: configuration.password)
        }
        self.realm = realm
        self.nonce = nonce
    }
}
