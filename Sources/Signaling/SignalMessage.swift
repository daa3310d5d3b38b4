// The P2P signaling protocol: one JSON object per WebSocket text message.
//   server → peer: {"type":"joined","room":R,"peers":N}, {"type":"peer-joined"}, {"type":"peer-left"},
//                  {"type":"error","error":WHY}; a join with `seat=new` (or a seat's token) is answered
//                  {"type":"joined","room":R,"peers":N,"seat":TOKEN[,"rejoined":true]} (see SignalingRooms)
//   peer ↔ peer (forwarded verbatim): {"type":"offer","sdp":…}, {"type":"answer","sdp":…},
//                  {"type":"candidate","candidate":…,"sdpMid":…,"sdpMLineIndex":…} ("candidate":"" ends
//                  them; the key "sdp" is read in place of "candidate"), {"type":"bye"}
import Foundation

public enum SignalMessage: Sendable, Equatable {
    /// `seat`: the token that takes this seat back after a lost connection (joins that asked
    /// for one); `rejoined`: this join took a held seat back (the other peer was told nothing).
    case joined(room: String, peers: Int, seat: String? = nil, rejoined: Bool = false)
    case peerJoined
    case offer(sdp: String)
    case answer(sdp: String)
    /// `candidate` is empty at the end of candidates.
    case candidate(candidate: String, sdpMid: String?, sdpMLineIndex: Int?)
    case bye
    case peerLeft
    case error(String)

    /// Messages a peer sends that the server forwards to the other peer.
    public var isForwarded: Bool {
        switch self {
        case .offer, .answer, .candidate, .bye: return true
        default: return false
        }
    }

    /// Reads one message; the error says what is wrong with it.
    public static func parse(_ text: String) throws(SignalingError) -> SignalMessage {
        guard let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any] else {
            throw SignalingError("malformed JSON: expected one object per message")
        }
        guard let type = object["type"] as? String else { throw SignalingError("missing \"type\"") }
        func string(_ key: String) throws(SignalingError) -> String {
            guard let value = object[key] as? String else { throw SignalingError("\(type) without a \"\(key)\" string") }
            return value
        }
        switch type {
        case "joined":
            guard let peers = integer(object["peers"]) else { throw SignalingError("joined without a \"peers\" number") }
            return .joined(room: try string("room"), peers: peers, seat: object["seat"] as? String,
                           rejoined: (object["rejoined"] as? Bool) ?? false)
        case "peer-joined": return .peerJoined
        case "offer": return .offer(sdp: try string("sdp"))
        case "answer": return .answer(sdp: try string("sdp"))
        case "candidate":
            // The reference app sends the candidate line under "sdp".
            guard let candidate = (object["candidate"] as? String) ?? (object["sdp"] as? String) else {
                throw SignalingError("candidate without a \"candidate\" string")
            }
            return .candidate(candidate: candidate, sdpMid: object["sdpMid"] as? String, sdpMLineIndex: integer(object["sdpMLineIndex"]))
        case "bye": return .bye
        case "peer-left": return .peerLeft
        case "error": return .error((object["error"] as? String) ?? "")
        default: throw SignalingError("unknown type \(jsonString(type))")
        }
    }

    /// The message as sent (keys in the protocol's order).
    public var json: String {
        switch self {
        case .joined(let room, let peers, let seat, let rejoined):
            let extra = (seat.map { #","seat":\#(jsonString($0))"# } ?? "") + (rejoined ? #","rejoined":true"# : "")
            return #"{"type":"joined","room":\#(jsonString(room)),"peers":\#(peers)\#(extra)}"#
        case .peerJoined: return #"{"type":"peer-joined"}"#
        case .offer(let sdp): return #"{"type":"offer","sdp":\#(jsonString(sdp))}"#
        case .answer(let sdp): return #"{"type":"answer","sdp":\#(jsonString(sdp))}"#
        case .candidate(let candidate, let mid, let index):
            return #"{"type":"candidate","candidate":\#(jsonString(candidate)),"sdpMid":\#(mid.map(jsonString) ?? "null"),"sdpMLineIndex":\#(index.map(String.init) ?? "null")}"#
        case .bye: return #"{"type":"bye"}"#
        case .peerLeft: return #"{"type":"peer-left"}"#
        case .error(let why): return #"{"type":"error","error":\#(jsonString(why))}"#
        }
    }

    private static func integer(_ value: Any?) -> Int? {
        if let number = value as? Int { return number }
        if let number = value as? NSNumber, let exact = Int(exactly: number.doubleValue) { return exact }
        return nil
    }
}

/// `text` as a JSON string literal, quotes included.
func jsonString(_ text: String) -> String {
    var out = "\""
    for scalar in text.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        case _ where scalar.value < 0x20: out += String(format: "\\u%04x", scalar.value)
        default: out.unicodeScalars.append(scalar)
        }
    }
    return out + "\""
}
