import CShim
import Foundation
import HTTP
import PeerConnection
import RTPMedia
import STUN
import Signaling
import Locks
import SeededRandom
import Transport

/// `swiftrtc serve`: an embedded SRS-compatible WebRTC server. Publishers push over SRS's JSON
/// API (`/rtc/v1/publish/`) or WHIP (`/rtc/v1/whip/`), players pull over `/rtc/v1/play/` or WHEP
/// (`/rtc/v1/whep/`); RTP is forwarded without transcoding, all sessions on one UDP port.
public final class RelayServer: Sendable {
    public let loop: EventLoop
    private let mux: any SharedSocket
    private let http: Locked<HTTPServer?>
    /// P2P signaling at /rtc/v1/signal/?room=NAME, on the same HTTP server (nil in process).
    public let signaling: SignalServer?
    let state: LoopBound<RelayState>
    let log: @Sendable (String) -> Void
    public let policy: AccessPolicy
    /// `--prefer-codec`: answer publishers with this video codec first; nil keeps the offerer's order.
    public let preferredVideoCodec: RtpCodecCapability?
    /// A session that has not connected by then is ended with everything it holds (a fake offer
    /// would otherwise squat a stream name until ICE gave up).
    public let connectTimeout: Duration
    /// `--takeover`: a new publisher replaces the current one at once. Without it, only one
    /// that sent nothing for `publisherSilence` can be replaced.
    public let takeover: Bool
    /// A simulcast's players are answered transport-cc, and each one's layer follows a send-side
    /// estimate of its link (`ViewerEstimate`); false (`--player-remb`): their REMB.
    public let playerTransportCC: Bool
    /// How the relay recognises a publisher back on a new session (its address changed, its
    /// NAT rebound, its ICE failed and it reconnected): by its old session's silence, not by an
    /// identity — a token is shared by everyone given it and means no one in particular. A new
    /// publish to a name whose publisher has sent no RTP for `publisherSilence` replaces it; one
    /// whose publisher has been silent for `silenceHint` (a live one sends every 20-33 ms) is
    /// held until the silence reaches `publisherSilence` and then replaces it, or gets 409 if
    /// the publisher spoke again meanwhile. So a client back at once after losing its path
    /// takes its stream over half a second after the loss, without retrying, and the viewers,
    /// on their own sessions, continue (`SourceSwitchRewriter`); a live publisher's name is
    /// refused at once as before. Was 3 s (a reconnecting client got 409s for 3 s), then 1 s:
    /// the hold is all a client back at once waits before it can even connect, and at 1 s it was
    /// most of the second a viewer may wait (CI: 1.065 s). 0.5 s is 15 frames and 25 audio
    /// packets missing: a path that is gone, not jitter.
    public let publisherSilence: Duration = .milliseconds(500)
    /// A publisher session that has not connected this long after its offer gives way (as a
    /// rule the same client's previous attempt, whose path is still down): ICE and DTLS over a
    /// slow path can take most of it.
    public let connectGrace: Duration = .seconds(1)
    public static let silenceHint: Duration = .milliseconds(100)
    /// Sessions from one IP address that have not connected yet (fake offers cost a
    /// PeerConnection each until `connectTimeout`); one more gets 429.
    public let maxPendingPerAddress: Int
    /// Each session's `timingSeed` when the relay was given one (simulations replay), else nil.
    private let timingSeeds: Locked<SplitMix64>?
    public let httpHost: String
    public let httpPort: UInt16
    public let udpAddress: SocketAddress
    public let advertisedAddress: SocketAddress
    /// `--record`: the DVR; nil when off.
    let dvr: RelayDVR?

