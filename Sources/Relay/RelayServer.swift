import Foundation
import HTTP
import PeerConnection
import STUN
import Signaling
import Synchronization
import Transport

/// `swiftrtc serve`: an embedded SRS-compatible WebRTC server. Publishers push over SRS's JSON
/// API (`/rtc/v1/publish/`) or WHIP (`/rtc/v1/whip/`), players pull over `/rtc/v1/play/` or WHEP
/// (`/rtc/v1/whep/`); RTP is forwarded without transcoding, all sessions on one UDP port.
public final class RelayServer: Sendable {
    public let loop: EventLoop
    private let mux: UDPMux
    private let http: Mutex<HTTPServer?>
    /// P2P signaling at /rtc/v1/signal/?room=NAME, on the same HTTP server.
    public let signaling: SignalServer
    private let state: LoopBound<RelayState>
    private let log: @Sendable (String) -> Void
    public let httpHost: String
    public let httpPort: UInt16
    public let udpAddress: SocketAddress
    public let advertisedAddress: SocketAddress

    public init(httpHost: String = "127.0.0.1", httpPort: UInt16 = 1985, udpHost: String = "127.0.0.1", udpPort: UInt16 = 8000,
                candidate: String? = nil, log: @escaping @Sendable (String) -> Void = { print($0) }) async throws {
        let loop = try EventLoop(name: "swiftrtc-relay")
        guard let bind = SocketAddress(host: udpHost, port: udpPort) else {
            throw PeerConnectionError("--udp host \(udpHost) is not an IP address")
        }
        self.loop = loop
        self.mux = try await loop.submit { try UDPMux(loop: loop, bind: bind) }
        self.udpAddress = mux.socket.localAddress
        if let candidate {
            guard let c = SocketAddress(host: candidate, port: udpAddress.port) else {
                throw PeerConnectionError("--candidate \(candidate) is not an IP address")
            }
            advertisedAddress = c
        } else if udpAddress.ip == SocketAddress(host: "0.0.0.0", port: 0)?.ip {
            throw PeerConnectionError("--udp 0.0.0.0 needs --candidate IP: the address players and publishers should send to")
        } else {
            advertisedAddress = udpAddress
        }
        self.log = log
        self.http = Mutex(nil)
        self.httpHost = httpHost
        self.state = LoopBound(RelayState())
        let target = WeakBox<RelayServer>()
        let server = try HTTPServer(host: httpHost, port: httpPort) { request in
            guard let relay = target.value else { return .text(503, "shutting down\n") }
            return await relay.handle(request)
        }
        self.httpPort = server.port
        self.signaling = SignalServer(mountingOn: server, log: log)
        http.withLock { $0 = server }
        target.value = self
        server.start()
        try await loop.submit { [self] in scheduleFeedback() }
    }

