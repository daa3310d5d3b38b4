import Media
import PeerConnection
import Signaling

/// Publish to or play from a streaming server, shaped like the reference app's
/// `WebRTCClient(isPublish:)`: `webrtc://` URLs speak SRS's JSON API, `http(s)://` URLs speak
/// WHIP (publish) or WHEP (play).
///
/// The session reads its connection's `events` (for trickle ICE and `states`); the app may set
/// `peerConnection.delegate` to follow the connection itself.
public final class StreamingSession: Sendable {
    public enum Role: String, Sendable { case publish, play }

    public struct Options: Sendable {
        /// Bearer token for WHIP/WHEP.
        public var token: String?
        /// Overrides the SRS API URL derived from a webrtc:// URL.
        public var api: String?
        /// Video codecs to offer, preferred first (H.264 first, as the reference app does).
        public var videoCodecs: [RtpCodecCapability] = [.h264, .vp8]
        public var iceServers: [IceServer] = []
        public var configuration = PeerConnection.Configuration()
        public var timeout: Duration = .seconds(15)
        /// Accept any certificate on https signaling (self-signed included). Off by default.
        public var insecure: Bool = false
        /// WHIP/WHEP: POST the offer without waiting for gathering and PATCH the candidates found
        /// later (RFC 9725 §4.3.2); off, or against a server that refused a trickle PATCH, the
        /// POST waits for gathering to complete. SRS's API always waits.
        public var trickle = true
        /// Candidates arriving within this interval share one PATCH.
        public var trickleBatch: Duration = .milliseconds(30)
        /// A trickle PATCH that failed (other than "not supported"), for the app to report.
        public var onSignalingProblem: @Sendable (String) -> Void = { _ in }
        public init() {}
    }

    public let role: Role
    public let url: String
    public let options: Options
    public let peerConnection: PeerConnection
    private let whipSession = LockedValue<WHIPClient.Session?>(nil)
    /// WHIP/WHEP trickle and ICE restart (nil for SRS's API).
    private let ice: WHIPIceChannel?
    private let stateStreams = StateStreams()

    public init(role: Role, url: String, options: Options = Options()) throws {
        guard url.hasPrefix("webrtc://") || url.hasPrefix("http://") || url.hasPrefix("https://") else {
            throw SignalingError("\(url): expected webrtc:// (SRS API) or http(s):// (WHIP/WHEP)")
        }
        if url.hasPrefix("webrtc://") { _ = try SRSClient.StreamURL(parsing: url) }
        self.role = role
        self.url = url
        self.options = options
        var config = options.configuration
        config.iceServers += options.iceServers
        peerConnection = try PeerConnection(configuration: config)
        ice = url.hasPrefix("webrtc://") ? nil
            : WHIPIceChannel(client: WHIPClient(endpoint: url, token: options.token, timeout: options.timeout, insecure: options.insecure),
                             pc: peerConnection, batchInterval: options.trickleBatch, onProblem: options.onSignalingProblem)
        // The connection's events, in order, until it closes (or goes away with the session:
        // the task holds the stream, not the connection).
        let (events, ice, stateStreams) = (peerConnection.events, ice, stateStreams)
        Task {
            for await event in events {
                ice?.handle(event)
                if case .connectionStateChanged(let s) = event { stateStreams.yield(s) }
            }
            stateStreams.finish()
        }
    }

    /// Publishes the tracks (either may be nil); returns once media can flow.
    public func publish(video: VideoTrack?, audio: AudioTrack?) async throws {
        precondition(role == .publish, "publish() on a play session")
        if let audio {
            let t = try await peerConnection.addTransceiver(.audio, TransceiverInit(direction: .sendonly, streamIds: ["swiftrtc"]))
            t.sender.replaceTrack(audio)
        }
        if let video {
            let t = try await peerConnection.addTransceiver(.video, TransceiverInit(direction: .sendonly, streamIds: ["swiftrtc"]),
                                                            codecs: options.videoCodecs)
            t.sender.replaceTrack(video)
        }
        try await negotiate()
    }

    /// Plays the stream; returns the remote tracks (decoded frames arrive on them).
    public func play(video: Bool = true, audio: Bool = true) async throws -> (video: VideoTrack?, audio: AudioTrack?) {
        precondition(role == .play, "play() on a publish session")
        var a: RtpTransceiver?, v: RtpTransceiver?
        if audio { a = try await peerConnection.addTransceiver(.audio, TransceiverInit(direction: .recvonly)) }
        if video { v = try await peerConnection.addTransceiver(.video, TransceiverInit(direction: .recvonly), codecs: options.videoCodecs) }
        try await negotiate()
        return (v?.receiver.videoTrack, a?.receiver.audioTrack)
    }

