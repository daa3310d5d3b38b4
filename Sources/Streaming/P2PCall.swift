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
    }

    public let url: String
    public let peerConnection: PeerConnection
    public let events: AsyncStream<Event>
    private let continuation: AsyncStream<Event>.Continuation
    private let state = Locked(State())
    private let driver: ReconnectDriver

    private struct State {
        var signaling: SignalingClient?
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
    }

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
    }

    public var chat: DataChannel? { state.withLock { $0.chat } }

    /// Joins and runs the call in the background; events report how it goes. Throws when the
    /// signaling server cannot be reached or refuses the room. `token`: the server's signaling
    /// token, when it has access control.
    public func start(video: VideoTrack?, audio: AudioTrack?, insecure: Bool = false, token: String? = nil) async throws {
        let signaling = try await SignalingClient.connect(url, token: token, insecure: insecure)
        state.withLock { $0.signaling = signaling }
        let pc = peerConnection
        // Our candidates to the peer as they are gathered (trickle), then end-of-candidates.
        let outgoing = Task { [continuation] in
            for await event in pc.events {
                switch event {
                case .iceCandidate(let c):
                    self.trickle(c, signaling)
                case .iceGatheringStateChanged(.complete):
                    self.trickle(IceCandidate(candidate: ""), signaling)
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
        let incoming = Task { [continuation] in
            for await event in signaling.events {
                do {
                    switch event {
                    case .joined(let peers):
                        continuation.yield(.joined(peers: peers))
                    case .peerJoined:
                        continuation.yield(.negotiating(offerer: true))
                        try await self.offer(video: video, audio: audio, signaling: signaling)
                    case .offer(let sdp) where self.state.withLock({ $0.negotiated }):
                        try await self.answerRenegotiation(sdp, signaling: signaling)
                    case .offer(let sdp):
                        continuation.yield(.negotiating(offerer: false))
                        try await self.answer(sdp, video: video, audio: audio, signaling: signaling)
                    case .answer(let sdp):
                        try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: sdp))
                        let first = self.state.withLock { s -> Bool in
                            defer { s.negotiated = true }
                            return !s.negotiated
                        }
                        if first { self.announceRemoteTracks() }
                    case .candidate(let candidate, let mid, let index):
                        try await pc.addIceCandidate(IceCandidate(candidate: candidate, sdpMid: mid, sdpMLineIndex: index))
                    case .endOfCandidates:
                        try await pc.addIceCandidate(IceCandidate(candidate: ""))
                    case .bye:
                        self.end("the peer hung up")
                    case .peerLeft:
                        self.end("the peer left the room")
                    case .error(let why):
                        continuation.yield(.error("signaling: \(why)"))
                    case .closed(let code, let reason):
                        self.end("the signaling connection closed (\(code)\(reason.isEmpty ? "" : ": \(reason)"))")
                    }
                } catch {
                    continuation.yield(.error("\(error)"))
                }
            }
        }
        state.withLock { $0.tasks = [outgoing, incoming] }
        driver.start(self)
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

    private func offer(video: VideoTrack?, audio: AudioTrack?, signaling: SignalingClient) async throws {
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
        signaling.sendOffer((pc.localDescription ?? offer).sdp)
        releaseCandidates(signaling)
    }

    private func answer(_ sdp: String, video: VideoTrack?, audio: AudioTrack?, signaling: SignalingClient) async throws {
        let pc = peerConnection
        try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: sdp))
        try await addLocalTracks(video: video, audio: audio)
        let answer = try await pc.createAnswer()
        try await pc.setLocalDescription(answer)
        signaling.sendAnswer((pc.localDescription ?? answer).sdp)
        state.withLock {
            $0.negotiated = true
            $0.polite = true
        }
        releaseCandidates(signaling)
        announceRemoteTracks()
    }

    /// The connection wants a new offer (an ICE restart, a track added) once the call is up.
    /// Only from stable: one asked for meanwhile fires again when the connection gets there.
    private func renegotiate() async {
        let pc = peerConnection
        guard let signaling = state.withLock({ $0.negotiated && !$0.ended ? $0.signaling : nil }),
              pc.signalingState == .stable else { return }
        do {
            let offer = try await pc.createOffer()
            guard pc.signalingState == .stable else { return }   // an offer of the peer's came first
            try await pc.setLocalDescription(offer)
            signaling.sendOffer((pc.localDescription ?? offer).sdp)
        } catch {
            continuation.yield(.error("renegotiation: \(error)"))
        }
    }

    /// The peer's offer mid-call. Crossing ours: the polite side rolls its own back and
    /// answers; the other ignores it (its own offer stands, the peer answers that).
    private func answerRenegotiation(_ sdp: String, signaling: SignalingClient) async throws {
        let pc = peerConnection
        if pc.signalingState == .haveLocalOffer {
            guard state.withLock({ $0.polite }) else { return }
            try await pc.setLocalDescription(SessionDescription(type: .rollback, sdp: ""))
        }
        continuation.yield(.negotiating(offerer: false))
        try await pc.setRemoteDescription(SessionDescription(type: .offer, sdp: sdp))
        let answer = try await pc.createAnswer()
        try await pc.setLocalDescription(answer)
        signaling.sendAnswer((pc.localDescription ?? answer).sdp)
    }

    private func trickle(_ c: IceCandidate, _ signaling: SignalingClient) {
        let send = state.withLock { s -> Bool in
            guard s.heldCandidates != nil else { return true }
            s.heldCandidates?.append(c)
            return false
        }
        if send { signaling.sendCandidate(c.candidate, sdpMid: c.sdpMid, sdpMLineIndex: c.sdpMLineIndex) }
    }

    private func releaseCandidates(_ signaling: SignalingClient) {
        let held = state.withLock { s -> [IceCandidate] in
            defer { s.heldCandidates = nil }
            return s.heldCandidates ?? []
        }
        for c in held { signaling.sendCandidate(c.candidate, sdpMid: c.sdpMid, sdpMLineIndex: c.sdpMLineIndex) }
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
    /// room, the peer's answer applied, checks on every pair again. An offer of ours the peer
    /// never answered is rolled back first.
    func reconnect(attempt: Int) async -> ExchangeOutcome {
        await restart()
    }

    private func restart() async -> ExchangeOutcome {
        guard state.withLock({ $0.signaling != nil && !$0.ended }) else { return .fatal("the call has ended") }
        let pc = peerConnection
        if pc.signalingState == .haveLocalOffer {
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
