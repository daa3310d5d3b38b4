/// ICE restart (RFC 8445 §9).
extension ICEAgent {
    /// Starts over with `local` credentials (the old ones when only the peer restarts, or for a
    /// lite agent): pairs, checks and remote credentials are dropped, the bases and local
    /// candidates kept. The peer's new credentials and candidates follow through
    /// `setRemoteCredentials` and `addRemoteCandidate`. Until checks select a pair,
    /// `selectedPair` stays the old one, so media (and DTLS above it) keeps flowing.
    public func restart(local: ICECredentials, now: ContinuousClock.Instant) {
        guard !isTerminal else { return }
        restartPath = selected ?? restartPath
        selected = nil
        localCredentials = local
        remoteCredentials = nil
        remotes.removeAll()
        // Only the path media stays on keeps its proof; the rest must check again.
        verified = restartPath.map { [$0.remote] } ?? []
        pairs.removeAll()
        transactions.removeAll()
        triggeredQueue.removeAll()
        remoteEndOfCandidates = false
        nominationWanted = false
        nominationInFlight = false
        checkingClockStart = nil
        nextConsentAt = nil
        consentDue = false
        consentPendingSince = nil
        lastConsentAt = nil
        lastValidRequestAt = nil
        lastReceivedAt = nil
        lastConsentSentAt = nil
        pump(now)
    }
}