    private func negotiate() async throws {
        let trickle = ice != nil && options.trickle && WHIPIceChannel.trickles(to: url)
        if trickle { ice?.attach() }
        let offer = try await peerConnection.createOffer()
        try await peerConnection.setLocalDescription(offer)
        // Trickle: the host candidates are there at once; the rest follow by PATCH.
        if !trickle { await peerConnection.waitForGatheringComplete(timeout: .seconds(3)) }
        let sdp = (peerConnection.localDescription ?? offer).sdp
        let answer: String
        if url.hasPrefix("webrtc://") {
            let srs = try SRSClient(url: url, apiOverride: options.api, timeout: options.timeout, insecure: options.insecure)
            let clientIP = localAddress(routingTo: srs.streamURL.host)
            answer = try await srs.exchange(role == .publish ? .publish : .play, offer: sdp, clientIP: clientIP).sdp
        } else {
            let client = WHIPClient(endpoint: url, token: options.token, timeout: options.timeout, insecure: options.insecure)
            ice?.offered(sdp)
            let session = try await client.publish(offer: sdp)
            whipSession.set(session)
            if trickle { ice?.start(session) }
            answer = session.answer
        }
        try await peerConnection.setRemoteDescription(SessionDescription(type: .answer, sdp: answer))
        try await peerConnection.waitConnected(timeout: options.timeout)
    }

    /// ICE restart (WHIP/WHEP only, RFC 9725 §4.3.3): new ICE credentials by PATCH, the
    /// server's back; DTLS and media go on over the new checks. Throws (the current ICE session
    /// stays) when the server refuses or does not take PATCH.
    public func restartIce() async throws {
        guard let ice else { throw SignalingError("ICE restart needs a WHIP/WHEP session (SRS's API has no way to signal one)") }
        if ice.session == nil, let session = whipSession.get() { ice.start(session) }
        try await ice.restartIce()
    }

    /// Candidates sent by trickle PATCH so far (0 for SRS's API or without trickle).
    public var trickledCandidates: Int { ice?.trickledCount ?? 0 }

    /// Connection states (the reference app colours its button by them): a new stream each
    /// time, starting with the state the session last saw, then each change, until it closes.
    public var states: AsyncStream<PeerConnectionState> { stateStreams.stream() }

    public func stats() async -> StatsReport { await peerConnection.getStats() }

    /// Tears everything down: WHIP/WHEP DELETE, DTLS close_notify, sockets.
    public func close() async {
        if let session = whipSession.get() {
            try? await WHIPClient(endpoint: url, token: options.token, timeout: .seconds(3), insecure: options.insecure).stop(session)
            whipSession.set(nil)
        }
        await peerConnection.close()
    }
}

import Locks

final class LockedValue<T: Sendable>: Sendable {
    private let m: Locked<T>
    init(_ v: T) { m = Locked(v) }
    func get() -> T { m.withLock { $0 } }
    func set(_ v: T) { m.withLock { $0 = v } }
}

/// Every `states` stream of a session: the last state at once, then each change.
private final class StateStreams: Sendable {
    private struct Listeners {
        var last = PeerConnectionState.new
        var finished = false
        var next = 0
        var streams: [Int: AsyncStream<PeerConnectionState>.Continuation] = [:]
    }
    private let listeners = Locked(Listeners())

    func stream() -> AsyncStream<PeerConnectionState> {
        let (stream, continuation) = AsyncStream.makeStream(of: PeerConnectionState.self)
        let id = listeners.withLock { l -> Int in
            continuation.yield(l.last)
            if l.finished { continuation.finish() } else { l.streams[l.next] = continuation }
            l.next += 1
            return l.next - 1
        }
        continuation.onTermination = { [weak self] _ in _ = self?.listeners.withLock { $0.streams.removeValue(forKey: id) } }
        return stream
    }

    func yield(_ state: PeerConnectionState) {
        listeners.withLock { l in
            l.last = state
            for c in l.streams.values { c.yield(state) }
        }
    }

    func finish() {
        let streams = listeners.withLock { l in
            l.finished = true
            defer { l.streams.removeAll() }
            return Array(l.streams.values)
        }
        for c in streams { c.finish() }   // outside the lock: onTermination takes it
    }
}