    /// An open `policy` (no tokens, no hook) binds loopback only, unless `allowOpenOnNetwork`
    /// (`--no-auth`): anyone who reaches the port could otherwise publish, play and list.
    public convenience init(httpHost: String = "127.0.0.1", httpPort: UInt16 = 1985, udpHost: String = "127.0.0.1", udpPort: UInt16 = 8000,
                            candidate: String? = nil, policy: AccessPolicy = .init(), allowOpenOnNetwork: Bool = false,
                            preferredVideoCodec: RtpCodecCapability? = nil, connectTimeout: Duration = .seconds(10), takeover: Bool = false,
                            maxPendingPerAddress: Int = 64, recording: RecordingOptions? = nil, playerTransportCC: Bool = true,
                            log: @escaping @Sendable (String) -> Void = { print($0) }) async throws {
        if policy.isOpen, !allowOpenOnNetwork {
            for (flag, host) in [("--http", httpHost), ("--udp", udpHost)] where !isLoopback(host) {
                throw PeerConnectionError(.invalidArgument, "\(flag) \(host) is not loopback: give --publish-token/--play-token/--api-token "
                                          + "(or --hook), or say --no-auth to serve anyone who can reach it")
            }
        }
        let loop = try EventLoop(name: "swiftrtc-relay")
        guard let bind = SocketAddress(host: udpHost, port: udpPort) else {
            throw PeerConnectionError(.invalidArgument, "--udp host \(udpHost) is not an IP address")
        }
        let mux = try await loop.submit { try UDPMux(loop: loop, bind: bind) }
        try self.init(loop: loop, media: mux, httpHost: httpHost, httpPort: httpPort, candidate: candidate, policy: policy,
                      preferredVideoCodec: preferredVideoCodec, connectTimeout: connectTimeout, takeover: takeover,
                      maxPendingPerAddress: maxPendingPerAddress, recording: recording, playerTransportCC: playerTransportCC, log: log)
    }

    /// The relay on `media`'s loop and shared socket. `httpPort` nil: no HTTP server and no
    /// signaling — requests are served in process through `handle(_:)` (a relay on a
    /// simulated loop and a `VirtualMux`, for tests that run whole sessions in virtual time).
    package init(loop: EventLoop, media: any SharedSocket, httpHost: String = "127.0.0.1", httpPort: UInt16?, candidate: String? = nil,
         policy: AccessPolicy = .init(), preferredVideoCodec: RtpCodecCapability? = nil, connectTimeout: Duration = .seconds(10),
         takeover: Bool = false, maxPendingPerAddress: Int = 64, recording: RecordingOptions? = nil, playerTransportCC: Bool = true,
         timingSeed: UInt64? = nil, log: @escaping @Sendable (String) -> Void) throws {
        self.loop = loop
        self.timingSeeds = timingSeed.map { Locked(SplitMix64(seed: $0)) }
        self.mux = media
        self.udpAddress = media.localAddress
        if let candidate {
            guard let c = SocketAddress(host: candidate, port: udpAddress.port) else {
                throw PeerConnectionError(.invalidArgument, "--candidate \(candidate) is not an IP address")
            }
            advertisedAddress = c
        } else if udpAddress.ip == SocketAddress(host: "0.0.0.0", port: 0)?.ip {
            throw PeerConnectionError(.invalidArgument, "--udp 0.0.0.0 needs --candidate IP: the address players and publishers should send to")
        } else {
            advertisedAddress = udpAddress
        }
        let escapedLog: @Sendable (String) -> Void = { log(escapedForLog($0)) }
        self.log = escapedLog
        self.policy = policy
        dvr = recording.map { options in
            RelayDVR(options: options, loop: loop, log: escapedLog, onClosed: Self.recordedFile(policy: policy, log: escapedLog))
        }
        self.preferredVideoCodec = preferredVideoCodec
        self.connectTimeout = connectTimeout
        self.takeover = takeover
        self.playerTransportCC = playerTransportCC
        self.maxPendingPerAddress = maxPendingPerAddress
        self.http = Locked(nil)
        self.httpHost = httpHost
        self.state = LoopBound(RelayState(), loop: loop)
        guard let httpPort else {
            self.httpPort = 0
            self.signaling = nil
            loop.execute { [self] in scheduleFeedback() }
            return
        }
        let target = WeakBox<RelayServer>()
        let server = try HTTPServer(host: httpHost, port: httpPort) { request in
            guard let relay = target.value else { return .text(503, "shutting down\n") }
            return await relay.handle(request)
        }
        self.httpPort = server.port
        server.corsOrigins = policy.corsOrigins
        server.allowedHosts = policy.servedHosts(boundTo: httpHost)
        if !policy.isOpen { server.credentialCheck = { [policy] head in policy.credentialed(head) } }
        self.signaling = SignalServer(mountingOn: server, options: .init(access: policy.signalAccess), log: self.log)
        http.withLock { $0 = server }
        target.value = self
        server.start()
        loop.execute { [self] in scheduleFeedback() }
    }

