import Media
import PeerConnection
import SDP
import Signaling
import Locks

/// Publish to or play from a streaming server, shaped like the reference app's
/// `WebRTCClient(isPublish:)`: `webrtc://` URLs speak SRS's JSON API, `http(s)://` URLs speak
/// WHIP (publish) or WHEP (play).
///
/// The session survives the network (`Options.reconnect`): a disconnected path gets an ICE
/// restart (WHIP/WHEP `PATCH`; SRS's API has none, so a new session on the same stream), a
/// failed connection or a session the server dropped gets a new connection after a backoff,
/// with the same tracks, capturer, encoders and renderers — only the PeerConnection and its
/// signaling are new. `events` says when; `peerConnection` is the current connection (the app's
/// delegate on it is carried over to the next one). The session reads each connection's `events`
/// itself (trickle ICE, `states`).
public final class StreamingSession: Sendable {
    public enum Role: String, Sendable { case publish, play }

    public struct Options: Sendable {
        /// Bearer token for WHIP/WHEP.
        public var token: String?
        /// Overrides the SRS API URL derived from a webrtc:// URL.
        public var api: String?
        /// Video codecs to offer, preferred first (H.264 first, as the reference app does).
        public var videoCodecs: [RtpCodecCapability] = [.h264, .vp8]
        /// The video sender's encodings (`TransceiverInit.sendEncodings`): several with rids
        /// publish simulcast. A server that does not take it (SRS) gets the largest layer alone;
        /// `RtpSender.simulcastRIDs` says what it took. Empty: one default encoding.
        public var videoEncodings: [RtpEncodingParameters] = []
        public var iceServers: [IceServer] = []
        public var configuration = PeerConnection.Configuration()
        /// Signaling requests, and the first connection, must be done within this.
        public var timeout: Duration = .seconds(15)
        /// Accept any certificate on https signaling (self-signed included). Off by default.
        public var insecure: Bool = false
        /// WHIP/WHEP: POST the offer without waiting for gathering and PATCH the candidates found
        /// later (RFC 9725 §4.3.2); off, or against a server that refused a trickle PATCH, the
        /// POST waits for gathering to complete. SRS's API always waits.
        public var trickle = true
        /// Candidates arriving within this interval share one PATCH.
        public var trickleBatch: Duration = .milliseconds(30)
        /// ICE restarts and reconnection with backoff; `.off` ends the session at the first failure.
        public var reconnect = ReconnectPolicy()
        /// A trickle PATCH that failed (other than "not supported"), for the app to report.
        public var onSignalingProblem: @Sendable (String) -> Void = { _ in }
        public init() {}
    }

    public let role: Role
    public let url: String
    public let options: Options
    public let environment: SessionEnvironment
    private let state: Locked<State>
    private let driver: ReconnectDriver
    private let stateBroadcast = Broadcast<PeerConnectionState>(initial: .new, replaysLast: true)
    private let eventBroadcast = Broadcast<ReconnectEvent>(replaysLast: false)

    /// The same events as `events`, as calls on the connections' loop thread, each before it
    /// goes on the streams. Held weakly.
    public var delegate: (any StreamingSessionDelegate)? {
        get { state.withLock { $0.delegate } }
        set { state.withLock { $0.delegate = newValue } }
    }

    private struct State {
        weak var delegate: (any StreamingSessionDelegate)?
        /// The connection now; `watched` is false once it is being replaced.
        var link: SessionLink
        var watched = true
        var media: Media?
        var remote: RemoteTracks?
        /// The last event the session reported (the status line shows it until connected).
        var recovery: ReconnectEvent?
        var closed = false
        /// Taps for every connection's transceivers (`forEachConnection`).
        var observers: [@Sendable (PeerConnection) -> Void] = []
        /// The connection whose transceivers are set up, once they are.
        var ready: PeerConnection?
    }

    /// What the session sends or receives, for every connection it makes.
    private enum Media {
        case publish(video: VideoTrack?, audio: AudioTrack?)
        case play(video: Bool, audio: Bool)
    }

