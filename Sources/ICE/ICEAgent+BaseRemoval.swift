import STUN

/// Continual gathering's other half: a base whose interface address went away.
extension ICEAgent {
    /// Removes a local base (a host socket, or a relayed address): its pairs, transactions and
    /// queued work go, its candidates are withdrawn (`localCandidateRemoved` for those that were
    /// signalled). When the selected pair (or the path media stays on during a restart) used it,
    /// there is no path any more: `disconnected` until another is selected — a controlling agent
    /// nominates its best remaining valid pair at once; otherwise an ICE restart has to find one —
    /// and `failed` only if none is within `checkingTimeout`. Returns whether that path was lost.
    @discardableResult
    public func removeLocalBase(_ address: SocketAddress, now: ContinuousClock.Instant) -> Bool {
        guard state != .closed, let index = bases.firstIndex(where: { $0.address == address }) else { return false }
        let base = bases.remove(at: index)
        let withdrawn = localCandidates.filter { belongs($0, to: base) }
        localCandidates.removeAll { belongs($0, to: base) }
        for candidate in withdrawn where candidate.type != .prflx { events.append(.localCandidateRemoved(candidate)) }
        pairs.removeAll { $0.key.local == address }
        triggeredQueue.removeAll { $0.local == address }
        gatherQueue.removeAll { $0.base == address }
        for (id, transaction) in transactions where transaction.local == address {
            if case .check(_, true, _) = transaction.kind {
                nominationInFlight = false
                nominationWanted = role == .controlling && !isLite && bestValidPair() != nil
            }
            transactions[id] = nil
        }
        let lostRestartPath = restartPath?.local == address
        if lostRestartPath { restartPath = nil }
        let lostSelected = selected?.local == address
        if lostSelected { loseSelectedPair(now: now) }
        pump(now)
        return lostSelected || lostRestartPath
    }

    /// The selected pair cannot carry anything any more: back to checking what is left.
    private func loseSelectedPair(now: ContinuousClock.Instant) {
        selected = nil
        nextConsentAt = nil
        consentDue = false
        consentPendingSince = nil
        lastConsentAt = nil
        lastReceivedAt = nil
        lastConsentSentAt = nil
        // The failure clock starts again: the search for a new path begins now.
        checkingClockStart = now
        if state == .connected || state == .completed {
            stateBeforeDisconnect = .connected
            setState(.disconnected)
        }
        if role == .controlling, !isLite { nominationWanted = bestValidPair() != nil }
    }

    /// Whether a local candidate stands on `base`: its own (host or relay), or one learned
    /// through it (server- or peer-reflexive, whose related address is the base).
    private func belongs(_ candidate: Candidate, to base: Base) -> Bool {
        candidate == base.candidate
            || (candidate.type != .relay && candidate.type != .host
                && candidate.relatedAddress == base.address.host && candidate.relatedPort == base.address.port)
    }
}
