/// ICE restart (RFC 8445 §9).
extension ICEAgent {
    /// Starts over with `local` credentials (the old ones when only the peer restarts, or for a
    /// lite agent): pairs, checks and remote credentials are dropped, the bases and local
    /// candidates kept. The peer's new credentials and candidates follow through
    /// `setRemoteCredentials` and `addRemoteCandidate`. Until checks select a pair,
    /// `selectedPair` stays the old one, so media (and DTLS above it) keeps flowing; it fails
    /// when its consent (last refreshed before the restart) expires with no new pair selected.
    /// A `failed` agent may restart too (W3C `restartIce()` is how an app recovers): it starts
    /// `checking` with no path kept.
    public func restart(local: ICECredentials, now: ContinuousClock.Instant) {
        guard state != .closed else { return }
        if state == .failed {
            selected = nil
            restartPath = nil
            lastConsentAt = nil
            setState(.checking)
        }
        restartPath = selected ?? restartPath
        selected = nil
        if local != localCredentials { previousLocalCredentials = localCredentials }
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
        // The kept path's consent runs out as it would have: a restart does not extend it.
        if restartPath == nil || isLite { lastConsentAt = nil }
        lastValidRequestAt = nil
        lastReceivedAt = nil
        lastConsentSentAt = nil
        pump(now)
    }
}