    public init(role: Role, url: String, options: Options = Options(), environment: SessionEnvironment = SessionEnvironment()) throws {
        guard url.hasPrefix("webrtc://") || url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw SignalingError("\(url): expected webrtc:// (SRS API) or http(s):// (WHIP/WHEP)")
        }
        if url.hasPrefix("webrtc://") { _ = try SRSClient.StreamURL(parsing: url) }
        self.role = role
        self.url = url
        self.options = options
        self.environment = environment
        let driver = ReconnectDriver(loop: environment.loop, policy: options.reconnect, connectTimeout: options.timeout,
                                     canRestartIce: !url.hasPrefix("webrtc://"), seed: environment.seed, activity: environment.activity)
        self.driver = driver
        // The first connection exists from the start, as it always has (apps set its delegate).
        let link = try Self.makeLink(url: url, options: options, environment: environment, driver: driver,
                                     startBitrate: nil, previous: nil)
        state = Locked(State(link: link))
        follow(link)
    }

    /// The current connection (a new one after each reconnection).
    public var peerConnection: PeerConnection { state.withLock { $0.link.pc } }

    /// Calls `body` with each connection's peer connection once its transceivers are set up and
    /// before media flows: the current one at once if it is that far, then each one reconnection
    /// makes. For per-packet taps that must follow the session (a recorder).
    public func forEachConnection(_ body: @escaping @Sendable (PeerConnection) -> Void) {
        let ready = state.withLock {
            $0.observers.append(body)
            return $0.ready
        }
        if let ready { body(ready) }
    }

    /// Publishes the tracks (either may be nil); returns once media can flow, or with
    /// `waitForConnection: false` once the server has answered (`states` and `events` tell the rest).
    public func publish(video: VideoTrack?, audio: AudioTrack?, waitForConnection: Bool = true) async throws {
        precondition(role == .publish, "publish() on a play session")
        state.withLock { $0.media = .publish(video: video, audio: audio) }
        try await begin(waitForConnection: waitForConnection)
    }

    /// Plays the stream; returns the remote tracks (decoded frames arrive on them, from every
    /// connection the session makes).
    public func play(video: Bool = true, audio: Bool = true, waitForConnection: Bool = true) async throws
        -> (video: VideoTrack?, audio: AudioTrack?) {
        precondition(role == .play, "play() on a publish session")
        let remote = RemoteTracks(video: video, audio: audio)
        state.withLock {
            $0.media = .play(video: video, audio: audio)
            $0.remote = remote
        }
        try await begin(waitForConnection: waitForConnection)
        return (remote.video, remote.audio)
    }

    private func begin(waitForConnection: Bool) async throws {
        let link = state.withLock { $0.link }
        do {
            try await environment.activity.run { try await negotiate(link, previous: nil) }
        } catch {
            await shutDown()
            throw error
        }
        driver.start(self)
        if waitForConnection { try await self.waitForConnection() }
    }

    /// Returns once the first connection is up, or throws (and shuts the session down) when it
    /// fails: what `publish`/`play` do unless told `waitForConnection: false` — so an app can
    /// attach renderers to `play`'s tracks before the first frame is decoded, then wait.
    public func waitForConnection() async throws {
        if let why = await driver.firstConnection() {
            await shutDown()
            throw PeerConnectionError(.transport, "\(role.rawValue) \(url): \(why)")
        }
    }

    /// ICE restart now (the stdin `restart-ice`): WHIP/WHEP by PATCH (RFC 9725 §4.3.3), new ICE
    /// credentials out, the server's back; DTLS and media go on over the new checks. Throws (the
    /// current ICE session stays) when the server refuses or does not take PATCH.
    public func restartIce() async throws {
        guard let ice = state.withLock({ $0.link.ice }) else {
            throw SignalingError("ICE restart needs a WHIP/WHEP session (SRS's API has no way to signal one)")
        }
        try await ice.restartIce()
    }

    /// Candidates sent by trickle PATCH on the current connection (0 for SRS's API or without trickle).
    public var trickledCandidates: Int { state.withLock { $0.link.ice?.trickledCount } ?? 0 }

    /// Connection states (the reference app colours its button by them) of the session's
    /// connections, one after another: a new stream each time, starting with the state the
    /// session last saw, then each change, until the session closes or stops.
    public var states: AsyncStream<PeerConnectionState> { stateBroadcast.stream() }

    /// Recovery as it happens (`restartingIce`, `reconnecting(attempt:)`, `reconnected`,
    /// `failed`): a new stream each time, until the session closes or stops.
    public var events: AsyncStream<ReconnectEvent> { eventBroadcast.stream() }

    /// One line for a status display: the connection's state, or what recovery is doing
    /// ("reconnecting (attempt 2)").
    public var status: String {
        let (recovery, pc) = state.withLock { ($0.recovery, $0.link.pc) }
        switch recovery {
        case .restartingIce?: return "restarting ICE"
        case .reconnecting(let attempt)?: return "reconnecting (attempt \(attempt))"
        case .failed?: return "failed"
        default: return pc.connectionState.rawValue
        }
    }

    /// Whether the session has stopped for good: closed, or failed with nothing left to try.
    public var isStopped: Bool {
        state.withLock { s in
            if s.closed { return true }
            if case .failed? = s.recovery { return true }
            return false
        }
    }

    public func stats() async -> StatsReport { await peerConnection.getStats() }

    /// Tears everything down: WHIP/WHEP DELETE, DTLS close_notify, sockets.
    public func close() async {
        driver.close()
        await shutDown()
    }

    // MARK: connections

    /// A new connection for the session (`previous`: the one it replaces, whose delegate it takes).
    private static func makeLink(url: String, options: Options, environment: SessionEnvironment, driver: ReconnectDriver,
                                 startBitrate: Int?, previous: SessionLink?) throws -> SessionLink {
        var config = options.configuration
        config.iceServers += options.iceServers
        if let startBitrate { config.startBitrate = startBitrate }
        // SRS's API cannot restart ICE: a disconnection is ridden out (see ReconnectMachine); the
        // connection still asks for a restart (a new session) when its path's address goes.
        if url.hasPrefix("webrtc://") { config.iceRestartAfter = nil }
        let pc = try environment.makePeerConnection(config)
        if let delegate = previous?.pc.delegate { pc.delegate = delegate }
        let client = WHIPClient(endpoint: url, token: options.token, timeout: options.timeout, insecure: options.insecure,
                                exchange: environment.exchange)
        let ice = url.hasPrefix("webrtc://") ? nil
            : WHIPIceChannel(client: client, pc: pc, batchInterval: options.trickleBatch, activity: environment.activity,
                             onProblem: options.onSignalingProblem, onGone: { driver.sessionGone($0) })
        return SessionLink(pc: pc, ice: ice)
    }

    /// Reads the connection's events, in order, until it closes (the task holds the stream,
    /// not the session or the connection).
    private func follow(_ link: SessionLink) {
        let events = link.pc.events
        Task { [weak self] in
            for await event in events {
                link.ice?.handle(event)
                guard let self else { continue }
                switch event {
                case .connectionStateChanged(let s) where self.isCurrent(link):
                    self.stateBroadcast.yield(s)
                    // The estimate as the path went: a connection that fails later has no
                    // selected pair (no estimate) to start its successor from.
                    if s == .disconnected { await link.sampleEstimate(refresh: true) }
                case .negotiationNeeded where self.isCurrent(link) && link.negotiated:
                    self.requestRestartIfWanted(link)
                default:
                    break
                }
            }
            guard let self, self.isCurrent(link), self.isStopped else { return }
            self.stateBroadcast.finish()
            self.eventBroadcast.finish()
        }
    }

    private func isCurrent(_ link: SessionLink) -> Bool { state.withLock { $0.link === link } }

    /// `negotiationneeded` on a connection that is up: only an ICE restart can be signalled to
    /// a streaming server, so the driver hears of it when the next offer would restart ICE.
    /// W3C coalescing: one fired before the answer was applied is not fired again, so the check
    /// also runs once the answer is applied (`negotiate`), and one asked for while a check runs
    /// makes that check run again.
    private func requestRestartIfWanted(_ link: SessionLink) {
        guard link.beginRestartCheck() else { return }
        let activity = environment.activity
        activity.begin()
        Task { [driver] in
            repeat {
                if await link.wantsIceRestart() { driver.restartRequested() }
            } while link.endRestartCheck()
            activity.end()
        }
    }

    /// Offer, the server's answer, applied: the connection then connects by itself. `previous`:
    /// the connection it replaces, whose sender settings it takes.
    private func negotiate(_ link: SessionLink, previous: SessionLink?) async throws {
        guard let media = state.withLock({ $0.media }) else { return }
        let pc = link.pc
        switch media {
        case .publish(let video, let audio):
            if let audio {
                let t = try await pc.addTransceiver(.audio, TransceiverInit(direction: .sendonly, streamIds: ["swiftrtc"]))
                t.sender.replaceTrack(audio)
            }
            if let video {
                let t = try await pc.addTransceiver(.video, TransceiverInit(direction: .sendonly, streamIds: ["swiftrtc"],
                                                                            sendEncodings: options.videoEncodings),
                                                    codecs: options.videoCodecs)
                t.sender.replaceTrack(video)
            }
            previous?.copySendParameters(to: link)
        case .play(let video, let audio):
            if audio { _ = try await pc.addTransceiver(.audio, TransceiverInit(direction: .recvonly)) }
            if video { _ = try await pc.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: options.videoCodecs) }
            state.withLock { $0.remote }?.follow(video: pc.transceivers.first { $0.kind == .video }?.receiver.videoTrack,
                                                  audio: pc.transceivers.first { $0.kind == .audio }?.receiver.audioTrack)
        }
        let observers = state.withLock {
            $0.ready = pc
            return $0.observers
        }
        for observe in observers { observe(pc) }
        let trickle = link.ice != nil && options.trickle && WHIPIceChannel.trickles(to: url)
        if trickle { link.ice?.attach() }
        let offer = try await pc.createOffer()
        try await pc.setLocalDescription(offer)
        // Trickle: the host candidates are there at once; the rest follow by PATCH.
        if !trickle { await pc.waitForGatheringComplete(timeout: .seconds(3)) }
        let sdp = (pc.localDescription ?? offer).sdp
        let answer: String
        if let ice = link.ice {
            ice.offered(sdp)
            let session = try await whipClient().publish(offer: sdp)
            link.whipSession.withLock { $0 = session }
            if trickle { ice.start(session) }
            answer = session.answer
        } else {
            let srs = try SRSClient(url: url, apiOverride: options.api, timeout: options.timeout, insecure: options.insecure,
                                    exchange: environment.exchange)
            let clientIP = environment.exchange == nil ? localAddress(routingTo: srs.streamURL.host) : nil
            answer = try await srs.exchange(role == .publish ? .publish : .play, offer: sdp, clientIP: clientIP).sdp
        }
        try await pc.setRemoteDescription(SessionDescription(type: .answer, sdp: answer))
        link.negotiated = true
        if isCurrent(link) { requestRestartIfWanted(link) }   // asked for before it could be signalled
    }

    private func whipClient(timeout: Duration? = nil) -> WHIPClient {
        WHIPClient(endpoint: url, token: options.token, timeout: timeout ?? options.timeout, insecure: options.insecure,
                   exchange: environment.exchange)
    }

    /// Ends a connection: its server session DELETEd (WHIP/WHEP; a short wait, the server may
    /// be unreachable), DTLS close_notify, sockets.
    private func end(_ link: SessionLink) async {
        if let session = link.whipSession.withLock({ s in defer { s = nil }; return s }) {
            try? await whipClient(timeout: .seconds(3)).stop(session)
        }
        await link.pc.close()
    }

    /// Stops the session: its connection ends; `states` and `events` finish once the
    /// connection's last state has gone out.
    private func shutDown() async {
        let link = state.withLock { s -> SessionLink in
            s.closed = true
            s.watched = false
            return s.link
        }
        await end(link)
    }
}

