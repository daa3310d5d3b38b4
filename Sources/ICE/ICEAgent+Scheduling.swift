import STUN

/// Outgoing requests: one per pacing slot (Ta), in the order retransmissions, server-reflexive
/// queries, consent freshness, triggered checks, nomination, ordinary checks.
extension ICEAgent {
    /// Runs everything that is due at `now`. Every public entry point ends here.
    func pump(_ now: ContinuousClock.Instant) {
        guard !isTerminal else { return }
        expireTransactions(now)
        runTimers(now)
        guard !isTerminal else { return }
        sendNextRequest(now)
        if gatheringFinished, !gatheringCompleteSent, gatherQueue.isEmpty,
           !transactions.values.contains(where: { if case .gather = $0.kind { return true } else { return false } }) {
            gatheringCompleteSent = true
            events.append(.gatheringComplete)
        }
        updateState()
    }

    // MARK: transactions

    func expireTransactions(_ now: ContinuousClock.Instant) {
        let expired = transactions.values
            .filter { !$0.retransmitDue && $0.deadline <= now }
            .sorted { $0.sequence < $1.sequence }
        for transaction in expired {
            let id = transaction.id
            if transaction.cancelled || transaction.tries >= transaction.maxTries
                || transaction.giveUpAt.map({ now >= $0 }) == true {
                transactions[id] = nil
                if !transaction.cancelled { transactionTimedOut(transaction) }
            } else {
                transactions[id]?.retransmitDue = true
            }
        }
    }

    func transactionTimedOut(_ transaction: Transaction) {
        switch transaction.kind {
        case .check(let key, let useCandidate, _):
            if let index = pairIndex(key), pairs[index].state == .inProgress || useCandidate {
                pairs[index].state = .failed
            }
            if useCandidate {
                nominationInFlight = false
                nominationWanted = role == .controlling && bestValidPair() != nil
            }
        case .consent, .gather:
            break   // consent is judged by timers; a silent STUN server just yields no candidate
        }
    }

    func startTransaction(kind: TransactionKind, message: STUNMessage, key: [UInt8]?, local: SocketAddress,
                          remote: SocketAddress, maxTries: Int, giveUpAt: ContinuousClock.Instant? = nil,
                          now: ContinuousClock.Instant) {
        let bytes = message.encode(integrityKey: key, fingerprint: true)
        transactionCounter += 1
        var transaction = Transaction(
            id: message.transactionID, sequence: transactionCounter, kind: kind, bytes: bytes, local: local, remote: remote,
            maxTries: max(1, maxTries), giveUpAt: giveUpAt, rto: configuration.checkRTO, lastSent: now, deadline: now)
        transaction.sent(at: now, rto: giveUpAt == nil ? configuration.checkRTO : checkRepeatInterval)
        transactions[message.transactionID] = transaction
        statsCounters.requestsSent += 1
        emit(ICETransmit(local: local, remote: remote, bytes: bytes))
    }

    // MARK: pacing

    /// Whether `sendNextRequest` would find something to send (mirrors its choices exactly).
    var hasPendingRequest: Bool {
        if transactions.values.contains(where: \.retransmitDue) { return true }
        if !gatherQueue.isEmpty { return true }
        if remoteCredentials != nil, triggeredQueue.contains(where: isTriggerable) { return true }
        if wantsNomination { return true }
        if consentDue { return true }
        return ordinaryCheckCandidate() != nil
    }

    func sendNextRequest(_ now: ContinuousClock.Instant) {
        // Nominating a pair that has just been validated is one request on a path known to work:
        // it goes out at once instead of waiting for the next Ta slot (that wait was most of our
        // connect time). It does not take the slot, so pacing of new checks is unchanged.
        if wantsNomination, !transactions.values.contains(where: \.retransmitDue), let key = bestValidPair() {
            nominationWanted = false
            nominationInFlight = true
            sendCheck(key, useCandidate: true, now: now)
        }
        if let slot = nextSendSlot, now < slot { return }
        if sendOneRequest(now) {
            nextSendSlot = now + configuration.pacingInterval
        }
    }

