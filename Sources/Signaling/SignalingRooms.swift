// The signaling server's rooms, sans-I/O: peers join, send text, leave; what to send to whom comes
// out. Rooms hold two peers; the one already there when the second joins makes the offer. The
// peer that creates a room sets its key (or none); a peer joining it must bring the same, so a
// stranger who knows only the name can neither take the seat nor read the waiting peer's offer.
//
// Seats survive a lost connection: a join with `seat=new` gets a seat token in `joined`. When such
// a peer's connection drops without a close (a network change, a dead TCP path), its seat is held
// for `rejoinGrace`: the other peer is told nothing, what it sends is kept (up to
// `maxQueuedMessages`), and a join presenting the token takes the seat back (`rejoined`), gets
// what was kept, and the call goes on. A join with the token while the old connection still holds
// the seat (the server has not noticed it died) takes it over and closes the old one. Only when
// the grace ends unclaimed does the other peer hear `peer-left`. Joins without `seat` work as before.
import HTTP

public struct SignalingRooms: Sendable {
    public typealias PeerID = Int

    public enum Output: Sendable, Equatable {
        case send(PeerID, String)
        /// Close the peer's connection with this code and reason (after what was sent to it).
        case close(PeerID, code: UInt16, reason: String)
    }

    public static let capacity = 2
    public static let maxQueuedMessages = 256
    /// How long a seat whose connection dropped waits for its peer to come back.
    public var rejoinGrace: Duration
    private var members: [String: [PeerID]] = [:]
    /// The key each room was created with (nil: none).
    private var keys: [String: String?] = [:]
    private var roomOf: [PeerID: String] = [:]
    /// Seats that can be taken back, by the peer holding them (an away seat keeps its old id).
    private var seats: [PeerID: Seat] = [:]

    private struct Seat {
        var token: String
        /// Set while the connection is gone: until when the seat waits, and what the other sent.
        var awayUntil: ContinuousClock.Instant?
        var queued: [String] = []
    }

    public init(rejoinGrace: Duration = .seconds(15)) {
        self.rejoinGrace = rejoinGrace
    }

    /// Peers in `room` now.
    public func count(in room: String) -> Int { members[room]?.count ?? 0 }

    /// A room name from a request's query: 1–64 letters, digits, `-`, `_` or `.`; nil if not one.
    public static func validRoom(_ name: String?) -> String? {
        guard let name, SafeName.isValid(name) else { return nil }
        return name
    }

    /// `seat`: "new" asks for a seat that survives a lost connection; a token takes that seat
    /// back (or, if it is gone, joins as new and says so: no `rejoined`).
    public mutating func join(_ peer: PeerID, room: String, key: String? = nil, seat: String? = nil) -> [Output] {
        let others = members[room] ?? []
        // Checked before the seats, so a stranger learns nothing about who is there.
        if let roomKey = keys[room], !Self.sameKey(roomKey, key) {
            return [.send(peer, SignalMessage.error("wrong room key").json), .close(peer, code: 1008, reason: "wrong room key")]
        }
        if let seat, seat != "new",
           let old = others.first(where: { id in seats[id].map { Credentials.matches(seat, $0.token) } ?? false }) {
            return rejoin(peer, taking: old, room: room)
        }
        guard others.count < Self.capacity else {
            return [.send(peer, SignalMessage.error("room full").json), .close(peer, code: 1008, reason: "room full")]
        }
        members[room] = others + [peer]
        if others.isEmpty { keys[room] = .some(key) }
        roomOf[peer] = room
        let token = seat.map { _ in Self.newToken() }
        if let token { seats[peer] = Seat(token: token) }
        // The newcomer hears first, so the offer the other peer sends cannot overtake it.
        return [.send(peer, SignalMessage.joined(room: room, peers: others.count, seat: token).json)]
            + others.map { .send($0, SignalMessage.peerJoined.json) }
    }

    /// `peer` takes `old`'s seat: what the other peer sent meanwhile follows the `joined`; a
    /// connection still holding the seat is closed. The other peer hears nothing.
    private mutating func rejoin(_ peer: PeerID, taking old: PeerID, room: String) -> [Output] {
        guard var seat = seats.removeValue(forKey: old) else { return [] }
        let wasAway = seat.awayUntil != nil
        let queued = seat.queued
        seat.awayUntil = nil
        seat.queued = []
        seats[peer] = seat
        members[room] = (members[room] ?? []).map { $0 == old ? peer : $0 }
        roomOf[old] = nil
        roomOf[peer] = room
        let others = (members[room] ?? []).count - 1
        var out: [Output] = [.send(peer, SignalMessage.joined(room: room, peers: others, seat: seat.token, rejoined: true).json)]
        out += queued.map { .send(peer, $0) }
        if !wasAway { out.append(.close(old, code: 1000, reason: "the seat was taken back by a new connection")) }
        return out
    }

    /// A text message from `peer`: offer, answer, candidate and bye go verbatim to the other
    /// peer; anything else gets an error back, and the connection stays open.
    public mutating func receive(_ text: String, from peer: PeerID) -> [Output] {
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
        return others.compactMap { other -> Output? in
            guard seats[other]?.awayUntil != nil else { return .send(other, text) }
            // Kept for the peer's return; beyond the limit the oldest go (a stale offer is
            // superseded by a newer one, candidates of it are moot).
            seats[other]?.queued.append(text)
            if let n = seats[other]?.queued.count, n > Self.maxQueuedMessages { seats[other]?.queued.removeFirst(n - Self.maxQueuedMessages) }
            return nil
        }
    }

    /// The peer's socket closed: the other one hears `peer-left`. `abrupt` (no close frame, a
    /// dead connection) with a seat: the seat is held for `rejoinGrace` from `now` instead.
    public mutating func leave(_ peer: PeerID, abrupt: Bool = false, now: ContinuousClock.Instant = .now) -> [Output] {
        guard let room = roomOf[peer] else { return [] }
        if abrupt, seats[peer] != nil {
            if seats[peer]?.awayUntil == nil { seats[peer]?.awayUntil = now + rejoinGrace }
            return []
        }
        roomOf[peer] = nil
        seats[peer] = nil
        let rest = (members[room] ?? []).filter { $0 != peer }
        members[room] = rest.isEmpty ? nil : rest
        if rest.isEmpty { keys[room] = nil }
        return rest.map { .send($0, SignalMessage.peerLeft.json) }
    }

    /// Seats whose grace has ended: their rooms hear `peer-left`.
    public mutating func expire(now: ContinuousClock.Instant) -> [Output] {
        let due = seats.filter { $0.value.awayUntil.map { $0 <= now } ?? false }.map(\.key).sorted()
        return due.flatMap { leave($0) }
    }

    /// When `expire` next has something to do (nil: no seat is held).
    public var nextExpiry: ContinuousClock.Instant? { seats.values.compactMap(\.awayUntil).min() }

    /// 128 random bits, hex: what a peer presents to take its seat back.
    private static func newToken() -> String {
        var rng = SystemRandomNumberGenerator()
        return (0..<2).map { _ in String(rng.next() as UInt64, radix: 16).leftPadded(to: 16) }.joined()
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

private extension String {
    func leftPadded(to width: Int) -> String { count >= width ? self : String(repeating: "0", count: width - count) + self }
}
