import STUN

/// Selection, consent freshness (RFC 7675) and the connection-state timers.
extension ICEAgent {
    func select(_ key: PairKey, now: ContinuousClock.Instant) {
        guard selected != key else { return }
        selected = key
        restartPath = nil
        nominationWanted = false
        events.append(.selectedPairChanged(local: key.local, remote: key.remote))
        lastConsentAt = now
        lastReceivedAt = now
        consentPendingSince = nil
        consentDue = false
        if !isLite { nextConsentAt = now + jitteredConsentInterval() }
        if state != .completed { setState(.connected) }
    }

    func refreshConsent(_ key: PairKey, now: ContinuousClock.Instant) {
        guard key == selected else { return }
        lastConsentAt = now
        lastReceivedAt = now
        consentPendingSince = nil
        if state == .disconnected { setState(stateBeforeDisconnect) }
    }

    /// Traffic from the selected pair's remote (a check, or media the driver authenticated): the
    /// pair is receiving, `connected` again. Our consent requests that went unanswered during the
    /// silence get a fresh `disconnectedTimeout` (else the next timer would call the pair
    /// disconnected at once), and one goes out now: the traffic has just pushed the next probe
    /// `probeAfter` away, and the way back is what is still unconfirmed.
    func heardOnSelected(_ now: ContinuousClock.Instant) {
        lastReceivedAt = now
        guard state == .disconnected else { return }
        if let since = consentPendingSince, now >= since + configuration.disconnectedTimeout {
            consentPendingSince = now
            consentDue = true
        }
        setState(stateBeforeDisconnect)
    }

    /// When a silent selected pair is probed next: `probeAfter` into the silence, then every
    /// `probeInterval`.
    func nextProbe(quietSince quiet: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let first = quiet + configuration.probeAfter
        guard let sent = lastConsentSentAt, sent >= quiet else { return first }
        return max(first, sent + configuration.probeInterval)
    }

    func jitteredConsentInterval() -> Duration {
        configuration.consentInterval * Double.random(in: 0.8...1.2, using: &random)
    }

    /// Deadline-driven work: consent requests, disconnection, failure.
    func runTimers(_ now: ContinuousClock.Instant) {
        if selected == nil {
            if let start = checkingClockStart, now >= start + configuration.checkingTimeout { fail() }
            if !isTerminal, restartPath != nil, let last = lastConsentAt, now >= last + configuration.consentTimeout { fail() }
            return
        }
        if isLite {
            if let last = lastValidRequestAt, now >= last + configuration.consentTimeout { fail() }
            return
        }
        if let last = lastConsentAt, now >= last + configuration.consentTimeout {
            fail()
            return
        }
        let quiet = lastReceivedAt.map { now >= $0 + configuration.receivingTimeout } ?? false
        let unanswered = consentPendingSince.map { now >= $0 + configuration.disconnectedTimeout } ?? false
        if quiet || unanswered, state == .connected || state == .completed {
            stateBeforeDisconnect = state
            setState(.disconnected)
        }
        if let last = lastReceivedAt, now >= nextProbe(quietSince: last) {
            consentDue = true
        }
        if let due = nextConsentAt, now >= due {
            // The request itself goes out through the pacer (`sendConsentRequest`).
            nextConsentAt = now + jitteredConsentInterval()
            consentDue = true
        }
    }

    /// One consent freshness request on the selected pair (RFC 7675 §5.1).
    func sendConsentRequest(_ now: ContinuousClock.Instant) -> Bool {
        consentDue = false
        guard let key = selected, let credentials = remoteCredentials, let base = base(for: key.local) else { return false }
        let ours = pairIndex(key).map { ufrag(on: pairs[$0]) } ?? localCredentials.ufrag
        let message = STUNMessage(messageClass: .request, attributes: [
            .username("\(credentials.ufrag):\(ours)"),
            role == .controlling ? .iceControlling(tieBreaker) : .iceControlled(tieBreaker),
            .priority(Candidate.priority(type: .prflx, localPreference: base.localPreference)),
        ])
        // A probe of a silent path is repeated by the next probe, not retransmitted.
        let probing = lastReceivedAt.map { now >= $0 + configuration.probeAfter } ?? false
        startTransaction(kind: .consent(key), message: message, key: Array(credentials.pwd.utf8),
                         local: key.local, remote: key.remote, maxTries: probing ? 1 : 3, now: now)
        lastConsentSentAt = now
        if let index = pairIndex(key) { pairs[index].requestsSent += 1 }
        if consentPendingSince == nil { consentPendingSince = now }
        return true
    }

    func updateState() {
        guard !isTerminal else { return }
        if selected != nil {
            if state == .connected, remoteEndOfCandidates { setState(.completed) }
            return
        }
        if !isLite, remoteEndOfCandidates, gatheringFinished, !pairs.isEmpty, pairs.allSatisfy({ $0.state == .failed }),
           !triggeredQueue.contains(where: isTriggerable) {
            fail()
        }
    }

    func fail() {
        transactions.removeAll()
        triggeredQueue.removeAll()
        gatherQueue.removeAll()
        nextConsentAt = nil
        consentDue = false
        setState(.failed)
    }
}