    private func sendOneRequest(_ now: ContinuousClock.Instant) -> Bool {
        // 1. Retransmissions, oldest first.
        if let due = transactions.values.filter(\.retransmitDue)
            .min(by: { ($0.deadline, $0.sequence) < ($1.deadline, $1.sequence) }),
           var transaction = transactions[due.id] {
            transaction.tries += 1
            // Checks (timed by giveUpAt) repeat at a steady interval; other requests back off.
            transaction.sent(at: now, rto: transaction.giveUpAt == nil ? min(transaction.rto * 2, configuration.maxCheckRTO)
                                                                        : checkRepeatInterval)
            transaction.retransmitDue = false
            transactions[due.id] = transaction
            statsCounters.requestsSent += 1
            statsCounters.retransmissions += 1
            if case .check(let key, _, _) = transaction.kind, let index = pairIndex(key) { pairs[index].requestsSent += 1 }
            if case .consent(let key) = transaction.kind, let index = pairIndex(key) { pairs[index].requestsSent += 1 }
            emit(ICETransmit(local: transaction.local, remote: transaction.remote, bytes: transaction.bytes))
            return true
        }
        // 2. Server-reflexive queries (plain Binding requests; servers need no credentials).
        if !gatherQueue.isEmpty {
            let job = gatherQueue.removeFirst()
            let message = STUNMessage(messageClass: .request)
            startTransaction(kind: .gather(server: job.server, base: job.base), message: message, key: nil,
                             local: job.base, remote: job.server, maxTries: configuration.maxGatherTries, now: now)
            return true
        }
        // 3. Consent freshness on the selected pair.
        if consentDue, sendConsentRequest(now) { return true }
        guard remoteCredentials != nil else { return false }
        // 4. Triggered checks.
        while !triggeredQueue.isEmpty {
            let key = triggeredQueue.removeFirst()
            if isTriggerable(key) {
                sendCheck(key, useCandidate: false, now: now)
                return true
            }
        }
        // 5. Nomination of the best valid pair (controlling, regular nomination).
        if wantsNomination, let key = bestValidPair() {
            nominationWanted = false
            nominationInFlight = true
            sendCheck(key, useCandidate: true, now: now)
            return true
        }
        // 6. Ordinary checks: the best Waiting pair, else the best Frozen one (§6.1.4.2).
        if let key = ordinaryCheckCandidate() {
            sendCheck(key, useCandidate: false, now: now)
            return true
        }
        return false
    }

    /// How often an unanswered check is repeated: `checkInterval`, stretched to 2·N·Ta for N pairs
    /// still being checked (RFC 8445 §14.3 scales its RTO by N·Ta for the same reason).
    var checkRepeatInterval: Duration {
        let checking = pairs.count { $0.state == .frozen || $0.state == .waiting || $0.state == .inProgress }
        return max(configuration.checkInterval, configuration.pacingInterval * (2 * checking))
    }

    func isTriggerable(_ key: PairKey) -> Bool {
        guard !isLite, let index = pairIndex(key) else { return false }
        return pairs[index].state != .inProgress && pairs[index].state != .succeeded
    }

    var wantsNomination: Bool {
        role == .controlling && !isLite && remoteCredentials != nil && selected == nil
            && nominationWanted && !nominationInFlight && bestValidPair() != nil
    }

    /// Ordinary checks stop once a pair is selected (§8.1.2) and never run in lite mode.
    func ordinaryCheckCandidate() -> PairKey? {
        guard !isLite, selected == nil, remoteCredentials != nil else { return nil }
        return (pairs.first { $0.state == .waiting } ?? pairs.first { $0.state == .frozen })?.key
    }

    /// Sends a connectivity check on `key` with our current role and a prflx PRIORITY.
    func sendCheck(_ key: PairKey, useCandidate: Bool, now: ContinuousClock.Instant) {
        guard let credentials = remoteCredentials, let index = pairIndex(key), let base = base(for: key.local) else { return }
        var attributes: [STUNAttribute] = [
            .username("\(credentials.ufrag):\(ufrag(on: pairs[index]))"),
            role == .controlling ? .iceControlling(tieBreaker) : .iceControlled(tieBreaker),
            .priority(Candidate.priority(type: .prflx, localPreference: base.localPreference)),
        ]
        if useCandidate { attributes.append(.useCandidate) }
        let message = STUNMessage(messageClass: .request, attributes: attributes)
        startTransaction(kind: .check(key, useCandidate: useCandidate, role: role), message: message,
                         key: Array(credentials.pwd.utf8), local: key.local, remote: key.remote,
                         maxTries: .max, giveUpAt: now + configuration.checkTimeout, now: now)
        if pairs[index].state != .succeeded { pairs[index].state = .inProgress }
        pairs[index].requestsSent += 1
        if checkingClockStart == nil { checkingClockStart = now }
        if state == .new { setState(.checking) }
    }

    /// Queues a triggered check (§7.3.1.4), cancelling a check already in flight on the pair.
    func triggerCheck(_ key: PairKey, now: ContinuousClock.Instant) {
        guard !isLite, let index = pairIndex(key) else { return }
        for (id, transaction) in transactions {
            if case .check(let k, false, _) = transaction.kind, k == key, !transaction.cancelled {
                // Keep listening for a late response for one more RTO, but never retransmit or fail.
                transactions[id]?.cancelled = true
                transactions[id]?.retransmitDue = false
                transactions[id]?.deadline = now + transaction.rto
            }
        }
        pairs[index].state = .waiting
        if !triggeredQueue.contains(key) { triggeredQueue.append(key) }
    }
}
