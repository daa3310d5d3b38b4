import HTTP
import PeerConnection
import RTP
import STUN
import Locks
import Transport

/// `swiftrtc echo`: a diagnostic endpoint like Janus's EchoTest. A WHIP-style POST of an offer
/// creates a session whose every received RTP stream is sent back on the same m-line, so the
/// peer decodes its own media, and every data-channel message on the channel it came in on.
/// ICE-lite, DTLS passive, all sessions on one UDP port.
public final class EchoServer: Sendable {
    public let loop: EventLoop
    private let mux: UDPMux
    private let http: Locked<HTTPServer?>
    private let sessions = Locked<[String: EchoSession]>([:])
    private let log: @Sendable (String) -> Void
    public let httpHost: String
    public let httpPort: UInt16
    public let udpAddress: SocketAddress
    /// What answers advertise: `udpAddress`, or `candidate` with its port (a proxy in front).
    private let advertised: SocketAddress?

    /// Binds HTTP on `httpHost:httpPort` and UDP on `udpHost:udpPort` (0 = any port).
    public init(httpHost: String = "127.0.0.1", httpPort: UInt16 = 8088, udpHost: String? = nil, udpPort: UInt16 = 0,
                candidate: String? = nil, log: @escaping @Sendable (String) -> Void = { print($0) }) async throws {
        let loop = try EventLoop(name: "swiftrtc-echo")
        let udpHost = udpHost ?? httpHost
        guard let bind = SocketAddress(host: udpHost, port: udpPort) else {
            throw PeerConnectionError(.invalidArgument, "--udp host \(udpHost) is not an IP address")
        }
        self.loop = loop
        self.mux = try await loop.submit { try UDPMux(loop: loop, bind: bind) }
        self.udpAddress = mux.socket.localAddress
        if let candidate {
            guard let c = SocketAddress(host: candidate, port: udpAddress.port) else {
                throw PeerConnectionError(.invalidArgument, "--candidate \(candidate) is not an IP address")
            }
            advertised = c
        } else {
            advertised = nil
        }
        self.log = log
        self.http = Locked(nil)
        self.httpHost = httpHost
        // The handler needs `self`, which needs the bound port: route through a box set below.
        let target = WeakBox<EchoServer>()
        let server = try HTTPServer(host: httpHost, port: httpPort) { request in
            guard let echo = target.value else { return .text(503, "shutting down\n") }
            return await echo.handle(request)
        }
        self.httpPort = server.port
        http.withLock { $0 = server }
        target.value = self
        server.start()
    }

    public var url: String { "http://\(httpHost):\(httpPort)/echo" }
    public var sessionCount: Int { sessions.withLock { $0.count } }

    public func stop() async {
        let server = http.withLock { s -> HTTPServer? in defer { s = nil }; return s }
        server?.stop()
        for session in sessions.withLock({ s -> [EchoSession] in defer { s.removeAll() }; return Array(s.values) }) {
            await session.pc.close()
        }
        _ = try? await loop.submit { [mux] in mux.close() }
        loop.shutdown()
    }

    private func handle(_ request: HTTPRequest) async -> HTTPResponse {
        let parts = request.path.split(separator: "/").map(String.init)
        switch (request.method, parts.count) {
        case ("POST", 1) where parts[0] == "echo":
            return await createSession(request)
        case ("DELETE", 2) where parts[0] == "echo":
            guard let session = sessions.withLock({ $0.removeValue(forKey: parts[1]) }) else {
                return .text(404, "no echo session \(parts[1])\n")
            }
            await session.pc.close()
            log("echo: session \(parts[1]) deleted: \(session.summary())")
            return .empty(200)
        case ("GET", 0):
            return .text(200, "swiftrtc echo: POST an SDP offer (Content-Type: application/sdp) to /echo\n")
        default:
            return .text(404, "not found: \(request.method) \(request.path)\n")
        }
    }

    private func createSession(_ request: HTTPRequest) async -> HTTPResponse {
        let type = request.headers["Content-Type"]?.lowercased() ?? ""
        guard type.hasPrefix("application/sdp") else {
            return .text(415, "Content-Type must be application/sdp, got \"\(type)\"\n")
        }
        guard let offer = String(validating: request.body, as: UTF8.self), !offer.isEmpty else {
            return .text(400, "the offer is empty or not UTF-8\n")
        }
        let id = randomID()
        do {
            let pc = try makePassThroughPeer(loop: loop, mux: mux, direction: .sendrecv, advertised: advertised)
            let session = EchoSession(id: id, pc: pc, remote: request.remoteAddress, log: log) { [weak self] in
                _ = self?.sessions.withLock { $0.removeValue(forKey: id) }
            }
            let sdp = try await answer(pc, offer: offer)
            session.wire()
            sessions.withLock { $0[id] = session }
            return .sdp(201, sdp, location: "/echo/\(id)")
        } catch {
            log("echo: rejected offer from \(request.remoteAddress): \(error)")
            return .text(400, "\(error)\n")
        }
    }

