import ICE

/// Trickle ICE (RFC 8838, JSEP §4.1.17): candidates both ways, tagged with the m-line they belong to.
extension PeerConnection {
    /// W3C `addIceCandidate`: a trickled remote candidate; an empty candidate ends them.
    /// Before the transport exists (no local description yet) candidates wait for it.
    public func addIceCandidate(_ candidate: IceCandidate) async throws {
        try await loop.submit { [self] in
            guard !closed else { throw PeerConnectionError("addIceCandidate: the connection is closed") }
            try checkCandidateTarget(candidate)
            if candidate.candidate.isEmpty {
                guard let transport else {
                    pendingEndOfCandidates = true
                    return
                }
                transport.ice.endOfRemoteCandidates(now: .now)
                transport.pump()
                return
            }
            let c: Candidate
            do { c = try Candidate(parsing: candidate.candidate) } catch {
                throw PeerConnectionError("addIceCandidate: \(error)")
            }
            // The agent takes candidates before the remote credentials; checks wait for those.
            if let transport {
                transport.ice.addRemoteCandidate(c, now: .now)
                transport.pump()
            } else {
                pendingRemoteCandidates.append(c)
            }
        }
    }

    /// Several trickled candidates at once (a WHIP/WHEP PATCH body): all are checked before any
    /// is added, so a bad one leaves the connection as it was. Empty candidates end them.
    public func addIceCandidates(_ candidates: [IceCandidate]) async throws {
        try await loop.submit { [self] in
            guard !closed else { throw PeerConnectionError("addIceCandidate: the connection is closed") }
            var parsed: [Candidate?] = []
            for (n, candidate) in candidates.enumerated() {
                do {
                    try checkCandidateTarget(candidate)
                    parsed.append(candidate.candidate.isEmpty ? nil : try Candidate(parsing: candidate.candidate))
                } catch let error as PeerConnectionError {
                    throw PeerConnectionError("candidate \(n + 1): \(error.description.replacing("addIceCandidate: ", with: ""))")
                } catch {
                    throw PeerConnectionError("candidate \(n + 1): \(error)")
                }
            }
            for c in parsed {
                guard let c else {
                    if let transport { transport.ice.endOfRemoteCandidates(now: .now) } else { pendingEndOfCandidates = true }
                    continue
                }
                if let transport { transport.ice.addRemoteCandidate(c, now: .now) } else { pendingRemoteCandidates.append(c) }
            }
            transport?.pump()
        }
    }

    /// Checks a candidate's syntax without adding it anywhere (empty: end of candidates, fine).
    public static func checkCandidate(_ candidate: String) throws {
        guard !candidate.isEmpty else { return }
        do { _ = try Candidate(parsing: candidate) } catch { throw PeerConnectionError("\(error)") }
    }

    /// A candidate must name an m-line of the remote description (by mid, else by index).
    private func checkCandidateTarget(_ candidate: IceCandidate) throws {
        guard let remote = remoteSDP else { return }
        let mids = remote.media.enumerated().map { $1.mid ?? String($0) }
        if let mid = candidate.sdpMid {
            guard mids.contains(mid) else {
                throw PeerConnectionError("addIceCandidate: no m-line with mid \"\(mid)\" in the remote description (mids: \(mids.joined(separator: ", ")))")
            }
        } else if let index = candidate.sdpMLineIndex {
            guard mids.indices.contains(index) else {
                throw PeerConnectionError("addIceCandidate: sdpMLineIndex \(index) is out of range (the remote description has \(mids.count) m-lines)")
            }
        }
    }

    /// Candidates added before the transport existed (loop thread, at its start).
    func flushPendingCandidates() {
        guard let transport else { return }
        for c in pendingRemoteCandidates { transport.ice.addRemoteCandidate(c, now: .now) }
        pendingRemoteCandidates.removeAll()
        if pendingEndOfCandidates { transport.ice.endOfRemoteCandidates(now: .now) }
        pendingEndOfCandidates = false
    }

    /// mid and index of the m-line our candidates belong to: BUNDLE's first live m-section
    /// of our description (which may be the application m-line).
    func bundleTag() -> (mid: String, index: Int) {
        guard let media = localSDP?.media, !media.isEmpty else { return (transceiverList.first?.mid ?? "0", 0) }
        let index = media.firstIndex(where: { $0.port != 0 }) ?? 0
        return (media[index].mid ?? String(index), index)
    }
}
