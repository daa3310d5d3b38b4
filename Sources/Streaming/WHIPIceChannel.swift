import HTTP
import PeerConnection
import SDP
import Signaling
import Locks

/// Trickle ICE and ICE restarts on a WHIP/WHEP session resource (RFC 9725 §4.3), client side:
/// candidates our connection gathers after the offer went out are PATCHed in batches (what
/// arrives within `batchInterval` shares one request), then end-of-candidates; `restartIce()`
/// PATCHes new credentials with `If-Match: "*"` and applies the server's answer fragment. A
/// server that answers a PATCH with 405, 501 or 422 gets no more trickle, silently; one that
/// refused once is remembered, and later sessions to it gather fully before the POST.
final class WHIPIceChannel: Sendable {
    let client: WHIPClient
    let pc: PeerConnection
    let batchInterval: Duration
    /// A PATCH that failed for another reason (the CLI prints it).
    let onProblem: @Sendable (String) -> Void
    /// A trickle PATCH answered 404: the server no longer has the session.
    let onGone: @Sendable (String) -> Void
    private let activity: SignalingActivity

    private struct State {
        var session: WHIPClient.Session?
        /// In the POSTed offer already.
        var offered: Set<String> = []
        var offeredEnd = false
        var pending: [String] = []
        var pendingEnd = false
        var flushScheduled = false
        var trickleOff = false
        var trickled = 0
        var endSent = false
        /// `handle` passes candidates on (trickle is on for this session).
        var attached = false
        /// The ufrag of a restart the server refused: the connection still has it pending, and
        /// asking again would only be refused again.
        var refusedUfrag: String?
    }
    private let state = Locked(State())
    private let serial = SerialQueue()

    /// Endpoints that answered a trickle PATCH with 405/501/422, for the life of the process.
    private static let noTrickle = Locked<Set<String>>([])

    static func trickles(to endpoint: String) -> Bool { !noTrickle.withLock { $0.contains(endpoint) } }

    init(client: WHIPClient, pc: PeerConnection, batchInterval: Duration = .milliseconds(30), activity: SignalingActivity,
         onProblem: @escaping @Sendable (String) -> Void = { _ in }, onGone: @escaping @Sendable (String) -> Void = { _ in }) {
        self.client = client
        self.pc = pc
        self.batchInterval = batchInterval
        self.activity = activity
        self.onProblem = onProblem
        self.onGone = onGone
    }

    /// Trickle is on: from now on `handle` queues candidates for PATCHes. Before
    /// setLocalDescription, so no candidate is missed.
    func attach() {
        state.withLock { $0.attached = true }
    }

    /// One of the connection's events (the session reads them from `events`, in order).
    func handle(_ event: PeerConnectionEvent) {
        guard state.withLock({ $0.attached }) else { return }
        switch event {
        case .iceCandidate(let c) where !c.candidate.isEmpty:
            state.withLock { $0.pending.append(c.candidate) }
            scheduleFlush()
        case .iceGatheringStateChanged(.complete):
            state.withLock { $0.pendingEnd = true }
            scheduleFlush()
        default:
            break
        }
    }

    /// The offer went out with these candidates (and end-of-candidates if it said so).
    func offered(_ sdp: String) {
        let description = try? SDP.SessionDescription(parsing: sdp)
        let candidates = description.map { d in d.media.flatMap(\.candidates) + d.attributes(named: "candidate").map(\.description) } ?? []
        let ended = description.map { d in d.endOfCandidates || d.media.contains(where: \.endOfCandidates) } ?? false
        state.withLock {
            $0.offered = Set(candidates)
            $0.offeredEnd = ended
        }
    }

    /// The server created the session: PATCHes may go (the ones queued so far first).
    func start(_ session: WHIPClient.Session) {
        let advertised = session.acceptPatch
        state.withLock {
            $0.session = session
            // A server that lists what it patches, without ours, takes no trickle.
            if !advertised.isEmpty, !advertised.contains(TrickleICEFragment.contentType) { $0.trickleOff = true }
        }
        scheduleFlush()
    }

    var session: WHIPClient.Session? { state.withLock { $0.session } }
    var refusedUfrag: String? { state.withLock { $0.refusedUfrag } }
    var trickledCount: Int { state.withLock { $0.trickled } }
    var trickleEnabled: Bool { state.withLock { !$0.trickleOff } }

    private func scheduleFlush() {
        let go = state.withLock { s -> Bool in
            guard s.session != nil, !s.trickleOff, !s.flushScheduled else { return false }
            s.flushScheduled = true
            return true
        }
        guard go else { return }
        // The batch is timed on the connection's loop, whose clock a simulation moves.
        let (loop, interval) = (pc.loop, batchInterval)
        loop.execute {
            loop.schedule(at: loop.now.advanced(by: interval)) { [weak self] in
                guard let self else { return }
                state.withLock { $0.flushScheduled = false }
                activity.begin()
                Task {
                    try? await self.serial.run { await self.flush() }
                    self.activity.end()
                }
            }
        }
    }

