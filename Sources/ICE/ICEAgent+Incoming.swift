import STUN

/// Received STUN: requests (answer, learn, trigger, nominate) and responses (complete checks).
extension ICEAgent {
    /// Feeds one received datagram that `STUNMessage.isSTUN` accepted (others are counted as garbage).
    /// Returns true when it was an authenticated check or check response from `remote`, which
    /// is then verified (`isVerified`): the driver may route that address's traffic here.
    @discardableResult
    public func handleSTUN(_ bytes: [UInt8], from remote: SocketAddress, local: SocketAddress, now: ContinuousClock.Instant) -> Bool {
        guard !isTerminal else { return false }
        guard STUNMessage.isSTUN(bytes), let message = try? STUNMessage(parsing: bytes) else {
            statsCounters.droppedGarbage += 1
            return false
        }
        if message.fingerprint != nil, !STUNMessage.verifyFingerprint(bytes) {
            statsCounters.droppedBadFingerprint += 1
            return false
        }
        guard message.method == .binding else {
            statsCounters.droppedGarbage += 1
            return false
        }
        guard let base = base(for: local) else {
            statsCounters.droppedUnknownLocal += 1
            return false
        }
        var authenticated = false
        switch message.messageClass {
        case .request:
            authenticated = handleRequest(message, raw: bytes, from: remote, base: base, now: now)
        case .successResponse, .errorResponse:
            authenticated = handleResponse(message, raw: bytes, from: remote, local: local, now: now)
        case .indication:
            break   // keepalive
        }
        if authenticated { verified.insert(remote) }
        pump(now)
        return authenticated
    }

    // MARK: requests

    /// True when the request authenticated and was answered with success.
    func handleRequest(_ request: STUNMessage, raw: [UInt8], from remote: SocketAddress, base: Base, now: ContinuousClock.Instant) -> Bool {
        guard let username = request.username, request.messageIntegrity != nil else {
            statsCounters.droppedUnauthorized += 1
            sendError(400, "Bad Request", to: request, remote: remote, local: base.address, signedWith: nil)
            return false
        }
        let parts = username.split(separator: ":", maxSplits: 1, omittingEmptySubsequences: false)
        guard parts.count == 2, let ours = credentials(named: parts) else {
            statsCounters.droppedUnauthorized += 1
            sendError(401, "Unauthorized", to: request, remote: remote, local: base.address, signedWith: nil)
            return false
        }
        guard STUNMessage.verifyIntegrity(raw, key: Array(ours.pwd.utf8)) else {
            statsCounters.droppedBadIntegrity += 1
            return false
        }
        statsCounters.requestsReceived += 1
        let unknown = request.unknownComprehensionRequired
        guard unknown.isEmpty else {
            let value = unknown.flatMap { [UInt8($0 >> 8), UInt8($0 & 0xff)] }
            sendError(420, "Unknown Attribute", to: request, remote: remote, local: base.address, signedWith: ours,
                      extra: [.unknown(type: STUNAttribute.TypeCode.unknownAttributes, value: value)])
            return false
        }
        guard resolveRoleConflict(request, remote: remote, local: base.address, signedWith: ours) else { return false }

        let response = STUNMessage(messageClass: .successResponse, transactionID: request.transactionID,
                                   attributes: [.xorMappedAddress(remote)])
        emit(ICETransmit(local: base.address, remote: remote,
                         bytes: response.encode(integrityKey: Array(ours.pwd.utf8), fingerprint: true)))
        statsCounters.responsesSent += 1
        if checkingClockStart == nil { checkingClockStart = now }

        let remoteCandidate = learnRemote(remote, priority: request.priority)
        guard let key = addPair(base: base, remote: remoteCandidate), let index = pairIndex(key) else { return true }
        pairs[index].requestsReceived += 1
        pairs[index].responsesSent += 1
        pairs[index].previousCredentials = ours != localCredentials

        if isLite {
            // Lite: the request itself validates the pair; follow the peer's nomination, or take
            // the first valid pair if it never nominates.
            lastValidRequestAt = now
            pairs[index].state = .succeeded
            if request.useCandidate {
                pairs[index].nominated = true
                select(key, now: now)
            } else if selected == nil {
                select(key, now: now)
            } else if let current = selected, current.remote != remote {
                rebindIfQuiet(to: key, after: configuration.rebindAfter, now: now)
            }
            if key == selected { lastReceivedAt = now }
            return true
        }
        if key == selected { heardOnSelected(now) }

        let nominate = request.useCandidate && role == .controlled
        switch pairs[index].state {
        case .succeeded:
            if nominate {
                pairs[index].nominated = true
                select(key, now: now)
            }
        case .inProgress, .waiting, .frozen, .failed:
            if nominate { pairs[index].nominateOnSuccess = true }
            // Controlling after nomination succeeded: nothing left to learn from new checks.
            if role == .controlled || selected == nil { triggerCheck(key, now: now) }
        }
        return true
    }

