import Media
import SDP

/// What renegotiation keeps between offers (loop thread).
struct NegotiationState {
    /// `negotiationneeded` was fired and no negotiation has finished since (W3C [[NegotiationNeeded]]).
    var fired = false
    /// A check is scheduled on the loop: changes made in one turn fire one event.
    var checkQueued = false
    /// The descriptions of the last time we were `stable`, for rollback.
    var stableLocal: (sdp: SDP.SessionDescription, type: SdpType)?
    var stableRemote: (sdp: SDP.SessionDescription, type: SdpType, description: SessionDescription)?
    /// Transceivers the pending remote offer created; a remote rollback removes them.
    var madeByRemoteOffer: [RtpTransceiver] = []
    /// Our addTrack transceivers the pending remote offer gave a mid; a remote rollback takes it back.
    var matchedByRemoteOffer: [RtpTransceiver] = []
    /// Stopped transceivers whose m-line the last answer rejected: gone from `transceivers` once stable.
    var stopNegotiated: [RtpTransceiver] = []
    /// Every mid either side ever put in a description: a recycled m-line gets a new one (JSEP §5.2.2).
    var usedMids: Set<String> = []
}

/// Renegotiation (JSEP §5.2.2/§5.3.2): `negotiationneeded`, implicit `setLocalDescription()`,
/// rollback, `removeTrack`.
extension PeerConnection {
    /// W3C `setLocalDescription()` without a description: the offer or answer the state calls for.
    public func setLocalDescription() async throws {
        try await loop.submit { [self] in
            try applyLocal(signalingState == .haveRemoteOffer ? makeAnswer() : makeOffer())
        }
    }

    /// W3C `removeTrack`: the sender stops sending; its transceiver only receives from the next
    /// negotiation on (sendrecv → recvonly, sendonly → inactive).
    public func removeTrack(_ sender: RtpSender) async throws {
        try await loop.submit { [self] in
            guard !closed else { throw PeerConnectionError(.closed, "removeTrack: the connection is closed") }
            guard let t = transceiverList.first(where: { $0.sender === sender }) else {
                throw PeerConnectionError(.invalidArgument, "removeTrack: the sender does not belong to this connection")
            }
            if sender.videoTrack != nil { sender.replaceTrack(nil as VideoTrack?) }
            if sender.audioTrack != nil { sender.replaceTrack(nil as AudioTrack?) }
            t.direction = TransceiverDirection(sends: false, receives: t.direction.receives)
        }
    }

    /// Schedules a `negotiationneeded` check (loop thread or, through the transceivers, any).
    func updateNegotiationNeeded() {
        guard loop.inLoop else {
            loop.execute { [weak self] in self?.updateNegotiationNeeded() }
            return
        }
        guard !closed, !negotiation.checkQueued else { return }
        negotiation.checkQueued = true
        loop.execute { [weak self] in
            guard let self else { return }
            negotiation.checkQueued = false
            // Only in stable; a negotiation in flight re-checks when it finishes.
            guard !closed, signalingState == .stable, !negotiation.fired, isNegotiationNeeded() else { return }
            negotiation.fired = true
            emit(.negotiationNeeded)
        }
    }

    /// W3C "check if negotiation is needed", against the current (stable) descriptions.
    func isNegotiationNeeded() -> Bool {
        if iceRestartWanted { return true }
        guard let local = localSDP else { return transceiverList.contains { !$0.isStopped } || dataChannels.wanted }
        let mids = local.media.enumerated().map { $1.mid ?? String($0) }
        func section(_ mid: String) -> MediaDescription? { mids.firstIndex(of: mid).map { local.media[$0] } }
        if dataChannels.wanted, dataChannels.mid.flatMap(section).map({ $0.port == 0 }) ?? true { return true }
        for t in transceiverList {
            let m = t.mid.flatMap(section)
            if t.isStopped {
                if let m, m.port != 0 { return true }
                continue
            }
            guard let m else { return true }
            guard m.port != 0 else { continue }
            let ours = TransceiverDirection(rawValue: m.direction.rawValue) ?? .sendrecv
            var wanted = t.direction
            if localType == .answer, let remote = remoteSDP,
               let offered = remote.media.enumerated().first(where: { ($1.mid ?? String($0)) == t.mid })?.element {
                wanted = wanted.intersection((TransceiverDirection(rawValue: offered.direction.rawValue) ?? .sendrecv).reversed)
            }
            if wanted != ours { return true }
        }
        return false
    }