    /// One PATCH with what is pending (serial queue).
    private func flush() async {
        let (session, candidates, end) = state.withLock { s -> (WHIPClient.Session?, [String], Bool) in
            let fresh = s.pending.filter { !s.offered.contains($0) }
            let end = s.pendingEnd && !s.endSent && !s.offeredEnd
            s.pending.removeAll()
            guard !s.trickleOff, !fresh.isEmpty || end else { return (nil, [], false) }
            return (s.session, fresh, end)
        }
        guard let session, let local = pc.localDescription?.sdp, let description = try? SDP.SessionDescription(parsing: local),
              let fragment = TrickleICEFragment(iceOf: description, candidates: candidates, endOfCandidates: end) else { return }
        do {
            let response = try await client.patch(session, fragment: fragment.serialize(), ifMatch: session.etag)
            switch response.status {
            case 200..<300:
                state.withLock {
                    $0.trickled += candidates.count
                    if end { $0.endSent = true }
                    if let tag = response.headers["ETag"] { $0.session?.etag = tag }
                }
            case 405, 501, 422:
                // The server does not take trickle: it has what the offer carried (RFC 9725 §4.3.1).
                state.withLock { $0.trickleOff = true }
                _ = Self.noTrickle.withLock { $0.insert(client.endpoint) }
            case 412:
                break   // candidates of an ICE session the server has moved on from
            case 404:
                onGone("trickle PATCH \(session.resource ?? ""): 404, the server no longer has the session")
            default:
                onProblem("trickle PATCH \(session.resource ?? "") answered \(response.status) \(response.reason): \(response.text.prefix(200))")
            }
        } catch {
            onProblem("trickle PATCH \(session.resource ?? ""): \(error)")
        }
    }

    /// An ICE restart by PATCH: new credentials (and our candidates) out, the server's back; DTLS
    /// and media go on. Throws, leaving the current ICE session in place, when the server refuses
    /// (the error's `status` says how). `force`: restart now (`restart-ice`, a disconnection);
    /// otherwise only if the connection wants one (its next offer has new credentials: it called
    /// `restartIce()` itself); returns whether a restart was made.
    @discardableResult
    func restartIce(force: Bool = true) async throws -> Bool {
        try await serial.run { [self] in
            guard let session, session.resource != nil else {
                throw SignalingError("ICE restart: the WHIP/WHEP server gave no session resource to PATCH")
            }
            if force { pc.restartIce() }
            let offer = try await pc.createOffer()
            guard let parsed = try? SDP.SessionDescription(parsing: offer.sdp), let fragment = TrickleICEFragment(iceOf: parsed) else {
                throw SignalingError("ICE restart: our offer has no ICE credentials")
            }
            // Not forced, nothing to do when the offer restarts nothing (a restart asked for has
            // been made, ours in this queue) or only what the server refused.
            let ufrag = (try? fragment.iceCredentials())??.ufrag
            if !force, let current = pc.localDescription.flatMap({ try? SDP.SessionDescription(parsing: $0.sdp) }),
               ufrag == current.media.first?.iceUfrag ?? current.iceUfrag || ufrag == refusedUfrag {
                return false
            }
            let response: HTTPClientResponse
            do {
                response = try await client.patch(session, fragment: fragment.serialize(), ifMatch: "*")
            } catch {
                state.withLock { $0.refusedUfrag = ufrag }
                throw error
            }
            if response.status != 200 { state.withLock { $0.refusedUfrag = ufrag } }
            switch response.status {
            case 200: break
            case 405, 501, 422:
                throw SignalingError("ICE restart: \(client.endpoint) does not take ICE restarts by PATCH (\(response.status) \(response.reason))",
                                     status: response.status)
            default:
                let text = response.text.prefix(300).split(whereSeparator: \.isNewline).joined(separator: " ")
                throw SignalingError("ICE restart: PATCH \(session.resource ?? "") answered \(response.status) \(response.reason)" + (text.isEmpty ? "" : ": \(text)"),
                                     status: response.status)
            }
            let type = response.headers["Content-Type"]?.split(separator: ";").first.map { String($0).lowercased() }
            guard type == TrickleICEFragment.contentType else {
                throw SignalingError("ICE restart: the 200 has Content-Type \(response.headers["Content-Type"] ?? "none"), expected \(TrickleICEFragment.contentType)")
            }
            let answer: SDP.SessionDescription
            do {
                let theirs = try TrickleICEFragment(parsing: response.text)
                guard let current = pc.remoteDescription?.sdp else { throw SignalingError("no remote description") }
                answer = try SDP.SessionDescription(parsing: current).applyingICERestart(theirs)
            } catch {
                throw SignalingError("ICE restart: the server's answer fragment is unusable: \(error)")
            }
            try await pc.setLocalDescription(offer)
            try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: answer.serialize()))
            state.withLock { s in
                if let tag = response.headers["ETag"] { s.session?.etag = tag }
                // Candidates of the new generation go in the restart's PATCH, not again later.
                s.offered.formUnion(parsed.media.flatMap(\.candidates))
            }
            return true
        }
    }
}

/// Runs async operations one after another, in call order (PATCHes must not overtake each other).
actor SerialQueue {
    private var tail: Task<Void, Never>?

    func run<T: Sendable>(_ operation: @escaping @Sendable () async throws -> T) async throws -> T {
        let previous = tail
        let task = Task { () async throws -> T in
            await previous?.value
            return try await operation()
        }
        tail = Task { _ = try? await task.value }
        return try await task.value
    }
}
