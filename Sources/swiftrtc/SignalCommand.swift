import Foundation
import HTTP
import SwiftRTC

/// `swiftrtc signal`: the P2P signaling server on its own.
enum SignalCommand {
    static let usage = """
    usage: swiftrtc signal [--http HOST:PORT] [--signal-token T] [--allowed-host NAME]... [--cors-origin ORIGIN]...

    A signaling server for peer-to-peer calls: WebSocket at ws://HOST:PORT/rtc/v1/signal/?room=NAME,
    rooms of two, one JSON object per text message. The peer there first gets
    {"type":"peer-joined"} when the second joins and sends the offer; offer, answer, candidate
    and bye go verbatim to the other peer; {"type":"peer-left"} when it goes. `swiftrtc serve`
    has the same endpoint.

      --http HOST:PORT     where to listen (default 127.0.0.1:8443)
      --signal-token T     peers present T (Authorization: Bearer T, or from a browser the WebSocket
                           subprotocols swiftrtc.signal + swiftrtc.bearer.<base64url(T)>), and every room
                           needs ?key=KEY (16-128 of A-Z a-z 0-9 - _ .; the creator's key, the joiner's must match)
      --allowed-host NAME  a DNS name the server is reached by (repeatable). Without a token it answers only
                           IP addresses, localhost and these names (others get 421: DNS rebinding)
      --cors-origin O      a web origin whose pages may open WebSockets here (repeatable; * for any);
                           default: the server's own pages (the call page) only, others get 403
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc signal", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let http = try a.option("http", default: (host: "127.0.0.1", port: UInt16(8443)), parseHostPort)
        let token = try a.option("signal-token", default: String?.none) { $0.isEmpty ? nil : $0 }
        let names = try a.hostNames("allowed-host")
        let origins = try a.options("cors-origin")
        try a.finish()
        let hosts = token == nil || !names.isEmpty ? RequestGuard.hostNames(boundTo: http.host, extra: names) : nil
        let server = try SignalServer(host: http.host, port: http.port, options: .init(access: token.map { .token($0) } ?? .open),
                                      allowedHosts: hosts, corsOrigins: origins) { line in say(line) }
        say("signal: listening on \(server.url ?? "")?room=NAME, call page http://\(http.host):\(server.port ?? http.port)/call/?room=NAME")
        await waitForTermination()
        say("signal: stopping")
        server.stop()
        return 0
    }
}
