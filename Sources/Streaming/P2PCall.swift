import Foundation
import Media
import PeerConnection
import Signaling
import Locks

/// A peer-to-peer call through the signaling server (`swiftrtc signal`, `/rtc/v1/signal/`): the
/// reference app's P2P variant. Joins the room; whoever was there first offers when the other
/// arrives (`peer-joined`); candidates trickle both ways; a data channel `chat` carries app
/// messages. Audio and video go both ways. The call reads its connection's `events` (for
/// trickle and its own `events`); the app may set `peerConnection.delegate`.
///
/// Recovery (`reconnect`, on by default): the connection's own ICE restarts (`restartIce()`,
/// and the ones it asks for itself when its path's address goes or it stays disconnected) are
/// re-offered through the room; `disconnected` for `restartAfter` restarts ICE; a failed
/// connection (consent expired) restarts ICE again after the backoff until it connects — the same
/// connection, so DTLS, tracks and the data channel stay. Offers that cross (both sides restart
/// at once) are settled as W3C's "perfect negotiation": the side that answered the call's first
/// offer is polite (rolls its own back and answers), the other ignores the crossing offer.
///
/// The room connection survives too: the call joins with `seat=new`, and when the signaling
/// socket dies (a network change, a dead TCP path) it reconnects with the seat's token within
/// `signalingRejoinWindow` (`Backoff`: 0.25 s doubling to 2 s, jittered down as every reconnect). The server holds the seat meanwhile
/// and keeps what the peer sends; what we send while away is kept here and sent on return.
public final class P2PCall: Sendable {
    public enum Event: Sendable {
        /// In the room; `peers` others were there (0: we wait, and will offer).
        case joined(peers: Int)
        /// We offer now (the other peer arrived), or we answer (an offer came).
        case negotiating(offerer: Bool)
        /// The remote tracks exist (media may not have arrived yet).
        case remoteTracks(video: VideoTrack?, audio: AudioTrack?)
        case chatOpen(DataChannel)
        case connectionState(PeerConnectionState)
        /// The other side said bye or left the room: the call is over.
        case hungUp(reason: String)
        case error(String)
        /// Recovering the connection (ICE restarts, attempts after the backoff), or given up.
        case recovery(ReconnectEvent)
        /// The room connection died; reconnecting to take our seat back (attempt 1, 2, …).
        case signalingReconnecting(attempt: Int, reason: String)
        /// Back in the room on a new connection; the call went on.
        case signalingReconnected
    }

    /// How long a lost room connection is retried (the server holds the seat 15 s by default).
    public static let signalingRejoinWindow = Duration.seconds(14)

    /// The call's reconnect policy with delays that fit the seat's grace: 0.25 s doubling to 2 s.
    static func rejoinBackoff(_ policy: ReconnectPolicy) -> ReconnectPolicy {
        var p = policy
        p.initialDelay = .milliseconds(250)
        p.maxDelay = .seconds(2)
        return p
    }

    public let url: String
    public let peerConnection: PeerConnection
    public let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let state = Locked(State())
    private let driver: ReconnectDriver
    private let policy: ReconnectPolicy

    private struct State {
        var signaling: SignalingClient?
        /// What we sent while the room connection was down: sent again once it is back.
        var outbox: [SignalMessage] = []
        var rejoining = false
        var token: String?
        var insecure = false
        var chat: DataChannel?
        var tasks: [Task<Void, Never>] = []
        var ended = false
        /// Candidates gathered before our offer/answer went out wait for it (a browser cannot
        /// add a candidate before it has a remote description). nil once it has gone.
        var heldCandidates: [IceCandidate]? = []
        /// The first offer/answer is done: later offers are renegotiations of this connection.
        var negotiated = false
        /// We answered the call's first offer: in a glare we give way (perfect negotiation).
        var polite = false
        /// When our last offer went out (its answer may still be on the way).
        var offeredAt: ContinuousClock.Instant?
    }