    /// Once a second: receiver reports and REMB to every publisher, sender reports to every player (loop thread).
    /// On RFC 3550 timing (`RTCPScheduler`, about once a second, randomized).
    private func scheduleFeedback() {
        let now = loop.now
        if state.value.reportSchedule == nil { state.value.reportSchedule = RTCPScheduler(media: .video, start: now) }
        guard let deadline = state.value.reportSchedule?.nextDeadline() else { return }
        loop.schedule(at: deadline) { [weak self] in
            guard let self else { return }
            let now = self.loop.now
            if self.state.value.reportSchedule?.poll(now: now) == true {
                for stream in self.state.value.streams.values {
                    stream.sendPublisherFeedback(maxBitrate: UInt64(RelayStream.publisherMaxBitrate), now: now)
                    stream.sendPlayerReports(now: now)
                }
            }
            self.scheduleFeedback()
        }
    }

    public var url: String { "http://\(httpHost):\(httpPort)" }
    /// The signaling endpoint's WebSocket URL (add `?room=NAME`).
    public var signalURL: String { "ws://\(httpHost):\(httpPort)\(SignalServer.path)" }

    public func stop() async {
        let server = http.withLock { s -> HTTPServer? in defer { s = nil }; return s }
        server?.stop()
        let sessions = (try? await loop.submit { [state] in Array(state.value.sessions.values) }) ?? []
        // Every recording gets its trailer (and the hook its on_dvr) before the loop goes.
        _ = try? await loop.submit { [state] in for stream in state.value.streams.values { stream.recording?.stop() } }
        await dvr?.idle()
        for s in sessions { await s.pc.close() }
        _ = try? await loop.submit { [mux] in mux.close() }
        loop.shutdown()
    }

    /// Summary of every stream, as `GET /api/v1/streams/` serves it.
    public func streams() async -> [[String: Any]] {
        let rows = (try? await loop.submit { [self] in state.value.streams.values.sorted { $0.id < $1.id }.map(self.describe) }) ?? []
        return rows.map(\.value)
    }

    // MARK: HTTP

    package func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let path = request.path.hasSuffix("/") ? request.path : request.path + "/"
        switch (request.method, path) {
        case ("POST", "/rtc/v1/publish/"): return await srsAPI(request, role: .publisher)
        case ("POST", "/rtc/v1/play/"): return await srsAPI(request, role: .player)
        case ("POST", "/rtc/v1/whip/"): return await whip(request, role: .publisher)
        case ("POST", "/rtc/v1/whep/"): return await whip(request, role: .player)
        case ("DELETE", "/rtc/v1/whip/"), ("DELETE", "/rtc/v1/whep/"):
            // The resource's secret is the capability: no bearer token needed (RFC 9725 lets
            // the Location itself authorize), and no public id works here.
            guard let secret = request.queryValue("token"), await endSession(secret: secret) else {
                return .text(404, "no such session\n")
            }
            return .empty(200)
        case ("PATCH", "/rtc/v1/whip/"), ("PATCH", "/rtc/v1/whep/"):
            return await patchSession(request)   // trickle and ICE restart (RelayTrickle.swift)
        case ("GET", "/api/v1/versions/"):
            return json(["code": 0, "server": serverID, "data": ["major": 6, "minor": 0, "revision": 0, "version": "6.0.0"],
                         "service": "swiftrtc", "pid": Int(getpid())])
        case ("GET", "/api/v1/streams/"):
            if let denied = apiDenied(request) { return denied }
            return json(["code": 0, "server": serverID, "streams": await streams()])
        case ("GET", "/metrics/"):
            if let denied = apiDenied(request) { return denied }
            let text = (try? await loop.submit { [state] in RelayMetrics.render(state.value) }) ?? ""
            return HTTPResponse(status: 200, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"], body: Array(text.utf8))
        case ("GET", "/api/v1/clients/"):
            if let denied = apiDenied(request) { return denied }
            return json(["code": 0, "server": serverID, "clients": await clients()])
        case ("DELETE", _) where path.hasPrefix("/api/v1/clients/"):
            if let denied = apiDenied(request) { return denied }
            let id = String(path.dropFirst("/api/v1/clients/".count).dropLast())
            guard await kick(id: id) else { return json(["code": 404, "error": "no client \(id)"], status: 404) }
            return json(["code": 0])
        case ("GET", "/"):
            return .redirect(302, to: "/players/")
        case ("GET", "/players/"):
            return .html(200, playerPage)
        case ("GET", "/call/"):
            return .html(200, callPage)
        default:
            return json(["code": 404, "error": "not found: \(request.method) \(request.path)"], status: 404)
        }
    }

