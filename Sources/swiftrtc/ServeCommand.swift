import Foundation
import SwiftRTC

/// `swiftrtc serve`: the embedded SRS-compatible relay.
enum ServeCommand {
    static let usage = """
    usage: swiftrtc serve [--http HOST:PORT] [--udp HOST:PORT] [--candidate IP]
                          [--publish-token T] [--play-token T] [--api-token T] [--signal-token T] [--hook URL]
                          [--no-auth] [--cors-origin ORIGIN]... [--allowed-host NAME]... [--prefer-codec h264|vp8]
                          [--connect-timeout SEC] [--takeover] [--max-pending-per-ip N] [--player-remb]
                          [--record DIR [--record-segment SEC] [--record-format mp4|webm|mkv]]

    An SRS-compatible WebRTC server: publish with POST /rtc/v1/publish/ (SRS JSON) or WHIP
    /rtc/v1/whip/?app=&stream=, play with /rtc/v1/play/ or WHEP /rtc/v1/whep/?app=&stream=.
    RTP is forwarded without transcoding; a player page is at /players/. P2P signaling
    (WebSocket, rooms of two) is at /rtc/v1/signal/?room=NAME, as in `swiftrtc signal`.

      --http HOST:PORT     HTTP API (default 127.0.0.1:1985)
      --udp HOST:PORT      the one UDP port for all media (default 127.0.0.1:8000)
      --candidate IP       the address to advertise in answers (needed when --udp binds 0.0.0.0)
    access (a non-loopback --http/--udp needs a token, a hook or --no-auth):
      --publish-token T    publishers present T: WHIP `Authorization: Bearer T`, or ?token=T on the
                           SRS streamurl (webrtc://HOST/APP/STREAM?token=T; the only place a URL may carry it)
      --play-token T       the same for players (WHEP, /rtc/v1/play/)
      --api-token T        GET /api/v1/streams/, /api/v1/clients/, /metrics and DELETE /api/v1/clients/ID (kick)
                           need `Authorization: Bearer T`; without it they are off once any access is set
      --signal-token T     P2P signaling peers present T (`Authorization: Bearer T`, or from a browser the
                           WebSocket subprotocols swiftrtc.signal + swiftrtc.bearer.<base64url(T)>) and every
                           room needs ?key=KEY (16-128 of A-Z a-z 0-9 - _ .: the creator's key, the joiner's
                           must match); without it signaling is off once any access is set
      --hook URL           POST every publish/play as JSON (SRS's on_publish/on_play body) to URL;
                           2xx allows, unless the reply is JSON with a non-zero "code"
      --no-auth            serve anyone who can reach the ports (say so explicitly off loopback)
      --cors-origin O      a web origin whose pages may call the API, POST and open WebSockets (repeatable;
                           * for any); default: the server's own pages only (other Origins get 403)
      --allowed-host NAME  a DNS name the server is reached by (repeatable). Open (no tokens), it answers
                           only IP addresses, localhost and these names (others get 421: DNS rebinding);
                           with access control, given names become the only ones
      --prefer-codec C     answer publishers with h264 or vp8 first (default: the offerer's order)
      --connect-timeout S  end a session that has not connected after S seconds (default 10)
      --max-pending-per-ip N  sessions one IP may have that are not connected yet (default 64; 429 beyond)
      --takeover           a new publisher replaces the stream's current one at once (default: only
                           one silent for 0.5 s, e.g. killed, is replaced; players stay connected)
      --player-remb        a simulcast's players give REMB only (default: transport-cc, so each one's
                           layer follows a send-side estimate of its link, whose probes find a grown
                           link in seconds; REMB: 20-40 s). REMB costs the relay less CPU per
                           forwarded packet at hundreds of players (README, relay)
    recording (DVR):
      --record DIR         write every published stream to DIR/APP/STREAM/<start time>.<ext>, without
                           re-encoding; a new file per publisher session (a takeover starts one). With
                           --hook, every finished file is POSTed as SRS's on_dvr (the answer is ignored)
      --record-segment S   also start a new file at the first keyframe after S seconds
      --record-format F    mp4, webm or mkv (default: mp4 for H.264, webm for VP8; a container that
                           cannot hold the stream's codec gives mkv)
    App and stream names: 1–64 of A–Z a–z 0–9 - _ . (not starting with .).
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc serve", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let http = try a.option("http", default: (host: "127.0.0.1", port: UInt16(1985)), parseHostPort)
        let udp = try a.option("udp", default: (host: "127.0.0.1", port: UInt16(8000)), parseHostPort)
        let candidate = try a.option("candidate")
        var policy = AccessPolicy()
        policy.publishToken = try a.option("publish-token", default: String?.none, nonEmpty)
        policy.playToken = try a.option("play-token", default: String?.none, nonEmpty)
        policy.apiToken = try a.option("api-token", default: String?.none, nonEmpty)
        policy.signalToken = try a.option("signal-token", default: String?.none, nonEmpty)
        policy.hook = try a.option("hook", default: String?.none) { $0.hasPrefix("http://") || $0.hasPrefix("https://") ? $0 : nil }
        policy.corsOrigins = try a.options("cors-origin")
        policy.allowedHosts = try a.hostNames("allowed-host")
        let noAuth = a.flag("no-auth")
        let prefer = try a.option("prefer-codec", default: RtpCodecCapability?.none) { name in
            switch name.lowercased() {
            case "h264": return .h264
            case "vp8": return .vp8
            default: return nil
            }
        }
        let connectTimeout = try a.number("connect-timeout", default: 10.0, in: 0.1...300)
        let takeover = a.flag("takeover")
        let playerTransportCC = !a.flag("player-remb")
        let maxPending = try a.number("max-pending-per-ip", default: 64, in: 1...100_000)
        let recordDirectory = try a.option("record", default: String?.none, nonEmpty)
        let segment = try a.number("record-segment", default: 0.0, in: 0...86_400)
        let format = try a.option("record-format", default: RecordingContainer?.none) { RecordingContainer(rawValue: $0.lowercased()) }
        try a.finish()
        if recordDirectory == nil && (segment > 0 || format != nil) {
            throw UsageError("swiftrtc serve: --record-segment and --record-format need --record DIR")
        }
        let recording = recordDirectory.map {
            RecordingOptions(directory: $0, segment: segment > 0 ? .milliseconds(Int64(segment * 1000)) : nil, format: format)
        }
        if noAuth && !policy.isOpen { throw UsageError("swiftrtc serve: --no-auth contradicts the tokens/hook given") }
        let relay = try await RelayServer(httpHost: http.host, httpPort: http.port, udpHost: udp.host, udpPort: udp.port,
                                          candidate: candidate, policy: policy, allowOpenOnNetwork: noAuth,
                                          preferredVideoCodec: prefer, connectTimeout: .seconds(connectTimeout), takeover: takeover,
                                          maxPendingPerAddress: maxPending, recording: recording,
                                          playerTransportCC: playerTransportCC) { say($0) }
        say("serve: API on \(relay.url)/rtc/v1/, media on UDP \(relay.advertisedAddress), player page \(relay.url)/players/"
            + (policy.isOpen ? " (no access control)" : ""))
        say("serve: signaling on \(relay.signalURL)?room=NAME")
        if let recording {
            say("serve: recording every published stream to \(recording.directory)/APP/STREAM/"
                + (recording.segment.map { " in segments of \($0.components.seconds) s" } ?? ""))
        }
        await waitForTermination()
        say("serve: stopping")
        await relay.stop()
        return 0
    }

    private static func nonEmpty(_ s: String) -> String? { s.isEmpty ? nil : s }
}