    /// How long an offer of ours waits for its answer before a restart takes it as lost and rolls
    /// it back. The peer answers every offer it gets (the polite side rolls its own back), so
    /// only one lost with the room connection goes unanswered.
    static let answerWait: Duration = .seconds(10)

    /// `configuration` as for any PeerConnection (ICE servers, transport policy…); remote
    /// transceivers are created sendrecv so the answerer sends as well.
    public init(url: String, configuration: PeerConnection.Configuration = .init(),
                reconnect: ReconnectPolicy = ReconnectPolicy()) throws {
        guard url.hasPrefix("ws://") || url.hasPrefix("wss://") else {
            throw SignalingError("\(url): a signaling URL is ws:// or wss://HOST:PORT/rtc/v1/signal/?room=NAME")
        }
        self.url = url
        var config = configuration
        config.remoteTransceiverDirection = .sendrecv
        peerConnection = try PeerConnection(configuration: config)
        (events, continuation) = AsyncStream.makeStream(of: Event.self)
        // A call waits for its peer as long as it takes: no limit on the first connection.
        driver = ReconnectDriver(loop: peerConnection.loop, policy: reconnect, connectTimeout: nil, canRestartIce: true,
                                 seed: nil, activity: SignalingActivity())
        policy = reconnect
    }

    public var chat: DataChannel? { state.withLock { $0.chat } }

    /// Joins and runs the call in the background; events report how it goes. Throws when the
    /// signaling server cannot be reached or refuses the room. `token`: the server's signaling
    /// token, when it has access control.
    public func start(video: VideoTrack?, audio: AudioTrack?, insecure: Bool = false, token: String? = nil) async throws {
        let signaling = try await SignalingClient.connect(url, token: token, insecure: insecure, seat: policy.enabled ? "new" : nil)
        state.withLock {
            $0.signaling = signaling
            $0.token = token
            $0.insecure = insecure
        }
        let pc = peerConnection
        // Our candidates to the peer as they are gathered (trickle), then end-of-candidates.
        let outgoing = Task { [continuation] in
            for await event in pc.events {
                switch event {
                case .iceCandidate(let c):
                    self.trickle(c)
                case .iceGatheringStateChanged(.complete):
                    self.trickle(IceCandidate(candidate: ""))
                case .connectionStateChanged(let s):
                    continuation.yield(.connectionState(s))
                case .dataChannel(let channel) where channel.label == "chat":
                    self.state.withLock { $0.chat = channel }
                    continuation.yield(.chatOpen(channel))
                case .error(let error):
                    continuation.yield(.error(error.description))
                case .negotiationNeeded:
                    await self.renegotiate()
                default:
                    break
                }
            }
        }
        state.withLock { $0.tasks = [outgoing] }
        listen(signaling, video: video, audio: audio)
        driver.start(self)
    }

    /// Reads the room connection's events until it closes; then, unless the call is over, the
    /// seat is taken back on a new connection (`rejoin`).
    private func listen(_ signaling: SignalingClient, video: VideoTrack?, audio: AudioTrack?) {
        let incoming = Task {
            for await event in signaling.events { await self.handle(event, video: video, audio: audio) }
        }
        state.withLock { $0.tasks.append(incoming) }
    }

