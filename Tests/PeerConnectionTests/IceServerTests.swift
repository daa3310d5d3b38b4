import STUN
import Testing
import Transport
@testable import PeerConnection

@Suite struct IceServerTests {
    @Test func hostNamesResolveForStunAndTurn() throws {
        let servers = [IceServer(urls: ["stun:localhost:3479", "turn:localhost?transport=udp"], username: "u", credential: "p")]
        let resolved = try resolveIceServers(servers)
        #expect(resolved.stun == [SocketAddress(ip: .v4(0x7f00_0001), port: 3479)])
        #expect(resolved.turn.map(\.address) == [SocketAddress(ip: .v4(0x7f00_0001), port: 3478)])
        #expect(resolved.turn.first?.username == "u" && resolved.turn.first?.password == "p")
        #expect(resolved.problems.isEmpty)
        let tcp = try resolveIceServers([IceServer(urls: ["turn:127.0.0.1?transport=tcp"], username: "u", credential: "p")])
        #expect(tcp.turn.first?.url.transport == .tcp)
    }

    @Test func turnsIsTURNOverTLSWithTheServersCAFile() throws {
        let servers = [IceServer(urls: ["turns:localhost", "turns:127.0.0.1:443?transport=tcp", "turn:127.0.0.1"],
                                 username: "u", credential: "p", tlsCAFile: "/tmp/ca.pem")]
        let resolved = try resolveIceServers(servers)
        #expect(resolved.problems.isEmpty)
        #expect(resolved.turn.map(\.address) == [SocketAddress(ip: .v4(0x7f00_0001), port: 5349),
                                                 SocketAddress(ip: .v4(0x7f00_0001), port: 443),
                                                 SocketAddress(ip: .v4(0x7f00_0001), port: 3478)])
        #expect(resolved.turn.map(\.url.scheme) == [.turns, .turns, .turn])
        #expect(resolved.turn.map(\.url.transport) == [.tcp, .tcp, .udp])
        // The host the certificate must name is the URL's, not the resolved address.
        #expect(resolved.turn.first?.url.host == "localhost")
        // The CA file is for TLS only.
        #expect(resolved.turn.map(\.tlsCAFile) == ["/tmp/ca.pem", "/tmp/ca.pem", nil])
    }

    @Test func unresolvableAndUnsupportedServersAreReportedNotDropped() throws {
        let servers = [IceServer(urls: ["stun:no-such-host.invalid", "stuns:127.0.0.1", "turns:127.0.0.1?transport=udp"],
                                 username: "u", credential: "p")]
        let resolved = try resolveIceServers(servers, resolve: { host, _ throws(TransportError) in
            throw TransportError("cannot resolve \"\(host)\": Name or service not known")
        })
        #expect(resolved.stun.isEmpty && resolved.turn.isEmpty)
        #expect(resolved.problems.map(\.kind) == [.transport, .unsupported, .unsupported])
        #expect(resolved.problems.map(\.description) == [
            "iceServers: stun:no-such-host.invalid: cannot resolve \"no-such-host.invalid\": Name or service not known; skipped",
            "iceServers: stuns:127.0.0.1: STUN over TLS (stuns:) is not implemented; skipped",
            "iceServers: turns:127.0.0.1?transport=udp: TURN over DTLS (turns: with transport=udp) is not implemented; use transport=tcp (TLS); skipped",
        ])
    }

    @Test func badURLsAndMissingCredentialsThrow() {
        #expect(throws: PeerConnectionError(.invalidArgument, "iceServers: ICE server URL \"stun://x\": write stun:host[:port], without \"//\" (RFC 7064/7065)")) {
            try resolveIceServers([IceServer(urls: ["stun://x"])])
        }
        #expect(throws: PeerConnectionError(.invalidArgument, "iceServers: turn:127.0.0.1 needs a username and a credential")) {
            try resolveIceServers([IceServer(urls: ["turn:127.0.0.1"])])
        }
        var config = PeerConnection.Configuration()
        config.iceServers = [IceServer(urls: ["turn:127.0.0.1:x"], username: "u", credential: "p")]
        #expect(throws: PeerConnectionError.self) { try PeerConnection(configuration: config) }
    }
}