    /// Back in stable after an answer: remember the descriptions, re-check what is still to negotiate.
    func negotiationFinished() {
        guard signalingState == .stable else { return }
        if let localSDP, let localType { negotiation.stableLocal = (localSDP, localType) }
        if let remoteSDP, let remoteType, let d = snapshot.withLock({ $0.remoteDescription }) {
            negotiation.stableRemote = (remoteSDP, remoteType, d)
        }
        negotiation.madeByRemoteOffer = []
        negotiation.matchedByRemoteOffer = []
        removeStoppedTransceivers()
        negotiation.fired = false
        updateNegotiationNeeded()
    }

    /// Transceivers whose stop was negotiated leave the list (as browsers do); their m-lines stay
    /// in the descriptions, rejected, until a new transceiver recycles them. The others keep
    /// their m-line indices: those belong to the descriptions, not to this list.
    func removeStoppedTransceivers() {
        let mids = localSDP.map(mids(of:)) ?? []
        // Also those stopped before any description carried them.
        let gone = negotiation.stopNegotiated + transceiverList.filter { $0.isStopped && $0.mid.map { !mids.contains($0) } ?? true }
        negotiation.stopNegotiated = []
        guard !gone.isEmpty else { return }
        transceiverList.removeAll { t in gone.contains { $0 === t } }
        for t in gone {
            if let mid = t.mid, byMid[mid] === t { byMid[mid] = nil }
            t.sender.transport = nil
        }
        bySSRC = bySSRC.filter { _, t in !gone.contains { $0 === t } }
        snapshot.withLock { $0.transceivers = transceiverList }
    }

    /// `setLocalDescription(.rollback)`: our pending offer is dropped; mids it gave out are free again.
    func rollbackLocal() throws {
        guard signalingState == .haveLocalOffer else {
            throw PeerConnectionError(.invalidState, "setLocalDescription: cannot roll back in state \(signalingState.rawValue)")
        }
        localSDP = negotiation.stableLocal?.sdp
        localType = negotiation.stableLocal?.type
        let mids = Set(localSDP.map { $0.media.enumerated().map { $1.mid ?? String($0) } } ?? [])
        for t in transceiverList where t.mid.map({ !mids.contains($0) }) == true { t.mid = nil }
        if let mid = dataChannels.mid, !mids.contains(mid) { dataChannels.mid = nil }
        // The offer restarted our agent, which now waits for the peer's new credentials: the
        // restart still has to be negotiated.
        if remoteCredentialsSet, transport?.ice.remoteCredentials == nil { iceRestartWanted = true }
        if localType == nil { snapshot.withLock { $0.localDescription = nil } } else { publishLocalDescription() }
        rolledBack()
    }

    /// `setRemoteDescription(.rollback)`: the pending remote offer is dropped with the transceivers it made.
    func rollbackRemote() throws {
        guard signalingState == .haveRemoteOffer else {
            throw PeerConnectionError(.invalidState, "setRemoteDescription: cannot roll back in state \(signalingState.rawValue)")
        }
        remoteSDP = negotiation.stableRemote?.sdp
        remoteType = negotiation.stableRemote?.type
        snapshot.withLock { $0.remoteDescription = negotiation.stableRemote?.description }
        let made = negotiation.madeByRemoteOffer
        transceiverList.removeAll { t in made.contains { $0 === t } }
        snapshot.withLock { $0.transceivers = transceiverList }
        negotiation.madeByRemoteOffer = []
        for t in negotiation.matchedByRemoteOffer { t.mid = nil }
        negotiation.matchedByRemoteOffer = []
        rolledBack()
    }

    /// Stable again without a negotiation: what was asked for is still to do.
    private func rolledBack() {
        setSignaling(.stable)
        negotiation.fired = false
        updateNegotiationNeeded()
    }

    /// Streams whose m-line no longer sends or receives that way are stopped (loop thread).
    func stopUnnegotiatedStreams() {
        for t in transceiverList {
            guard let mid = t.mid else { continue }
            let direction = t.currentDirection ?? .inactive
            if !direction.sends {
                if let s = media.videoSend.removeValue(forKey: mid) { s.sender.videoTrack?.removeRenderer(s) }
                if let s = media.audioSend.removeValue(forKey: mid) { s.sender.audioTrack?.removeSink(s) }
                // A later send direction makes a new stream, which attaches itself again.
                t.sender.onTrackChanged = nil
            }
            if !direction.receives {
                media.videoReceive.removeValue(forKey: mid)?.close()
                media.audioReceive.removeValue(forKey: mid)?.close()
            }
        }
    }
}