    private func handle(_ event: SignalingClient.Event, video: VideoTrack?, audio: AudioTrack?) async {
        let pc = peerConnection
        do {
            switch event {
            case .joined(let peers):
                continuation.yield(.joined(peers: peers))
            case .rejoined:
                break
            case .peerJoined:
                continuation.yield(.negotiating(offerer: true))
                try await offer(video: video, audio: audio)
            case .offer(let sdp) where state.withLock({ $0.negotiated }):
                try await answerRenegotiation(sdp)
            case .offer(let sdp):
                continuation.yield(.negotiating(offerer: false))
                try await answer(sdp, video: video, audio: audio)
            case .answer(let sdp):
                try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: sdp))
                let first = state.withLock { s -> Bool in
                    defer { s.negotiated = true }
                    return !s.negotiated
                }
                if first { announceRemoteTracks() }
            case .candidate(let candidate, let mid, let index):
                try await pc.addIceCandidate(IceCandidate(candidate: candidate, sdpMid: mid, sdpMLineIndex: index))
            case .endOfCandidates:
                try await pc.addIceCandidate(IceCandidate(candidate: ""))
            case .bye:
                end("the peer hung up")
            case .peerLeft:
                end("the peer left the room")
            case .error(let why):
                continuation.yield(.error("signaling: \(why)"))
            case .closed(let code, let reason):
                let why = "the signaling connection closed (\(code)\(reason.isEmpty ? "" : ": \(reason)"))"
                if canRejoin {
                    rejoin(after: why, video: video, audio: audio)
                } else {
                    end(why)
                }
            }
        } catch {
            continuation.yield(.error("\(error)"))
        }
    }

    /// Whether a closed room connection is worth reconnecting: the call is on and holds a seat.
    private var canRejoin: Bool {
        state.withLock { !$0.ended && !$0.rejoining && $0.signaling?.seat != nil } && policy.enabled
    }

    /// Takes our seat back on a new room connection; what we sent meanwhile follows.
    private func rejoin(after why: String, video: VideoTrack?, audio: AudioTrack?) {
        guard let (seat, token, insecure) = state.withLock({ s -> (String, String?, Bool)? in
            guard let seat = s.signaling?.seat else { return nil }
            s.rejoining = true
            return (seat, s.token, s.insecure)
        }) else { return }
        let task = Task { [continuation, url] in
            let deadline = ContinuousClock.now + Self.signalingRejoinWindow
            var backoff = Backoff(policy: Self.rejoinBackoff(self.policy))
            var attempt = 0
            while ContinuousClock.now < deadline, !Task.isCancelled, !self.state.withLock({ $0.ended }) {
                attempt += 1
                continuation.yield(.signalingReconnecting(attempt: attempt, reason: why))
                if let client = try? await SignalingClient.connect(url, token: token, insecure: insecure, seat: seat,
                                                                   timeout: .seconds(3)) {
                    var events = client.events.makeAsyncIterator()
                    switch await events.next() {
                    case .rejoined?:
                        let outbox = self.state.withLock { s -> [SignalMessage] in
                            s.signaling = client
                            s.rejoining = false
                            defer { s.outbox = [] }
                            return s.outbox
                        }
                        for m in outbox { client.send(m) }
                        continuation.yield(.signalingReconnected)
                        // This task reads the new connection from here on.
                        while let event = await events.next() { await self.handle(event, video: video, audio: audio) }
                        return
                    case .joined?:
                        // The seat is gone (the grace ended, or the server restarted): the peer
                        // was told we left.
                        client.close()
                        self.end("the room was lost while the signaling connection was down (\(why))")
                        return
                    default:
                        client.close()   // refused (an error, then closed): try again
                    }
                }
                try? await Task.sleep(for: backoff.delay(attempt: attempt))
            }
            self.end(why)
        }
        state.withLock { $0.tasks.append(task) }
    }

    private func addLocalTracks(video: VideoTrack?, audio: AudioTrack?) async throws {
        let pc = peerConnection
        var haveAudio = false, haveVideo = false
        // Transceivers an offer created (answerer) get our tracks; otherwise we add our own.
        for t in pc.transceivers {
            if t.kind == .audio, !haveAudio, let audio { t.sender.replaceTrack(audio); haveAudio = true }
            if t.kind == .video, !haveVideo, let video { t.sender.replaceTrack(video); haveVideo = true }
        }
        if !haveAudio, let audio {
            try await pc.addTransceiver(.audio, TransceiverInit(direction: .sendrecv, streamIds: ["swiftrtc"])).sender.replaceTrack(audio)
        }
        if !haveVideo, let video {
            try await pc.addTransceiver(.video, TransceiverInit(direction: .sendrecv, streamIds: ["swiftrtc"])).sender.replaceTrack(video)
        }
    }

    private func offer(video: VideoTrack?, audio: AudioTrack?) async throws {
        let pc = peerConnection
        try await addLocalTracks(video: video, audio: audio)
        if !pc.transceivers.contains(where: { $0.kind == .audio }) {
            _ = try await pc.addTransceiver(.audio, TransceiverInit(direction: .recvonly))
        }
        if !pc.transceivers.contains(where: { $0.kind == .video }) {
            _ = try await pc.addTransceiver(.video, TransceiverInit(direction: .recvonly))
        }
        let chat = try await pc.createDataChannel("chat")
        state.withLock { $0.chat = chat }
        let watch = Task { [continuation] in
            for await event in chat.events {
                if case .open = event {
                    continuation.yield(.chatOpen(chat))
                    return
                }
            }
        }
        state.withLock { $0.tasks.append(watch) }
        let offer = try await pc.createOffer()
        try await pc.setLocalDescription(offer)
        sendOffer((pc.localDescription ?? offer).sdp)
        releaseCandidates()
    }

    private func answer(_ sdp: String, video: VideoTrack?, audio: AudioTrack?) async throws {
        let pc = peerConnection
        try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: sdp))
        try await addLocalTracks(video: video, audio: audio)
        let answer = try await pc.createAnswer()
        try await pc.setLocalDescription(answer)
        send(.answer(sdp: (pc.localDescription ?? answer).sdp))
        state.withLock {
            $0.negotiated = true
            $0.polite = true
        }
        releaseCandidates()
        announceRemoteTracks()
    }

    /// The connection wants a new offer (an ICE restart, a track added) once the call is up.
    /// Only from stable: one asked for meanwhile fires again when the connection gets there.
    private func renegotiate() async {
        let pc = peerConnection
        guard state.withLock({ $0.negotiated && !$0.ended }), pc.signalingState == .stable else { return }
        do {
            let offer = try await pc.createOffer()
            guard pc.signalingState == .stable else { return }   // an offer of the peer's came first
            try await pc.setLocalDescription(offer)
            sendOffer((pc.localDescription ?? offer).sdp)
        } catch {
            continuation.yield(.error("renegotiation: \(error)"))
        }
    }

    /// The peer's offer mid-call. Crossing ours: the polite side rolls its own back and
    /// answers; the other ignores it (its own offer stands, the peer answers that).
    private func answerRenegotiation(_ sdp: String) async throws {
        let pc = peerConnection
        if pc.signalingState == .haveLocalOffer {
            guard state.withLock({ $0.polite }) else { return }
            try await pc.setLocalDescription(SessionDescription(type: .rollback, sdp: ""))
        }
        continuation.yield(.negotiating(offerer: false))
        try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: sdp))
        let answer = try await pc.createAnswer()
        try await pc.setLocalDescription(answer)
        send(.answer(sdp: (pc.localDescription ?? answer).sdp))
    }

    private func trickle(_ c: IceCandidate) {
        let now = state.withLock { s -> Bool in
            guard s.heldCandidates != nil else { return true }
            s.heldCandidates?.append(c)
            return false
        }
        if now { send(.candidate(candidate: c.candidate, sdpMid: c.sdpMid, sdpMLineIndex: c.sdpMLineIndex)) }
    }

    private func releaseCandidates() {
        let held = state.withLock { s -> [IceCandidate] in
            defer { s.heldCandidates = nil }
            return s.heldCandidates ?? []
        }
        for c in held { send(.candidate(candidate: c.candidate, sdpMid: c.sdpMid, sdpMLineIndex: c.sdpMLineIndex)) }
    }

    private func sendOffer(_ sdp: String) {
        state.withLock { $0.offeredAt = .now }
        send(.offer(sdp: sdp))
    }

    /// To the peer through the room; while the room connection is down (or the socket refuses
    /// it), kept for the new connection.
    private func send(_ message: SignalMessage) {
        let client = state.withLock { s -> SignalingClient? in
            guard !s.rejoining, let client = s.signaling else {
                s.outbox.append(message)
                return nil
            }
            return client
        }
        guard let client, !client.send(message) else { return }
        state.withLock { $0.outbox.append(message) }
    }

    private func announceRemoteTracks() {
        let receivers = peerConnection.transceivers.filter { $0.currentDirection?.receives == true }
        continuation.yield(.remoteTracks(video: receivers.first { $0.kind == .video }?.receiver.videoTrack,
                                         audio: receivers.first { $0.kind == .audio }?.receiver.audioTrack))
    }

    private func end(_ reason: String) {
        let first = state.withLock { s -> Bool in
            defer { s.ended = true }
            return !s.ended
        }
        guard first else { return }
        continuation.yield(.hungUp(reason: reason))
    }

    /// An ICE restart mid-call: new credentials in a re-offer through the room (made when the
    /// connection asks for it, `renegotiate`), the peer's answer applied when it comes; DTLS,
    /// SRTP and media go on over the new pair.
    public func restartIce() async throws {
        guard state.withLock({ $0.signaling != nil && $0.negotiated }) else {
            throw SignalingError("the call is not connected to a room")
        }
        peerConnection.restartIce()
    }

    /// Says bye, leaves the room and closes the connection.
    public func hangUp() async {
        driver.close()
        let (signaling, tasks) = state.withLock { s -> (SignalingClient?, [Task<Void, Never>]) in
            s.ended = true
            defer { s.signaling = nil; s.tasks = [] }
            return (s.signaling, s.tasks)
        }
        signaling?.sendBye()
        signaling?.close()
        for t in tasks { t.cancel() }
        await peerConnection.close()
        continuation.finish()
    }
}