    /// Once a second: receiver reports and REMB to every publisher (loop thread).
    private func scheduleFeedback() {
        loop.schedule(at: .now.advanced(by: .seconds(1))) { [weak self] in
            guard let self else { return }
            for stream in self.state.value.streams.values { stream.sendPublisherFeedback(maxBitrate: 5_000_000) }
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

    private func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let path = request.path.hasSuffix("/") ? request.path : request.path + "/"
        switch (request.method, path) {
        case ("POST", "/rtc/v1/publish/"): return await srsAPI(request, role: .publisher)
        case ("POST", "/rtc/v1/play/"): return await srsAPI(request, role: .player)
        case ("POST", "/rtc/v1/whip/"): return await whip(request, role: .publisher)
        case ("POST", "/rtc/v1/whep/"): return await whip(request, role: .player)
        case ("DELETE", "/rtc/v1/whip/"), ("DELETE", "/rtc/v1/whep/"):
            guard let token = request.queryValue("token"), await endSession(token) else {
                return .text(404, "no such session\n")
            }
            return .empty(200)
        case ("GET", "/api/v1/versions/"):
            return json(["code": 0, "server": serverID, "data": ["major": 6, "minor": 0, "revision": 0, "version": "6.0.0"],
                         "service": "swiftrtc", "pid": Int(getpid())])
        case ("GET", "/api/v1/streams/"):
            return json(["code": 0, "server": serverID, "streams": await streams()])
        case ("GET", "/"):
            return .redirect(302, to: "/players/")
        case ("GET", "/players/"):
            return .html(200, playerPage)
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
        json(["code": code, "error": message])   // SRS answers errors with HTTP 200 and a code
    }

    private func srsAPI(_ request: HTTPRequest, role: RelaySession.Role) async -> HTTPResponse {
        guard let object = try? JSONSerialization.jsonObject(with: Data(request.body)) as? [String: Any] else {
            return apiError("the body is not a JSON object")
        }
        guard let streamURL = object["streamurl"] as? String else { return apiError("missing \"streamurl\"") }
        guard let sdp = object["sdp"] as? String, sdp.hasPrefix("v=") else { return apiError("missing or invalid \"sdp\"") }
        let parsed: SRSClient.StreamURL
        do { parsed = try SRSClient.StreamURL(parsing: streamURL) } catch { return apiError("\(error)") }
        do {
            let (session, answer) = try await createSession(role: role, app: parsed.app, stream: parsed.stream, offer: sdp,
                                                            remote: request.remoteAddress)
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
        guard (request.headers["Content-Type"] ?? "").lowercased().hasPrefix("application/sdp") else {
            return .text(415, "Content-Type must be application/sdp\n")
        }
        let offer = String(decoding: request.body, as: UTF8.self)
        do {
            let (session, answer) = try await createSession(role: role, app: app, stream: stream, offer: offer, remote: request.remoteAddress)
            let kind = role == .publisher ? "whip" : "whep"
            return .sdp(201, answer, location: "/rtc/v1/\(kind)/?action=delete&token=\(session.id)&app=\(app)&stream=\(stream)")
        } catch let error as RelayError {
            return .text(error.httpStatus, error.message + "\n")
        } catch {
            return .text(400, "\(error)\n")
        }
    }

    // MARK: sessions (state lives on the loop)

    private func createSession(role: RelaySession.Role, app: String, stream name: String, offer: String,
                               remote: String) async throws -> (RelaySession, String) {
        let key = "\(app)/\(name)"
        // Admission and the codecs a player may use are decided from the stream as it is now.
        let published: [MediaKind: RtpCodecParameters] = try await loop.submit { [state] in
            let stream = state.value.streams[key]
            switch role {
            case .publisher:
                if let p = stream?.publisher, p.pc.peerConnectionState != .failed, p.pc.peerConnectionState != .closed {
                    throw RelayError("stream \(key) is already being published", code: 409)
                }
                return [:]
            case .player:
                guard let stream, stream.publisher != nil else { throw RelayError("stream \(key) is not published", code: 404) }
                var codecs: [MediaKind: RtpCodecParameters] = [:]
                for kind in [MediaKind.audio, .video] { codecs[kind] = stream.publishedCodec(kind) }
                return codecs
            }
        }
        let pc: PeerConnection
        switch role {
        case .publisher:
            pc = try makePassThroughPeer(loop: loop, mux: mux, direction: .recvonly, advertised: advertisedAddress,
                                         videoCodecs: [.h264, .vp8] + RtpCodecCapability.passThroughVideo)
        case .player:
            func only(_ kind: MediaKind) -> [RtpCodecCapability] {
                guard let c = published[kind] else { return [] }
                let isH264 = c.mimeType.lowercased().hasSuffix("h264")
                return [RtpCodecCapability(mimeType: c.mimeType, clockRate: c.clockRate, channels: c.channels,
                                           sdpFmtpLine: isH264 ? c.sdpFmtpLine : nil,
                                           rtcpFeedback: kind == .video ? [.nack, .pli, .fir] : [], preferredPayloadType: c.payloadType)]
            }
            pc = try makePassThroughPeer(loop: loop, mux: mux, direction: .sendonly, advertised: advertisedAddress,
                                         audioCodecs: only(.audio), videoCodecs: only(.video))
        }
        let id = randomSessionID()
        let session = RelaySession(id: id, role: role, pc: pc, stream: key, remoteAddress: remote)
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
        try await loop.submit { [state, log] in
            let stream = state.value.streams[key] ?? RelayStream(app: app, name: name)
            state.value.streams[key] = stream
            state.value.sessions[id] = session
            if role == .publisher {
                stream.attachPublisher(session)
            } else {
                guard stream.publisher != nil else { throw RelayError("stream \(key) stopped publishing", code: 404) }
                stream.attachPlayer(session)
            }
            pc.onEvent = { [weak self] event in
                guard case .connectionStateChanged(let s) = event, let self else { return }
                self.sessionStateChanged(session, s)
            }
            log("serve: \(role.rawValue) \(id) for \(key) from \(remote)")
        }
        return (session, sdp)
    }

    /// Loop thread (PeerConnection events are delivered there).
    private func sessionStateChanged(_ session: RelaySession, _ s: PeerConnectionState) {
        let relay = state.value
        switch s {
        case .connected:
            session.connected = true
            if let stream = relay.streams[session.stream] {
                if session.role == .player { session.mapCodecs(from: stream) }
                stream.requestKeyframe()   // a new player sees a picture at once
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
            if stream.publisher === session { stream.publisher = nil }
            stream.players[session.id] = nil
            if stream.publisher == nil && stream.players.isEmpty { relay.streams[session.stream] = nil }
        }
        log("serve: \(session.role.rawValue) \(session.id) left \(session.stream) (\(reason))")
    }

    private func endSession(_ id: String) async -> Bool {
        guard let session = try? await loop.submit({ [state] in state.value.sessions[id] }) else { return false }
        await session.pc.close()
        _ = try? await loop.submit { [self] in remove(session, reason: "deleted") }
        return true
    }

    private func describe(_ s: RelayStream) -> SendableDictionary {
        var row: [String: Any] = [
            "id": s.id, "app": s.app, "name": s.name, "url": "webrtc://\(httpHost)/\(s.app)/\(s.name)",
            "clients": s.players.count + (s.publisher == nil ? 0 : 1),
            "publish": ["active": s.publisher?.connected ?? false, "cid": s.publisher?.id ?? ""],
            "players": s.players.values.map { ["id": $0.id, "connected": $0.connected, "remote": $0.remoteAddress] },
            "kbps": ["recv_30s": s.bitrate.kbps, "send_30s": s.bitrate.kbps * s.players.values.filter(\.connected).count],
            "packets": ["in": s.packetsIn, "out": s.packetsOut],
        ]
        if let v = s.publishedCodec(.video) {
            var video: [String: Any] = ["codec": v.mimeType.split(separator: "/").last.map(String.init) ?? v.mimeType]
            if let size = s.videoSize { video["width"] = size.width; video["height"] = size.height }
            row["video"] = video
        }
        if let a = s.publishedCodec(.audio) {
            row["audio"] = ["codec": a.mimeType.split(separator: "/").last.map(String.init) ?? a.mimeType, "sample_rate": a.clockRate]
        }
        return SendableDictionary(value: row)
    }

    private func randomSessionID() -> String {
        String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }
}

/// State the relay keeps; lives on its loop.
final class RelayState: @unchecked Sendable {
    // @unchecked: loop thread only.
    var streams: [String: RelayStream] = [:]
    var sessions: [String: RelaySession] = [:]
}

/// A reference whose contents only the owning loop touches.
final class LoopBound<T: AnyObject>: @unchecked Sendable {
    // @unchecked: callers use `value` only on the loop thread (inside loop.submit or callbacks).
    let value: T
    init(_ value: T) { self.value = value }
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
    var httpStatus: Int { [400, 404, 409].contains(code) ? code : 400 }
}
