import ICE

/// Trickle ICE (RFC 8838, JSEP §4.1.17): candidates both ways, tagged with the m-line they belong to.
extension PeerConnection {
    /// W3C `addIceCandidate`: a trickled remote candidate; an empty candidate ends them.
    /// Before the transport exists (no local description yet) candidates wait for it.
    public func addIceCandidate(_ candidate: IceCandidate) async throws {
        do { try await addIceCandidates([candidate]) } catch let error as PeerConnectionError {
            throw PeerConnectionError(error.description.replacing("candidate 1: ", with: "addIceCandidate: "))
        }
    }

    /// Several trickled candidates at once (a WHIP/WHEP PATCH body): all are checked before any
    /// is added, so a bad one leaves the connection as it was. Empty candidates end them.
    /// Parsed on the caller's thread; on the loop they cost one round of ICE work in all. More
    /// than `ICEConfiguration.maxRemoteCandidates` distinct addresses in all are refused.
    public func addIceCandidates(_ candidates: [IceCandidate]) async throws {
        let limit = ICEConfiguration().maxRemoteCandidates
        guard candidates.count <= limit + 1 else {
            throw PeerConnectionError("addIceCandidate: \(candidates.count) candidates at once; at most \(limit) are taken per connection")
        }
        var parsed: [Candidate?] = []
        for (n, candidate) in candidates.enumerated() {
            do { parsed.append(candidate.candidate.isEmpty ? nil : try Candidate(parsing: candidate.candidate)) } catch {
                throw PeerConnectionError("candidate \(n + 1): \(error)")
            }
        }
        try await loop.submit { [self, parsed] in
            guard !closed else { throw PeerConnectionError("addIceCandidate: the connection is closed") }
            for (n, candidate) in candidates.enumerated() {
                do { try checkCandidateTarget(candidate) } catch let error as PeerConnectionError {
                    throw PeerConnectionError("candidate \(n + 1): \(error.description.replacing("addIceCandidate: ", with: ""))")
                }
            }
            let fresh = parsed.compactMap { $0 }
            let room = transport?.ice.remoteCandidateRoom ?? max(0, limit - pendingRemoteCandidates.count)
            let new = transport?.ice.newRemoteAddresses(in: fresh) ?? fresh.count
            guard new <= room else {
                throw PeerConnectionError("addIceCandidate: \(new) new candidates, but room for \(room): at most \(limit) remote candidates per connection")
            }
            if let transport {
                transport.ice.addRemoteCandidates(fresh, now: loop.now)
                if parsed.contains(where: { $0 == nil }) { transport.ice.endOfRemoteCandidates(now: loop.now) }
                transport.pump()
            } else {
                pendingRemoteCandidates += fresh
                if parsed.contains(where: { $0 == nil }) { pendingEndOfCandidates = true }
            }
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
        transport.ice.addRemoteCandidates(pendingRemoteCandidates, now: loop.now)
        pendingRemoteCandidates.removeAll()
        if pendingEndOfCandidates { transport.ice.endOfRemoteCandidates(now: loop.now) }
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
