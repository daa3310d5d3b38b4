import ICE
import STUN
import Transport
import TURN

/// W3C `RTCIceTransportPolicy`: `relay` gathers and uses only TURN relay candidates.
public enum IceTransportPolicy: String, Sendable, CaseIterable {
    case all, relay
}

/// A TURN server ready for an allocation: its URL, resolved address and credentials.
struct TURNServerEntry: Sendable {
    var url: ICEServerURL
    var address: SocketAddress
    var username: String
    var password: String
    /// turns: only: a CA file trusted besides the system store.
    var tlsCAFile: String?
}

/// `Configuration.iceServers` parsed and resolved once, when the PeerConnection is made.
struct ResolvedIceServers: Sendable {
    var stun: [SocketAddress] = []
    var turn: [TURNServerEntry] = []
    /// Servers that cannot be used, each with why; reported as `error` events when gathering starts.
    var problems: [PeerConnectionError] = []
}

/// Bad URLs and TURN servers without credentials throw (as W3C's constructor does); a name that
/// does not resolve or a transport not implemented (stuns:, turns: over DTLS) is skipped and reported.
func resolveIceServers(_ servers: [IceServer],
                       resolve: (String, UInt16) throws(TransportError) -> [SocketAddress] = Resolver.resolve)
    throws(PeerConnectionError) -> ResolvedIceServers {
    var result = ResolvedIceServers()
    for server in servers {
        for text in server.urls {
            let url: ICEServerURL
            do { url = try ICEServerURL(parsing: text) } catch {
                throw PeerConnectionError(.invalidArgument, "iceServers: \(error.message)")
            }
            if url.scheme.isTURN, server.username?.isEmpty ?? true || server.credential == nil {
                throw PeerConnectionError(.invalidArgument, "iceServers: \(text) needs a username and a credential")
            }
            if url.scheme == .stuns {
                result.problems.append(PeerConnectionError(.unsupported, "iceServers: \(text): STUN over TLS (stuns:) is not implemented; skipped"))
                continue
            }
            if url.scheme == .turns, url.transport == .udp {
                result.problems.append(PeerConnectionError(.unsupported, "iceServers: \(text): TURN over DTLS (turns: with transport=udp) "
                                                           + "is not implemented; use transport=tcp (TLS); skipped"))
                continue
            }
            let address: SocketAddress
            do {
                guard let first = try resolve(url.host, url.port).first else { continue }
                address = first
            } catch {
                result.problems.append(PeerConnectionError(.transport, "iceServers: \(text): \(error); skipped"))
                continue
            }
            if url.scheme.isTURN {
                result.turn.append(TURNServerEntry(url: url, address: address, username: server.username ?? "",
                                                   password: server.credential ?? "",
                                                   tlsCAFile: url.scheme == .turns ? server.tlsCAFile : nil))
            } else if !result.stun.contains(address) {
                result.stun.append(address)
            }
        }
    }
    return result
}