    private var serverID: String { "swiftrtc-\(httpPort)" }

    private func json(_ object: [String: Any], status: Int = 200) -> HTTPResponse {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
        return .json(status, Array(data))
    }

    private func apiError(_ message: String, code: Int = 400) -> HTTPResponse {
        // SRS answers errors with HTTP 200 and a code; credentials are refused with a real 401/403.
        json(["code": code, "error": message], status: [401, 403].contains(code) ? code : 200)
    }

    private func apiDenied(_ request: HTTPRequest) -> HTTPResponse? {
        guard case .deny(let status, let message) = policy.admitAPI(presented: AccessPolicy.presentedToken(request)) else { return nil }
        return json(["code": status, "error": message], status: status)
    }

    private func srsAPI(_ request: HTTPRequest, role: RelaySession.Role) async -> HTTPResponse {
        // Not text/plain: a cross-site page could send that without a preflight (SRS's own SDK
        // sends application/json).
        guard request.hasMediaType("application/json") else {
            return json(["code": 415, "error": "Content-Type must be application/json"], status: 415)
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            return apiError("the body is not a JSON object")
        }
        guard let streamURL = object["streamurl"] as? String else { return apiError("missing \"streamurl\"") }
        guard let sdp = object["sdp"] as? String, sdp.hasPrefix("v=") else { return apiError("missing or invalid \"sdp\"") }
        let parsed: SRSClient.StreamURL
        do { parsed = try SRSClient.StreamURL(parsing: streamURL) } catch { return apiError("\(error)") }
        do {
            let token = AccessPolicy.presentedToken(request, streamQuery: parsed.query)
            let (session, answer) = try await createSession(role: role, app: parsed.app, stream: parsed.stream, offer: sdp,
                                                            remote: request.remoteAddress, token: token, param: parsed.query ?? "")
            return json(["code": 0, "server": serverID, "service": "swiftrtc", "pid": Int(getpid()), "sdp": answer,
                         "sessionid": session.id])
        } catch let error as RelayError {
            return apiError(error.message, code: error.code)
        } catch {
            return apiError("\(error)")
        }
    }

    private func whip(_ request: HTTPRequest, role: RelaySession.Role) async -> HTTPResponse {
        guard let app = request.queryValue("app"), let stream = request.queryValue("stream"), !app.isEmpty, !stream.isEmpty else {
            return .text(400, "WHIP/WHEP URLs need ?app=APP&stream=STREAM\n")
        }
        guard request.hasMediaType("application/sdp") else {
            return .text(415, "Content-Type must be application/sdp\n")
        }
        let offer = String(decoding: request.body, as: UTF8.self)
        do {
            let (session, answer) = try await createSession(role: role, app: app, stream: stream, offer: offer, remote: request.remoteAddress,
                                                            token: AccessPolicy.presentedToken(request), param: request.query.filter { $0.0 != "token" }.map { "\($0.0)=\($0.1)" }.joined(separator: "&"))
            let kind = role == .publisher ? "whip" : "whep"
            var created = HTTPResponse.sdp(201, answer, location: "/rtc/v1/\(kind)/?action=delete&token=\(session.secret)&app=\(app)&stream=\(stream)")
            addPatchHeaders(&created, localDescription: answer)
            return created
        } catch let error as RelayError {
            return .text(error.httpStatus, error.message + "\n")
        } catch {
            return .text(400, "\(error)\n")
        }
    }

    // MARK: sessions (state lives on the loop)

