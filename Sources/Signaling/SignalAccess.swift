// Who may join rooms on the signaling endpoint, and how a peer proves it. A browser's WebSocket
// cannot set Authorization, and a token in the URL ends up in logs and history, so a page offers
// it as a subprotocol (as Kubernetes does): `swiftrtc.signal` plus `swiftrtc.bearer.<base64url(T)>`;
// the server picks `swiftrtc.signal`. Other clients send `Authorization: Bearer T`.
import Foundation
import HTTP

public enum SignalAccess: Sendable, Equatable {
    /// Anyone who reaches the server; a room key is optional (a room made with one needs it).
    case open
    /// Peers present this token, and every room needs a key.
    case token(String)
    /// Signaling is off; the reason is the 403's body.
    case closed(String)

    /// The subprotocol a browser offers alongside its token, and the one the server answers.
    public static let subprotocol = "swiftrtc.signal"
    static let bearerPrefix = "swiftrtc.bearer."

    /// `Authorization: Bearer T`, else T from an offered `swiftrtc.bearer.<base64url(T)>`.
    public static func presentedToken(_ headers: HTTPHeaders) -> String? {
        if let bearer = Credentials.bearer(headers) { return bearer }
        for offered in headers.values("Sec-WebSocket-Protocol").flatMap({ $0.split(separator: ",") }) {
            let name = offered.trimmingCharacters(in: .whitespaces)
            guard name.hasPrefix(bearerPrefix) else { continue }
            var encoded = name.dropFirst(bearerPrefix.count).replacingOccurrences(of: "-", with: "+")
                .replacingOccurrences(of: "_", with: "/")
            encoded += String(repeating: "=", count: (4 - encoded.count % 4) % 4)
            guard let data = Data(base64Encoded: encoded), let token = String(data: data, encoding: .utf8), !token.isEmpty else { return nil }
            return token
        }
        return nil
    }

    /// Whether the client offered `swiftrtc.signal` (then the 101 must name it).
    static func offersSubprotocol(_ headers: HTTPHeaders) -> Bool {
        headers.values("Sec-WebSocket-Protocol").flatMap { $0.split(separator: ",") }
            .contains { $0.trimmingCharacters(in: .whitespaces) == subprotocol }
    }

    /// The refusal of a handshake under this access, or nil to let it join.
    func refusal(_ headers: HTTPHeaders) -> HTTPResponse? {
        switch self {
        case .open:
            return nil
        case .closed(let why):
            return .text(403, why + "\n")
        case .token(let required):
            guard let presented = Self.presentedToken(headers) else {
                return .text(401, "signaling needs a token: Authorization: Bearer T, or from a browser the WebSocket "
                             + "subprotocols \(Self.subprotocol) and \(Self.bearerPrefix)<T in base64url>\n")
            }
            return Credentials.matches(presented, required) ? nil : .text(403, "wrong signaling token\n")
        }
    }
}

/// A room's key: whoever creates the room chooses it, whoever joins must bring the same. 16–128
/// of A–Z a–z 0–9 - _ . (a random base64url string is made of these).
public enum RoomKey {
    public static func isValid(_ key: String) -> Bool { SafeName.isValid(key, lengths: 16...128) }
}
