// The signaling server's rooms, sans-I/O: peers join, send text, leave; what to send to whom comes
// out. Rooms hold two peers; the one already there when the second joins makes the offer. The
// peer that creates a room sets its key (or none); a peer joining it must bring the same, so a
// stranger who knows only the name can neither take the seat nor read the waiting peer's offer.
import HTTP

public struct SignalingRooms: Sendable {
    public typealias PeerID = Int

    public enum Output: Sendable, Equatable {
        case send(PeerID, String)
        /// Close the peer's connection with this code and reason (after what was sent to it).
        case close(PeerID, code: UInt16, reason: String)
    }

    public static let capacity = 2
    private var members: [String: [PeerID]] = [:]
    /// The key each room was created with (nil: none).
    private var keys: [String: String?] = [:]
    private var roomOf: [PeerID: String] = [:]

    public init() {}

    /// Peers in `room` now.
    public func count(in room: String) -> Int { members[room]?.count ?? 0 }

    /// A room name from a request's query: 1–64 letters, digits, `-`, `_` or `.`; nil if not one.
    public static func validRoom(_ name: String?) -> String? {
        guard let name, SafeName.isValid(name) else { return nil }
        return name
    }

    public mutating func join(_ peer: PeerID, room: String, key: String? = nil) -> [Output] {
        let others = members[room] ?? []
        // Checked before the seats, so a stranger learns nothing about who is there.
        if let roomKey = keys[room], !Self.sameKey(roomKey, key) {
            return [.send(peer, SignalMessage.error("wrong room key").json), .close(peer, code: 1008, reason: "wrong room key")]
        }
        guard others.count < Self.capacity else {
            return [.send(peer, SignalMessage.error("room full").json), .close(peer, code: 1008, reason: "room full")]
        }
        members[room] = others + [peer]
        if others.isEmpty { keys[room] = .some(key) }
        roomOf[peer] = room
        // The newcomer hears first, so the offer the other peer sends cannot overtake it.
        return [.send(peer, SignalMessage.joined(room: room, peers: others.count).json)]
            + others.map { .send($0, SignalMessage.peerJoined.json) }
    }

    /// A text message from `peer`: offer, answer, candidate and bye go verbatim to the other
    /// peer; anything else gets an error back, and the connection stays open.
    public func receive(_ text: String, from peer: PeerID) -> [Output] {
        let message: SignalMessage
        do throws(SignalingError) {
            message = try SignalMessage.parse(text)
        } catch {
            return [.send(peer, SignalMessage.error(error.description).json)]
        }
        guard message.isForwarded else {
            return [.send(peer, SignalMessage.error("\(message.typeName) is sent by the server, not by peers").json)]
        }
        let others = others(of: peer)
        guard !others.isEmpty else { return [.send(peer, SignalMessage.error("no peer in the room yet").json)] }
        return others.map { .send($0, text) }
    }

    /// The peer's socket closed: the other one hears `peer-left`.
    public mutating func leave(_ peer: PeerID) -> [Output] {
        guard let room = roomOf.removeValue(forKey: peer) else { return [] }
        let rest = (members[room] ?? []).filter { $0 != peer }
        members[room] = rest.isEmpty ? nil : rest
        if rest.isEmpty { keys[room] = nil }
        return rest.map { .send($0, SignalMessage.peerLeft.json) }
    }

    private static func sameKey(_ a: String?, _ b: String?) -> Bool {
        switch (a, b) {
        case (nil, nil): return true
        case (let a?, let b?): return Credentials.matches(b, a)
        default: return false
        }
    }

    private func others(of peer: PeerID) -> [PeerID] {
        guard let room = roomOf[peer] else { return [] }
        return (members[room] ?? []).filter { $0 != peer }
    }
}

extension SignalMessage {
    var typeName: String {
        switch self {
        case .joined: return "joined"
        case .peerJoined: return "peer-joined"
        case .offer: return "offer"
        case .answer: return "answer"
        case .candidate: return "candidate"
        case .bye: return "bye"
        case .peerLeft: return "peer-left"
        case .error: return "error"
        }
    }
}