    private func createSession(role: RelaySession.Role, app: String, stream name: String, offer: String,
                               remote: String, token: String?, param: String) async throws -> (RelaySession, String) {
        try StreamName.validate(app, what: "app")
        try StreamName.validate(name, what: "stream")
        try OfferLimits.check(offer)
        if case .deny(let status, let message) = policy.admit(role, presented: token) { throw RelayError(message, code: status) }
        let key = "\(app)/\(name)"
        let id = randomSessionID()
        if case .deny(let status, let message) = await policy.askHook(action: role == .publisher ? "on_publish" : "on_play",
                                                                      app: app, stream: name, param: param, ip: remote, client: id) {
            throw RelayError(message, code: status)
        }
        // Admission and the codecs a player may use are decided from the stream as it is now. A
        // publisher reserves the name here, atomically with the check, until it attaches or fails.
        var admission = try await admit(role: role, key: key, remote: remote, mayWait: true)
        if case .waitForSilence(let wait) = admission {
            log("serve: publish to \(key) from \(remote) held \(wait): its publisher has gone quiet")
            await sleepOnLoop(wait)
            admission = try await admit(role: role, key: key, remote: remote, mayWait: false)
        }
        guard case .admitted(let published, let replaced, let transportCC) = admission else { throw RelayError("stream \(key) is already being published", code: 409) }
        if let replaced { await replaced.pc.close() }
        do {
            return try await attachSession(role: role, key: key, app: app, name: name, id: id, offer: offer, remote: remote,
                                           published: published, transportCC: transportCC, param: param)
        } catch {
            if role == .publisher { _ = try? await loop.submit { [state] in state.value.reserved.remove(key) } }
            throw error
        }
    }

    enum Admission {
        /// `transportCC`: a player to answer transport-cc (`playerTransportCC`, and the stream has
        /// layers to choose from: simulcast or temporal).
        case admitted(published: [MediaKind: RtpCodecParameters], replaced: RelaySession?, transportCC: Bool = false)
        /// The stream's publisher has gone quiet: ask again after this (see `publisherSilence`).
        case waitForSilence(Duration)
    }

    /// Whether a session may be set up for `key` now (see `publisherSilence`); a publisher
    /// reserves the name, atomically with the check, until it attaches or fails.
    private func admit(role: RelaySession.Role, key: String, remote: String, mayWait: Bool) async throws -> Admission {
        let ip = HTTPServer.ipAddress(of: remote)
        return try await loop.submit { [self, state] in
            let pending = state.value.sessions.values.reduce(0) { $0 + (!$1.connected && HTTPServer.ipAddress(of: $1.remoteAddress) == ip ? 1 : 0) }
            guard pending < maxPendingPerAddress else {
                throw RelayError("too many sessions from \(ip) that have not connected (\(pending))", code: 429)
            }
            let stream = state.value.streams[key]
            switch role {
            case .publisher:
                guard !state.value.reserved.contains(key) else {
                    throw RelayError("stream \(key) is already being published (another publish is being set up)", code: 409)
                }
                var replaced: RelaySession?
                if let stream, let p = stream.publisher, p.pc.connectionState != .failed, p.pc.connectionState != .closed {
                    // A live publisher keeps its name; one that went silent (killed, unplugged, or
                    // coming back on this new session: ICE-lite would notice only after 30 s) or
                    // any, with --takeover, gives way.
                    let quiet = loop.now - (stream.lastPublisherPacketAt ?? p.created)
                    // One that has not connected a second after its offer is, as a rule, the same
                    // client's previous attempt (its path is still down): it gives way too, or a
                    // reconnecting client would get 409s until its `connectTimeout`.
                    let silent = p.connected ? quiet >= publisherSilence : loop.now - p.created >= connectGrace
                    if !takeover && !silent {
                        if mayWait && p.connected && quiet >= Self.silenceHint { return .waitForSilence(publisherSilence - quiet) }
                        throw RelayError("stream \(key) is already being published", code: 409)
                    }
                    remove(p, reason: !silent ? "replaced (takeover)" : p.connected ? "replaced (silent)" : "replaced (never connected)")
                    replaced = p
                }
                state.value.reserved.insert(key)
                return .admitted(published: [:], replaced: replaced)
            case .player:
                guard let stream, stream.publisher != nil else { throw RelayError("stream \(key) is not published", code: 404) }
                var codecs: [MediaKind: RtpCodecParameters] = [:]
                for kind in [MediaKind.audio, .video] { codecs[kind] = stream.publishedCodec(kind) }
                return .admitted(published: codecs, replaced: nil, transportCC: playerTransportCC && stream.publishesLayers)
            }
        }
    }

