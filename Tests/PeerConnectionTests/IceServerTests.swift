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

    @Test func unresolvableAndUnsupportedServersAreReportedNotDropped() throws {
        let servers = [IceServer(urls: ["stun:no-such-host.invalid", "turns:127.0.0.1"],
                                 username: "u", credential: "p")]
        let resolved = try resolveIceServers(servers, resolve: { host, _ throws(TransportError) in
            throw TransportError("cannot resolve \"\(host)\": Name or service not known")
        })
        #expect(resolved.stun.isEmpty && resolved.turn.isEmpty)
        #expect(resolved.problems.count == 2)
        #expect(resolved.problems[0] == "iceServers: stun:no-such-host.invalid: cannot resolve \"no-such-host.invalid\": Name or service not known; skipped")
        #expect(resolved.problems[1] == "iceServers: turns:127.0.0.1: TLS to STUN/TURN servers (stuns:, turns:) is not implemented yet; skipped")
    }

    @Test func badURLsAndMissingCredentialsThrow() {
        #expect(throws: PeerConnectionError("iceServers: ICE server URL \"stun://x\": write stun:host[:port], without \"//\" (RFC 7064/7065)")) {
            try resolveIceServers([IceServer(urls: ["stun://x"])])
        }
        #expect(throws: PeerConnectionError("iceServers: turn:127.0.0.1 needs a username and a credential")) {
            try resolveIceServers([IceServer(urls: ["turn:127.0.0.1"])])
        }
        var config = PeerConnection.Configuration()
        config.iceServers = [IceServer(urls: ["turn:127.0.0.1:x"], username: "u", credential: "p")]
        #expect(throws: PeerConnectionError.self) { try PeerConnection(configuration: config) }
    }
}
