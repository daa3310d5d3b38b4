// The P2P signaling protocol (see SignalMessage) as a typed client over WebSocketClient.
import HTTP
import Locks

public final class SignalingClient: Sendable {
    public enum Event: Sendable, Equatable {
        /// We are in the room; `peers` others were there already (0 or 1).
        case joined(peers: Int)
        /// We took our held seat back (`connect(seat:)`): the call goes on, nobody was told.
        case rejoined(peers: Int)
        /// The other peer arrived: we make the offer.
        case peerJoined
        case offer(String)
        case answer(String)
        case candidate(String, sdpMid: String?, sdpMLineIndex: Int?)
        case endOfCandidates
        case bye
        case peerLeft
        /// The server's complaint, or a message from it we could not read.
        case error(String)
        /// The connection ended (the last event).
        case closed(code: UInt16, reason: String)
    }

    public let socket: WebSocketClient
    public let events: AsyncStream<Event>
    private let seatToken = Locked<String?>(nil)

    /// The token that takes our seat back after a lost connection (`connect(seat:)`), once
    /// `joined` has come; nil for a join that did not ask for one.
    public var seat: String? { seatToken.withLock { $0 } }

    private init(socket: WebSocketClient) {
        self.socket = socket
        let seatToken = seatToken
        events = AsyncStream { continuation in
            let task = Task {
                for await message in socket.messages {
                    switch message {
                    case .text(let text):
                        let message = Result { () throws(SignalingError) in try SignalMessage.parse(text) }
                        if case .success(.joined(_, _, let seat?, _)) = message { seatToken.withLock { $0 = seat } }
                        continuation.yield(Self.event(message, text: text))
                    case .binary: continuation.yield(.error("unexpected binary message from the server"))
                    case .closed(let code, let reason): continuation.yield(.closed(code: code, reason: reason))
                    }
                }
                continuation.finish()
            }
            continuation.onTermination = { _ in task.cancel() }
        }
    }

    /// Joins the room of a signaling URL, `ws[s]://HOST:PORT/rtc/v1/signal/?room=NAME[&key=KEY]`;
    /// the first event is `.joined` (or an error and `.closed` when the room is full or its key
    /// is another). `token`: for a server with access control, sent as `Authorization: Bearer`.
    /// `seat`: "new" asks the server to hold our seat if the connection dies; the token from an
    /// earlier connection's `seat` takes it back (`.rejoined`; `.joined` if it is gone).
    public static func connect(_ url: String, token: String? = nil, insecure: Bool = false, seat: String? = nil,
                               timeout: Duration = .seconds(10)) async throws -> SignalingClient {
        var headers: HTTPHeaders = [:]
        if let token { headers.add("Authorization", "Bearer \(token)") }
        let target = seat.map { url + (url.contains("?") ? "&" : "?") + "seat=" + $0 } ?? url
        return SignalingClient(socket: try await WebSocketClient.connect(target, headers: headers, insecure: insecure, timeout: timeout))
    }

    static func event(_ text: String) -> Event {
        event(Result { () throws(SignalingError) in try SignalMessage.parse(text) }, text: text)
    }

    /// The event for a message as parsed (`text`: what came, quoted when it could not be read).
    static func event(_ message: Result<SignalMessage, SignalingError>, text: String) -> Event {
        do throws(SignalingError) {
            switch try message.get() {
            case .joined(_, let peers, _, let rejoined): return rejoined ? .rejoined(peers: peers) : .joined(peers: peers)
            case .peerJoined: return .peerJoined
            case .offer(let sdp): return .offer(sdp)
            case .answer(let sdp): return .answer(sdp)
            case .candidate(let candidate, _, _) where candidate.isEmpty: return .endOfCandidates
            case .candidate(let candidate, let mid, let index): return .candidate(candidate, sdpMid: mid, sdpMLineIndex: index)
            case .bye: return .bye
            case .peerLeft: return .peerLeft
            case .error(let why): return .error(why)
            }
        } catch {
            return .error("unreadable message from the server (\(error.description)): \(text.prefix(100))")
        }
    }

    /// Any message a peer sends (see `SignalMessage.isForwarded`).
    @discardableResult public func send(_ message: SignalMessage) -> Bool { socket.send(message.json) }
    @discardableResult public func sendOffer(_ sdp: String) -> Bool { socket.send(SignalMessage.offer(sdp: sdp).json) }
    @discardableResult public func sendAnswer(_ sdp: String) -> Bool { socket.send(SignalMessage.answer(sdp: sdp).json) }

    @discardableResult
    public func sendCandidate(_ candidate: String, sdpMid: String?, sdpMLineIndex: Int?) -> Bool {
        socket.send(SignalMessage.candidate(candidate: candidate, sdpMid: sdpMid, sdpMLineIndex: sdpMLineIndex).json)
    }

    /// `"candidate":""`, as a browser's end-of-candidates `RTCIceCandidate` serializes.
    @discardableResult
    public func sendEndOfCandidates(sdpMid: String? = nil, sdpMLineIndex: Int? = nil) -> Bool {
        sendCandidate("", sdpMid: sdpMid, sdpMLineIndex: sdpMLineIndex)
    }

    @discardableResult public func sendBye() -> Bool { socket.send(SignalMessage.bye.json) }

    /// Leaves: the other peer hears `peer-left`.
    public func close() { socket.close() }
}