    private func randomID() -> String {
        String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }
}

/// One echo call: wires each m-line's receiver back to its sender, and is its connection's
/// delegate and that of every channel the peer opens (whose messages it sends back).
final class EchoSession: PeerConnectionDelegate, DataChannelDelegate {
    let id: String
    let pc: PeerConnection
    let remote: String
    let log: @Sendable (String) -> Void
    /// The call ended (failed or closed).
    let onEnd: @Sendable () -> Void

    init(id: String, pc: PeerConnection, remote: String, log: @escaping @Sendable (String) -> Void,
         onEnd: @escaping @Sendable () -> Void) {
        self.id = id
        self.pc = pc
        self.remote = remote
        self.log = log
        self.onEnd = onEnd
    }

    func wire() {
        for t in pc.transceivers {
            let sender = t.sender, receiver = t.receiver
            // Same peer both ways: the video-orientation element keeps its id.
            let orientation = t.negotiatedHeaderExtensions.first { $0.uri == RTPExtensionURI.videoOrientation }?.id
            receiver.onRTP = { packet in sender.forward(packet, videoOrientationID: orientation) }
            // Sender reports about the far end's stream describe exactly what we echo.
            receiver.onRTCP = { [pc] packet in
                guard case .senderReport(var sr) = packet else { return }
                sr.ssrc = sender.ssrc
                sr.reports = []
                pc.sendRTCP([.senderReport(sr)])
            }
            // Feedback about what we send is feedback about what the far end sends us.
            sender.onRTCP = { [pc] packet in
                guard let source = receiver.remoteSSRCs.first else { return }
                switch packet {
                case .nack(var nack):
                    nack.senderSSRC = sender.ssrc
                    nack.mediaSSRC = source
                    pc.sendRTCP([.nack(nack)])
                case .pli:
                    pc.sendRTCP([.pli(senderSSRC: sender.ssrc, mediaSSRC: source)])
                case .fir(var fir):
                    fir.senderSSRC = sender.ssrc
                    fir.entries = fir.entries.map { FullIntraRequest.Entry(ssrc: source, sequenceNumber: $0.sequenceNumber) }
                    pc.sendRTCP([.fir(fir)])
                default:
                    break
                }
            }
        }
        pc.delegate = self
    }

    // Loop thread, as the connection's events and the channels' messages are.

    func peerConnection(_ peerConnection: PeerConnection, didOpen channel: DataChannel) {
        channel.delegate = self
        log("echo: session \(id) data channel \"\(channel.label)\" (id \(channel.id.map(String.init) ?? "?")) opened by the peer")
    }

    func peerConnection(_ peerConnection: PeerConnection, didChange state: PeerConnectionState) {
        switch state {
        case .connected:
            log("echo: session \(id) from \(remote) connected via \(pc.selectedCandidatePair.map { "\($0.local) <-> \($0.remote)" } ?? "?"): \(describeMedia())")
        case .failed, .closed:
            log("echo: session \(id) \(state.rawValue): \(summary())")
            onEnd()
        default:
            break
        }
    }

    /// Same loop thread as the message: the echo is queued without a hop.
    func dataChannel(_ channel: DataChannel, didReceiveMessage message: DataChannelMessage) {
        do { try channel.send(message) } catch { log("echo: session \(id) channel \(channel.label): \(error)") }
    }

    func dataChannelDidChangeState(_ channel: DataChannel) {}

    func describeMedia() -> String {
        pc.transceivers.map { t in
            "\(t.kind.rawValue)=\(t.negotiatedCodecs.first.map { $0.mimeType.split(separator: "/").last.map(String.init) ?? "" } ?? "none")"
        }.joined(separator: " ")
    }

    func summary() -> String {
        pc.transceivers.map { t in
            "\(t.mid ?? "?")/\(t.kind.rawValue) rx=\(t.receiver.stats.packets) tx=\(t.sender.stats.packets)"
        }.joined(separator: ", ")
    }
}

/// A weak reference that can be filled in after the closure holding it was made.
final class WeakBox<T: AnyObject & Sendable>: Sendable {
    private let storage = Locked<Weak>(Weak())
    private struct Weak: @unchecked Sendable { weak var object: T? }   // T is Sendable
    var value: T? {
        get { storage.withLock { $0.object } }
        set { storage.withLock { $0.object = newValue } }
    }
}