extension StreamingSession: Reconnectable {
    var watchedConnection: PeerConnection? { state.withLock { $0.watched ? $0.link.pc : nil } }

    func retireConnection() { state.withLock { $0.watched = false } }

    func report(_ event: ReconnectEvent) {
        let delegate = state.withLock { s in
            s.recovery = event == .reconnected || event == .iceRestarted ? nil : event
            return s.delegate
        }
        delegate?.streamingSession(self, didReport: event)
        eventBroadcast.yield(event)
        if case .failed = event {
            let activity = environment.activity
            activity.begin()   // a simulation waits for the connection's close
            Task {
                await shutDown()
                activity.end()
            }
        }
    }

    func restartIce(force: Bool) async -> ExchangeOutcome {
        let link = state.withLock { $0.link }
        // SRS's API cannot restart ICE: the machine makes a new session on the same stream instead.
        guard let ice = link.ice else { return .gone("SRS's API cannot restart ICE") }
        await link.sampleEstimate()
        do {
            try await ice.restartIce(force: force)
            return .done
        } catch let error as SignalingError {
            return Self.outcome(of: error)
        } catch {
            return .retry("ICE restart: \(error)")
        }
    }

    /// WHIP/WHEP: the old session is DELETEd first (a publisher's would hold the stream's name).
    /// SRS's API has no DELETE: the new session is made first (the server hands the name to a
    /// publisher that comes back), and if the server refuses it, the old connection stays —
    /// except a publisher whose connection is up (it asked for an ICE restart, which SRS cannot
    /// signal): a live publisher keeps its name, so it closes first (close_notify ends it there).
    func reconnect(attempt: Int) async -> ExchangeOutcome {
        let (old, closed) = state.withLock { ($0.link, $0.closed) }
        guard !closed else { return .retry("the session is closed") }
        await old.sampleEstimate()
        // Half the last good estimate: the path is new, but it carried that much a moment ago. An
        // attempt that never got an estimate passes on the start it was given.
        let start = old.estimate.map { max($0 / 2, 100_000) } ?? old.pc.configuration.startBitrate
        let deletesFirst = old.ice != nil || (role == .publish && old.pc.connectionState == .connected)
        if deletesFirst { await end(old) }
        let link: SessionLink
        do {
            link = try Self.makeLink(url: url, options: options, environment: environment, driver: driver,
                                     startBitrate: start, previous: old)
        } catch {
            return .retry("\(error)")
        }
        let replaced = state.withLock { s -> Bool in
            guard !s.closed else { return false }
            s.link = link
            s.watched = true
            return true
        }
        guard replaced else {
            await link.pc.close()
            return .retry("the session is closed")
        }
        follow(link)
        let outcome: ExchangeOutcome
        do {
            try await negotiate(link, previous: old)
            outcome = .done
        } catch let error as SignalingError {
            outcome = Self.outcome(of: error)
        } catch {
            outcome = .retry("\(error)")
        }
        guard !deletesFirst else { return outcome }
        if outcome == .done {
            await end(old)
        } else {
            let kept = state.withLock { s -> Bool in
                guard !s.closed else { return false }
                s.link = old
                return true
            }
            await link.pc.close()
            if !kept { await end(old) }
        }
        return outcome
    }

    /// What a server's refusal means for recovery.
    static func outcome(of error: SignalingError) -> ExchangeOutcome {
        switch error.status {
        case nil: return .retry(error.description)                       // no answer: unreachable
        case 401, 403: return .fatal(error.description)                   // credentials: no attempt can pass
        case 404, 405, 422, 501: return .gone(error.description)          // no session, or no restart by PATCH
        default: return .retry(error.description)                        // busy (409), overloaded, …
        }
    }
}

/// `StreamingSession`'s events as calls (Google's SDK style; the reference app's client has a
/// delegate), on the connections' loop thread.
public protocol StreamingSessionDelegate: AnyObject, Sendable {
    func streamingSession(_ session: StreamingSession, didReport event: ReconnectEvent)
}