extension P2PCall: Reconnectable {
    var watchedConnection: PeerConnection? { state.withLock { $0.ended ? nil : peerConnection } }

    /// The call keeps its one connection: a failed one is restarted, not replaced.
    func retireConnection() {}

    func restartIce(force: Bool) async -> ExchangeOutcome {
        await restart()
    }

    /// A failed connection (consent expired) restarts ICE: new credentials offered through the
    /// room, the peer's answer applied, checks on every pair again. An offer of ours unanswered
    /// for `answerWait` is taken as lost and rolled back first.
    func reconnect(attempt: Int) async -> ExchangeOutcome {
        await restart()
    }

    private func restart() async -> ExchangeOutcome {
        guard state.withLock({ $0.signaling != nil && !$0.ended }) else { return .fatal("the call has ended") }
        let pc = peerConnection
        if pc.signalingState == .haveLocalOffer {
            // An offer that may still be answered stays: rolled back and offered again, its
            // answer would land on the new offer and pair our new credentials with the peer's
            // old ones (a CI run: the connection's own restart offer, rolled back 18 ms later by
            // this one; the peer's video stayed away until the next outage). The connection
            // adds the restart to it, or after it, as W3C restartIce() does.
            if let at = state.withLock({ $0.offeredAt }), ContinuousClock.now - at < Self.answerWait {
                pc.restartIce()
                return .done
            }
            do {
                try await pc.setLocalDescription(SessionDescription(type: .rollback, sdp: ""))
            } catch {
                return .retry("rollback: \(error)")
            }
        }
        pc.restartIce()   // negotiationneeded: `renegotiate` offers it through the room
        return .done
    }

    func report(_ event: ReconnectEvent) {
        continuation.yield(.recovery(event))
        if case .failed(let why) = event { end(why) }
    }
}
