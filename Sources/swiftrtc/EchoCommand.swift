import Foundation
import SwiftRTC

enum EchoCommand {
    static let usage = """
    usage: swiftrtc echo [--http HOST:PORT] [--udp-port PORT | --udp HOST:PORT] [--candidate IP]

    A diagnostic endpoint like Janus's EchoTest: POST an SDP offer (Content-Type:
    application/sdp) to http://HOST:PORT/echo; the 201 answer's Location names the session
    (DELETE it to stop). Every RTP stream received is sent back on its m-line, every message
    on a data channel the peer opens comes back on that channel.

      --http HOST:PORT   where to listen for HTTP (default 127.0.0.1:8088)
      --udp-port PORT    the one UDP port all sessions share (default: any free port)
      --udp HOST:PORT    bind it on another address too (e.g. behind a proxy)
      --candidate IP     the address to advertise in answers (default: the bound one)
    """

    static func run(_ args: [String]) async throws -> Int32 {
        var a = Arguments(command: "swiftrtc echo", args, usage: usage)
        if a.wantsHelp { say(usage); return 0 }
        let http = try a.option("http", default: (host: "127.0.0.1", port: UInt16(8088)), parseHostPort)
        let udpPort = try a.number("udp-port", default: UInt16(0), in: 0...UInt16.max)
        let udp = try a.option("udp", default: (host: http.host, port: udpPort), parseHostPort)
        let candidate = try a.option("candidate")
        try a.finish()
        let server = try await EchoServer(httpHost: http.host, httpPort: http.port, udpHost: udp.host, udpPort: udp.port,
                                          candidate: candidate) { line in
            say(line)
        }
        say("echo: listening on \(server.url)")
        say("echo: media on UDP \(server.udpAddress)")
        await waitForTermination()
        say("echo: stopping")
        await server.stop()
        return 0
    }
}

/// Suspends until SIGINT or SIGTERM.
func waitForTermination() async {
    signal(SIGINT, SIG_IGN)
    signal(SIGTERM, SIG_IGN)
    await withCheckedContinuation { (cont: CheckedContinuation<Void, Never>) in
        let once = OnceFlag()
        for sig in [SIGINT, SIGTERM] {
            let source = DispatchSource.makeSignalSource(signal: sig, queue: .global())
            source.setEventHandler {
                if once.fire() { cont.resume() }
            }
            source.resume()
            signalSources.append(source)
        }
    }
}

nonisolated(unsafe) private var signalSources: [DispatchSourceSignal] = []

final class OnceFlag: @unchecked Sendable {
    // @unchecked: guarded by `lock`.
    private let lock = NSLock()
    private var fired = false
    var isFired: Bool {
        lock.lock()
        defer { lock.unlock() }
        return fired
    }

    func fire() -> Bool {
        lock.lock()
        defer { lock.unlock() }
        if fired { return false }
        fired = true
        return true
    }
}
