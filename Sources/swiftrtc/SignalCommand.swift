import Foundation
import SwiftRTC

/// `swiftrtc signal`: the P2P signaling server on its own.
enum SignalCommand {
    static let usage = """
    usage: swiftrtc signal [--http HOST:PORT]

    A signaling server for peer-to-peer calls: WebSocket at ws://HOST:PORT/rtc/v1/signal/?room=NAME,
    rooms of two, one JSON object per text message. The peer there first gets
    {"type":"peer-joined"} when the second joins and sends the offer; offer, answer, candidate
    and bye go verbatim to the other peer; {"type":"peer-left"} when it goes. `swiftrtc serve`
    has the same endpoint.

      --http HOST:PORT   where to listen (default 127.0.0.1:8443)
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc signal", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let http = try a.option("http", default: (host: "127.0.0.1", port: UInt16(8443)), parseHostPort)
        try a.finish()
        let server = try SignalServer(host: http.host, port: http.port) { line in say(line) }
        say("signal: listening on \(server.url ?? "")?room=NAME, call page http://\(http.host):\(server.port ?? http.port)/call/?room=NAME")
        await waitForTermination()
        say("signal: stopping")
        server.stop()
        return 0
    }
}