    /// Waits on the loop's clock (virtual time on a simulated loop).
    private func sleepOnLoop(_ duration: Duration) async {
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute { [loop] in _ = loop.schedule(at: loop.now.advanced(by: duration)) { done.resume() } }
        }
    }

    private func nextTimingSeed() -> UInt64? { timingSeeds?.withLock { $0.next() } }

    private func attachSession(role: RelaySession.Role, key: String, app: String, name: String, id: String, offer: String,
                               remote: String, published: [MediaKind: RtpCodecParameters], transportCC: Bool,
                               param: String) async throws -> (RelaySession, String) {
        let pc: PeerConnection
        switch role {
        case .publisher:
            let video = RelayCodecs.publisherVideo(preferred: preferredVideoCodec)
            pc = try makePassThroughPeer(loop: loop, mux: mux, direction: .recvonly, advertised: advertisedAddress,
                                         videoCodecs: video.codecs, codecOrder: video.order, timingSeed: nextTimingSeed())
        case .player:
            pc = try makePassThroughPeer(loop: loop, mux: mux, direction: .sendonly, advertised: advertisedAddress,
                                         audioCodecs: RelayCodecs.player(published[.audio], kind: .audio, transportCC: transportCC),
                                         videoCodecs: RelayCodecs.player(published[.video], kind: .video, transportCC: transportCC),
                                         transportCC: transportCC, timingSeed: nextTimingSeed())
        }
        let session = RelaySession(id: id, secret: randomSecret(), role: role, pc: pc, stream: key, remoteAddress: remote, created: loop.now,
                                   param: param)
        let sdp: String
        do { sdp = try await answer(pc, offer: offer) } catch {
            await pc.close()
            throw RelayError("\(error)", code: 400)
        }
        if role == .player, !pc.transceivers.contains(where: { $0.currentDirection?.sends == true }) {
            await pc.close()
            throw RelayError("the player's offer accepts none of the codecs stream \(key) is published with "
                             + "(\(published.values.map(\.mimeType).sorted().joined(separator: ", ")))", code: 400)
        }
        try await loop.submit { [state, log, loop, dvr] in
            let stream = state.value.streams[key] ?? RelayStream(app: app, name: name, loop: loop, dvr: dvr, log: log)
            state.value.streams[key] = stream
            state.value.sessions[id] = session
            if role == .publisher {
                state.value.reserved.remove(key)
                stream.attachPublisher(session)
            } else {
                guard stream.publisher != nil else { throw RelayError("stream \(key) stopped publishing", code: 404) }
                stream.attachPlayer(session)
            }
            // The session owns the pc and its delegate, which holds the server and the session
            // weakly (a strong reference was a cycle that kept every ended session's
            // PeerConnection alive).
            let delegate = RelaySessionDelegate(server: self, session: session)
            session.delegate = delegate
            pc.delegate = delegate
            log("serve: \(role.rawValue) \(id) for \(key) from \(remote)")
            _ = self.loop.schedule(at: self.loop.now.advanced(by: self.connectTimeout)) { [weak self, weak session] in
                guard let self, let session, !session.connected, self.state.value.sessions[id] === session else { return }
                self.remove(session, reason: "never connected")
                Task { await session.pc.close() }
            }
        }
        return (session, sdp)
    }

    /// Loop thread (PeerConnection events are delivered there).
    fileprivate func sessionStateChanged(_ session: RelaySession, _ s: PeerConnectionState) {
        let relay = state.value
        switch s {
        case .connected:
            session.connected = true
            if let stream = relay.streams[session.stream] {
                if session.role == .player {
                    session.mapCodecs(from: stream)
                    stream.playerConnected(session, now: loop.now)   // a new player sees a picture at once
                } else {
                    stream.requestKeyframe(now: loop.now, untilSent: true)
                }
            }
            log("serve: \(session.role.rawValue) \(session.id) connected (\(session.stream))")
        case .failed, .closed:
            remove(session, reason: s.rawValue)
        default:
            break
        }
    }

    private func remove(_ session: RelaySession, reason: String) {
        let relay = state.value
        guard relay.sessions.removeValue(forKey: session.id) != nil else { return }
        if let stream = relay.streams[session.stream] {
            if stream.publisher === session { stream.publisherLeft() }
            stream.players[session.id] = nil
            if stream.publisher == nil && stream.players.isEmpty {
                relay.retired = relay.retired + stream.counters
                relay.streams[session.stream] = nil
            }
        }
        log("serve: \(session.role.rawValue) \(session.id) left \(session.stream) (\(reason))")
        scheduleTrim()
    }

    /// A few seconds after sessions end, hand freed heap back to the OS. glibc keeps what a burst
    /// of concurrent sessions used (~180 KB each) as its high-water mark for good; measured: 500
    /// ghost sessions timing out left RSS +90 MB without this, about +2 MB with it. Loop thread.
    private func scheduleTrim() {
        let relay = state.value
        guard !relay.trimScheduled else { return }
        relay.trimScheduled = true
        loop.schedule(at: loop.now.advanced(by: .seconds(2))) { [weak self] in
            guard let self else { return }
            self.state.value.trimScheduled = false
            releaseFreeHeap()
        }
    }

    /// DELETE of a session resource: found by its secret only.
    private func endSession(secret: String) async -> Bool {
        guard let session = try? await loop.submit({ [state] in
            state.value.sessions.values.first { AccessPolicy.same(secret, $0.secret) }
        }) else { return false }
        await end(session, reason: "deleted")
        return true
    }

    /// The API's kick (`DELETE /api/v1/clients/ID`), by public id; needs the API token.
    private func kick(id: String) async -> Bool {
        guard let session = try? await loop.submit({ [state] in state.value.sessions[id] }) else { return false }
        await end(session, reason: "kicked")
        return true
    }

    /// Removed first, so the log and the listing say why, not just that the connection closed.
    private func end(_ session: RelaySession, reason: String) async {
        _ = try? await loop.submit { [self] in remove(session, reason: reason) }
        await session.pc.close()
    }

    /// Every session, as `GET /api/v1/clients/` serves it (SRS's shape, the fields we have).
    public func clients() async -> [[String: Any]] {
        let rows = (try? await loop.submit { [state, loop] in
            state.value.sessions.values.sorted { $0.id < $1.id }.map { s in
                SendableDictionary(value: ["id": s.id, "stream": s.stream, "ip": s.remoteAddress, "type": "rtc",
                                           "publish": s.role == .publisher, "connected": s.connected,
                                           "alive": (loop.now - s.created).components.seconds])
            }
        }) ?? []
        return rows.map(\.value)
    }

    private func describe(_ s: RelayStream) -> SendableDictionary {
        var row: [String: Any] = [
            "id": s.id, "app": s.app, "name": s.name, "url": "webrtc://\(httpHost)/\(s.app)/\(s.name)",
            "clients": s.players.count + (s.publisher == nil ? 0 : 1),
            "publish": ["active": s.publisher?.connected ?? false, "cid": s.publisher?.id ?? ""],
            "players": s.players.values.map { p -> [String: Any] in
                var player: [String: Any] = ["id": p.id, "connected": p.connected, "remote": p.remoteAddress]
                if let rid = s.layerRID(of: p) { player["layer"] = rid }
                // VP8 temporal layers: the highest it is sent (absent: all).
                if let tid = p.output(.video, { $0.temporal.current }) { player["temporal_layer"] = Int(tid) }
                if let kbps = p.output(.video, { $0.estimate.bitrate }).map({ $0 / 1000 }) { player["estimate_kbps"] = kbps }
                if let kbps = p.output(.video, { $0.estimate.lastREMB }).map({ $0 / 1000 }) { player["remb_kbps"] = kbps }
                if p.output(.video, { $0.allocator.probing }) { player["probing"] = true }
                return player
            },
            "kbps": ["recv_30s": s.bitrate.kbps(now: loop.now), "send_30s": s.bitrate.kbps(now: loop.now) * s.players.values.filter(\.connected).count],
            "packets": ["in": s.packetsIn, "out": s.packetsOut],
        ]
        if let v = s.publishedCodec(.video) {
            var video: [String: Any] = ["codec": v.mimeType.split(separator: "/").last.map(String.init) ?? v.mimeType]
            if let size = s.videoSize { video["width"] = size.width; video["height"] = size.height }
            let layers = s.layers
            if !layers.isEmpty {
                video["layers"] = layers.map { l -> [String: Any] in
                    var layer: [String: Any] = ["rid": l.rid, "kbps": l.kbps, "keyframe_requests": l.keyframeRequests]
                    if let w = l.width, let h = l.height { layer["width"] = w; layer["height"] = h }
                    return layer
                }
            }
            row["video"] = video
        }
        if let a = s.publishedCodec(.audio) {
            row["audio"] = ["codec": a.mimeType.split(separator: "/").last.map(String.init) ?? a.mimeType, "sample_rate": a.clockRate]
        }
        if let recording = s.recording {
            var dvr: [String: Any] = ["active": recording.active]
            if let file = recording.file { dvr["file"] = file }
            if let failure = recording.failure { dvr["error"] = failure }
            row["recording"] = dvr
        }
        return SendableDictionary(value: row)
    }

    private func randomSessionID() -> String {
        String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }

    /// 128 bits from the system's CSPRNG (getrandom on Linux), hex.
    private func randomSecret() -> String {
        var g = SystemRandomNumberGenerator()
        return (0..<2).map { _ in
            let hex = String(g.next() as UInt64, radix: 16)
            return String(repeating: "0", count: 16 - hex.count) + hex
        }.joined()
    }
}

