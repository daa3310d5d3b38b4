import SwiftRTC

/// `--reconnect on|off` and what a command says while its session recovers.
enum ReconnectOptions {
    static let usage = """
      --reconnect on|off  on (default): a lost connection is recovered without user action — ICE
                         restart, then new sessions with backoff (0.3 s doubling to 7 s, no limit);
                         the status line says "reconnecting (attempt N)". off: the first failure
                         ends the command with a non-zero exit (for scripts)
    """

    static func parse(_ a: inout Arguments) throws(UsageError) -> ReconnectPolicy {
        try a.option("reconnect", default: ReconnectPolicy()) {
            switch $0 {
            case "on": ReconnectPolicy()
            case "off": .off
            default: nil
            }
        }
    }

    /// Prints each recovery event of `session` as a line of its own (the status line shows the
    /// current one), until the session stops.
    static func announce(_ session: StreamingSession, command: String) {
        let events = session.events
        Task {
            for await event in events {
                if case .failed(let why) = event { printError("\(command): \(why)") } else { say("\(command): \(describe(event))") }
            }
        }
    }

    static func describe(_ event: ReconnectEvent) -> String {
        switch event {
        case .restartingIce: "connection lost, restarting ICE"
        case .iceRestarted: "connected again (ICE restarted)"
        case .reconnecting(let attempt): "reconnecting (attempt \(attempt))"
        case .reconnected: "reconnected"
        case .failed(let why): why
        }
    }
}
