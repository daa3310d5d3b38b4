import Foundation
import HTTP
import PeerConnection
import SDP
import Locks

/// WHIP/WHEP trickle ICE and ICE restarts (RFC 9725 §4.3): `PATCH` on a session resource with
/// an `application/trickle-ice-sdpfrag` body. The resource's secret is the capability, as for
/// DELETE. The entity-tag of a session names its ICE session: it is our current ICE ufrag
/// (already the client's to know, and new at every restart).
extension RelayServer {
    /// Sessions whose ICE restart is being applied; a second PATCH meanwhile gets 409.
    private static let restarting = Locked<Set<ObjectIdentifier>>([])

    /// `Accept-Patch` and `ETag` for a 201 (or a restart's 200), from our local description.
    func addPatchHeaders(_ response: inout HTTPResponse, localDescription sdp: String) {
        response.headers.add("Accept-Patch", TrickleICEFragment.contentType)
        if let tag = Self.entityTag(localDescription: sdp) { response.headers.add("ETag", tag) }
    }

    static func entityTag(localDescription sdp: String) -> String? {
        guard let d = try? SDP.SessionDescription(parsing: sdp), let ice = TrickleICEFragment(iceOf: d),
              let credentials = try? ice.iceCredentials() else { return nil }
        return "\"\(credentials.ufrag)\""
    }

    /// RFC 9110 §13.1.1 with strong comparison: `*` or a list of entity-tags, one of them ours.
    static func ifMatchHolds(_ header: String?, current: String?) -> Bool {
        guard let header else { return true }   // no precondition asked for
        let tags = header.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }
        if tags.contains("*") { return current != nil }
        guard let current else { return false }
        return tags.contains(current)   // W/"…" (weak) never matches strongly
    }

    func patchSession(_ request: HTTPRequest) async -> HTTPResponse {
        guard let secret = request.queryValue("token"),
              let session = try? await loop.submit({ [state] in state.value.sessions.values.first { AccessPolicy.same(secret, $0.secret) } })
        else { return .text(404, "no such session\n") }
        let type = (request.headers["Content-Type"] ?? "").split(separator: ";").first.map { $0.trimmingCharacters(in: .whitespaces).lowercased() }
        guard type == TrickleICEFragment.contentType else {
            var refused = HTTPResponse.text(415, "Content-Type must be \(TrickleICEFragment.contentType) (RFC 9725 §4.3), not \(request.headers["Content-Type"] ?? "none")\n")
            refused.headers.add("Accept-Patch", TrickleICEFragment.contentType)
            return refused
        }
        guard request.body.count <= 64 * 1024 else { return .text(413, "a trickle-ice-sdpfrag of \(request.body.count) bytes is too large (at most 65536)\n") }
        guard let text = String(validating: request.body, as: UTF8.self) else { return .text(400, "the trickle-ice-sdpfrag is not UTF-8\n") }
        let fragment: TrickleICEFragment
        let theirs: (ufrag: String, pwd: String)?
        do {
            fragment = try TrickleICEFragment(parsing: text)
            theirs = try fragment.iceCredentials()
        } catch {
            return .text(400, "malformed trickle-ice-sdpfrag: \(error)\n")
        }
        let pc = session.pc
        guard let local = pc.localDescription?.sdp, let remoteText = pc.remoteDescription?.sdp,
              let remote = try? SDP.SessionDescription(parsing: remoteText),
              let current = TrickleICEFragment(iceOf: remote).flatMap({ try? $0.iceCredentials() }) else {
            return .text(409, "the session has no negotiated ICE transport yet\n")
        }
        guard Self.ifMatchHolds(request.headers["If-Match"], current: Self.entityTag(localDescription: local)) else {
            return .text(412, "If-Match \(request.headers["If-Match"] ?? "") does not name this session's current ICE session\n")
        }
        if let theirs, theirs.ufrag != current.ufrag {
            return await restartICE(session, fragment: fragment, remote: remote)
        }
        if let theirs, theirs.pwd != current.pwd {
            return .text(400, "a=ice-ufrag \(theirs.ufrag) is the session's but a=ice-pwd is not (an ICE restart changes both)\n")
        }
        // Trickle: session-level candidates belong to the bundle's transport, as in the answer.
        let bundleMid = remote.media.enumerated().first { $1.port != 0 }.map { $1.mid ?? String($0) } ?? "0"
        var candidates: [IceCandidate] = []
        for group in fragment.candidateGroups {
            let mid = group.mid ?? bundleMid
            candidates += group.candidates.map { IceCandidate(candidate: $0, sdpMid: mid) }
            if group.endOfCandidates { candidates.append(IceCandidate(candidate: "", sdpMid: mid)) }
        }
        do { try await pc.addIceCandidates(candidates) } catch {
            return .text(400, "trickle-ice-sdpfrag refused: \(error)\n")
        }
        let ended = candidates.contains { $0.candidate.isEmpty }
        log("serve: \(session.role.rawValue) \(session.id) trickled \(candidates.count - (ended ? 1 : 0)) candidate(s)\(ended ? ", end of candidates" : "")")
        var done = HTTPResponse.empty(204)
        addPatchHeaders(&done, localDescription: local)
        return done
    }

    /// The client's new credentials as a re-offer (everything else as negotiated, RFC 9725
    /// §4.3.3); our answer's new ufrag/pwd and candidates go back as the 200's fragment. A
    /// refused restart leaves the session on its current ICE session.
    private func restartICE(_ session: RelaySession, fragment: TrickleICEFragment, remote: SDP.SessionDescription) async -> HTTPResponse {
        let key = ObjectIdentifier(session)
        guard Self.restarting.withLock({ $0.insert(key).inserted }) else {
            return .text(409, "an ICE restart of this session is being applied; send the next PATCH after its answer\n")
        }
        defer { _ = Self.restarting.withLock { $0.remove(key) } }
        let pc = session.pc
        let offer: SDP.SessionDescription
        do {
            for (n, c) in fragment.candidateGroups.flatMap(\.candidates).enumerated() {
                do { try PeerConnection.checkCandidate(c) } catch { throw PeerConnectionError(.invalidCandidate, "candidate \(n + 1): \(error)") }
            }
            offer = try remote.applyingICERestart(fragment)
        } catch {
            return .text(400, "ICE restart refused: \(error)\n")
        }
        do {
            try await pc.setRemoteDescription(JSEPDescription(type: .offer, sdp: offer.serialize()))
        } catch {
            return .text(400, "ICE restart refused: \(error)\n")
        }
        do {
            try await pc.setLocalDescription(try await pc.createAnswer())
        } catch {
            try? await pc.setRemoteDescription(JSEPDescription(type: .rollback, sdp: ""))
            return .text(500, "ICE restart failed: \(error)\n")
        }
        guard let local = pc.localDescription?.sdp, let d = try? SDP.SessionDescription(parsing: local),
              let answer = TrickleICEFragment(iceOf: d) else {
            return .text(500, "ICE restart failed: no local description after answering\n")
        }
        log("serve: \(session.role.rawValue) \(session.id) restarted ICE (ufrag \((try? answer.iceCredentials())??.ufrag ?? "?"))")
        var ok = HTTPResponse(status: 200, headers: ["Content-Type": TrickleICEFragment.contentType], body: Array(answer.serialize().utf8))
        addPatchHeaders(&ok, localDescription: local)
        return ok
    }
}