/// State the relay keeps; lives on its loop.
final class RelayState: @unchecked Sendable {
    // @unchecked: loop thread only.
    var streams: [String: RelayStream] = [:]
    var sessions: [String: RelaySession] = [:]
    /// Streams whose publish is being set up (admitted, not attached yet).
    var reserved: Set<String> = []
    var trimScheduled = false
    /// When the next round of reports to publishers and players is due.
    var reportSchedule: RTCPScheduler?
    /// Counters of streams that have ended (the totals in /metrics keep them).
    var retired = RelayCounters()
}

struct SendableDictionary: @unchecked Sendable {
    // @unchecked: built on the loop and only read afterwards (JSON values).
    let value: [String: Any]
}

struct RelayError: Error, CustomStringConvertible {
    let message: String
    let code: Int
    init(_ message: String, code: Int) {
        self.message = message
        self.code = code
    }
    var description: String { message }
    var httpStatus: Int { [400, 401, 403, 404, 409, 429].contains(code) ? code : 400 }
}

/// 127.0.0.0/8, ::1 and "localhost".
func isLoopback(_ host: String) -> Bool {
    host == "localhost" || host == "::1" || host.hasPrefix("127.")
}

func releaseFreeHeap() {
    _ = swiftrtc_release_free_heap()
}

/// One session's PeerConnection events, on the relay's loop thread (where the relay's
/// connections run): state changes move the session; errors go to the operator's log.
private final class RelaySessionDelegate: PeerConnectionDelegate {
    private weak let server: RelayServer?
    private weak let session: RelaySession?

    init(server: RelayServer, session: RelaySession) {
        self.server = server
        self.session = session
    }

    func peerConnection(_ peerConnection: PeerConnection, didChange newState: PeerConnectionState) {
        guard let server, let session else { return }
        server.sessionStateChanged(session, newState)
    }

    /// A publisher's path moved (a NAT rebinding): a keyframe request made on its return may have
    /// gone to the old port.
    func peerConnection(_ peerConnection: PeerConnection, didSelectPairFrom local: String, to remote: String) {
        guard let server, let session, session.connected, session.role == .publisher,
              let stream = server.state.value.streams[session.stream], stream.publisher === session else { return }
        stream.publisherPathMoved(now: server.loop.now)
    }

    /// Why a session failed (DTLS, TURN) belongs in the operator's log.
    func peerConnection(_ peerConnection: PeerConnection, didReport error: PeerConnectionError) {
        guard let server, let session else { return }
        server.log("serve: \(session.role.rawValue) \(session.id): \(error)")
    }
}