    /// Which of our credentials a request's USERNAME ("ours:theirs") names: the current ones, or
    /// those from before the last restart together with the peer's current ufrag.
    func credentials(named parts: [Substring]) -> ICECredentials? {
        if parts[0] == localCredentials.ufrag { return localCredentials }
        if let old = previousLocalCredentials, parts[0] == old.ufrag, let theirs = remoteCredentials, parts[1] == theirs.ufrag {
            return old
        }
        return nil
    }

    /// Our ufrag in the USERNAME of checks on `pair`: the one the peer uses for us there.
    func ufrag(on pair: CandidatePair) -> String {
        pair.previousCredentials ? previousLocalCredentials?.ufrag ?? localCredentials.ufrag : localCredentials.ufrag
    }

    /// RFC 8445 §7.3.1.1. Returns false when we answered 487 and the request is done.
    func resolveRoleConflict(_ request: STUNMessage, remote: SocketAddress, local: SocketAddress, signedWith ours: ICECredentials) -> Bool {
        if role == .controlling, let theirs = request.iceControlling {
            statsCounters.roleConflicts += 1
            if tieBreaker >= theirs {
                sendError(487, "Role Conflict", to: request, remote: remote, local: local, signedWith: ours)
                return false
            }
            switchRole(to: .controlled)
        } else if role == .controlled, let theirs = request.iceControlled {
            statsCounters.roleConflicts += 1
            // A lite agent cannot control: the full peer has to switch.
            if isLite || tieBreaker < theirs {
                sendError(487, "Role Conflict", to: request, remote: remote, local: local, signedWith: ours)
                return false
            }
            switchRole(to: .controlling)
        }
        return true
    }

    /// `signedWith`: the credentials the request authenticated with (nil: it did not).
    func sendError(_ code: Int, _ reason: String, to request: STUNMessage, remote: SocketAddress, local: SocketAddress,
                   signedWith ours: ICECredentials?, extra: [STUNAttribute] = []) {
        let response = STUNMessage(messageClass: .errorResponse, transactionID: request.transactionID,
                                   attributes: [.errorCode(code: code, reason: reason)] + extra)
        let key = ours.map { Array($0.pwd.utf8) }
        emit(ICETransmit(local: local, remote: remote, bytes: response.encode(integrityKey: key, fingerprint: true)))
        statsCounters.errorResponsesSent += 1
    }

    /// The remote candidate at `address`, learning a peer-reflexive one if it is new (§7.3.1.3).
    /// At `maxRemoteCandidates` the oldest learned one not in use makes room: a peer that keeps
    /// moving (or a flood of authenticated checks from many addresses) costs bounded state.
    func learnRemote(_ address: SocketAddress, priority: UInt32?) -> Remote {
        if let known = remoteIndex(of: address) { return remotes[known] }
        if remotes.count >= configuration.maxRemoteCandidates { forgetOldestLearnedRemote() }
        prflxCounter += 1
        let candidate = Candidate(foundation: "prflx\(prflxCounter)",
                                  priority: priority ?? Candidate.priority(type: .prflx, localPreference: 0),
                                  address: address.host, port: address.port, type: .prflx)
        let remote = Remote(candidate: candidate, address: address)
        remotes.append(remote)
        return remote
    }

    private func forgetOldestLearnedRemote() {
        let inUse = [selected?.remote, restartPath?.remote]
        guard let victim = remotes.firstIndex(where: { $0.candidate.type == .prflx && !inUse.contains($0.address) }) else { return }
        let address = remotes.remove(at: victim).address
        verified.remove(address)
        pairs.removeAll { $0.key.remote == address }
        triggeredQueue.removeAll { $0.remote == address }
        for (id, transaction) in transactions where transaction.remote == address { transactions[id] = nil }
    }

    // MARK: responses

