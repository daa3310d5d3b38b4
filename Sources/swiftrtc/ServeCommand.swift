import Foundation
import SwiftRTC

/// `swiftrtc serve`: the embedded SRS-compatible relay.
enum ServeCommand {
    static let usage = """
    usage: swiftrtc serve [--http HOST:PORT] [--udp HOST:PORT] [--candidate IP]

    An SRS-compatible WebRTC server: publish with POST /rtc/v1/publish/ (SRS JSON) or WHIP
    /rtc/v1/whip/?app=&stream=, play with /rtc/v1/play/ or WHEP /rtc/v1/whep/?app=&stream=.
    RTP is forwarded without transcoding; a player page is at /players/. P2P signaling
    (WebSocket, rooms of two) is at /rtc/v1/signal/?room=NAME, as in `swiftrtc signal`.

      --http HOST:PORT   HTTP API (default 127.0.0.1:1985)
      --udp HOST:PORT    the one UDP port for all media (default 127.0.0.1:8000)
      --candidate IP     the address to advertise in answers (needed when --udp binds 0.0.0.0)
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc serve", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let http = try a.option("http", default: (host: "127.0.0.1", port: UInt16(1985)), parseHostPort)
        let udp = try a.option("udp", default: (host: "127.0.0.1", port: UInt16(8000)), parseHostPort)
        let candidate = try a.option("candidate")
        try a.finish()
        let relay = try await RelayServer(httpHost: http.host, httpPort: http.port, udpHost: udp.host, udpPort: udp.port,
                                          candidate: candidate) { say($0) }
        say("serve: API on \(relay.url)/rtc/v1/, media on UDP \(relay.advertisedAddress), player page \(relay.url)/players/")
        say("serve: signaling on \(relay.signalURL)?room=NAME")
        await waitForTermination()
        say("serve: stopping")
        await relay.stop()
        return 0
    }
}