    /// True when the response authenticated as the answer to one of our checks from `remote`.
    @discardableResult
    func handleResponse(_ response: STUNMessage, raw: [UInt8], from remote: SocketAddress, local: SocketAddress, now: ContinuousClock.Instant) -> Bool {
        guard let transaction = transactions[response.transactionID] else {
            statsCounters.droppedUnmatched += 1
            return false
        }
        switch transaction.kind {
        case .gather(let server, let base):
            guard remote == server, local == base else {
                statsCounters.droppedUnmatched += 1
                return false
            }
            transactions[transaction.id] = nil
            statsCounters.responsesReceived += 1
            if response.messageClass == .successResponse,
               let mapped = response.xorMappedAddress ?? response.mappedAddress {
                addServerReflexive(mapped, base: base, server: server)
            }
            return false

        case .check(let key, let useCandidate, let sentRole):
            guard authenticResponse(raw) else { return false }
            transactions[transaction.id] = nil
            statsCounters.responsesReceived += 1
            guard let index = pairIndex(key) else { return false }
            pairs[index].responsesReceived += 1
            pairs[index].rtt = now - transaction.lastSent
            // Non-symmetric addresses mean the pair does not work as written (§7.2.5.2.1).
            guard remote == transaction.remote, local == transaction.local else {
                pairs[index].state = .failed
                return false
            }
            if response.messageClass == .errorResponse {
                handleCheckError(response, key: key, index: index, useCandidate: useCandidate, sentRole: sentRole, now: now)
                return false
            }
            checkSucceeded(key: key, index: index, mapped: response.xorMappedAddress, useCandidate: useCandidate, now: now)
            return true

        case .consent(let key):
            guard authenticResponse(raw) else { return false }
            transactions[transaction.id] = nil
            statsCounters.responsesReceived += 1
            guard let index = pairIndex(key) else { return false }
            pairs[index].responsesReceived += 1
            pairs[index].rtt = now - transaction.lastSent
            guard response.messageClass == .successResponse, remote == transaction.remote, local == transaction.local else { return false }
            refreshConsent(key, now: now)
            return true
        }
    }

    /// Responses to our checks must carry MESSAGE-INTEGRITY made with the peer's password.
    private func authenticResponse(_ raw: [UInt8]) -> Bool {
        guard let credentials = remoteCredentials, STUNMessage.verifyIntegrity(raw, key: Array(credentials.pwd.utf8)) else {
            statsCounters.droppedBadIntegrity += 1
            return false
        }
        return true
    }

    private func handleCheckError(_ response: STUNMessage, key: PairKey, index: Int, useCandidate: Bool, sentRole: ICERole,
                                  now: ContinuousClock.Instant) {
        if useCandidate { nominationInFlight = false }
        if response.errorCode?.code == 487 {
            // §7.2.5.1: switch to the role opposite the one we claimed, then check again.
            statsCounters.roleConflicts += 1
            if sentRole == role { switchRole(to: sentRole.opposite) }
            if pairs[index].state != .succeeded { pairs[index].state = .waiting }
            if role == .controlling, useCandidate { nominationWanted = true }
            if pairs[index].state != .succeeded, !triggeredQueue.contains(key) { triggeredQueue.append(key) }
            return
        }
        pairs[index].state = .failed
        if useCandidate { nominationWanted = role == .controlling && bestValidPair() != nil }
    }

    private func checkSucceeded(key: PairKey, index: Int, mapped: SocketAddress?, useCandidate: Bool, now: ContinuousClock.Instant) {
        guard let base = base(for: key.local) else { return }
        pairs[index].validLocalPriority = localPriority(mapped: mapped, base: base)
        pairs[index].state = .succeeded
        let foundation = pairs[index].foundation
        for i in pairs.indices where pairs[i].foundation == foundation && pairs[i].state == .frozen {
            pairs[i].state = .waiting
        }
        if key == selected { refreshConsent(key, now: now) }
        if useCandidate, role == .controlling {
            nominationInFlight = false
            pairs[index].nominated = true
            select(key, now: now)
        } else if role == .controlled, pairs[index].nominateOnSuccess {
            pairs[index].nominateOnSuccess = false
            pairs[index].nominated = true
            select(key, now: now)
        }
        if role == .controlling, selected == nil, !nominationInFlight { nominationWanted = true }
    }

    /// Priority of the local candidate the peer saw; learns a local prflx candidate if it is new.
    private func localPriority(mapped: SocketAddress?, base: Base) -> UInt32 {
        guard let mapped else { return base.candidate.priority }
        if let known = localCandidates.first(where: { $0.socketAddress == mapped }) { return known.priority }
        let candidate = Candidate(foundation: foundation(type: .prflx, base: base.address, server: nil),
                                  priority: Candidate.priority(type: .prflx, localPreference: base.localPreference),
                                  address: mapped.host, port: mapped.port, type: .prflx,
                                  relatedAddress: base.address.host, relatedPort: base.address.port)
        // Peer-reflexive candidates are not signalled (RFC 8838 §3), so no event.
        localCandidates.append(candidate)
        return candidate.priority
    }

    private func addServerReflexive(_ mapped: SocketAddress, base: SocketAddress, server: SocketAddress) {
        guard let baseInfo = self.base(for: base), mapped != base,
              !localCandidates.contains(where: { $0.type == .srflx && $0.socketAddress == mapped }) else { return }
        let candidate = Candidate(foundation: foundation(type: .srflx, base: base, server: server),
                                  priority: Candidate.priority(type: .srflx, localPreference: baseInfo.localPreference),
                                  address: mapped.host, port: mapped.port, type: .srflx,
                                  relatedAddress: base.host, relatedPort: base.port)
        localCandidates.append(candidate)
        events.append(.localCandidate(candidate))
    }
}
