import SwiftRTC

/// `--ice-server URL` (repeatable), `--ice-username`, `--ice-credential`, `--ice-ca-file`,
/// `--ice-transport-policy all|relay`: shared by every command that makes a PeerConnection.
struct IceOptions {
    var servers: [IceServer] = []
    var policy: IceTransportPolicy = .all

    static let usage = """
      --ice-server URL    stun:HOST[:PORT], turn:HOST[:PORT][?transport=udp|tcp] or
                          turns:HOST[:PORT][?transport=tcp] (TURN over TLS, port 5349) (repeatable)
      --ice-username U    TURN username        --ice-credential P   TURN password
      --ice-ca-file PATH  trust the CA certificates in PATH (PEM) for turns: besides the system's
      --ice-transport-policy all|relay   relay: only TURN relay candidates (default all)
    """

    static func parse(_ a: inout Arguments, command: String) throws(UsageError) -> IceOptions {
        let urls = try a.options("ice-server")
        let username = try a.option("ice-username")
        let credential = try a.option("ice-credential")
        let caFile = try a.option("ice-ca-file")
        let policyText = try a.option("ice-transport-policy") ?? "all"
        guard let policy = IceTransportPolicy(rawValue: policyText) else {
            throw UsageError("\(command): --ice-transport-policy must be all or relay, not \"\(policyText)\"")
        }
        if policy == .relay, !urls.contains(where: { $0.lowercased().hasPrefix("turn") }) {
            throw UsageError("\(command): --ice-transport-policy relay needs a --ice-server turn:… URL")
        }
        if caFile != nil, !urls.contains(where: { $0.lowercased().hasPrefix("turns:") }) {
            throw UsageError("\(command): --ice-ca-file is for turns: servers, and there is no --ice-server turns:… URL")
        }
        var options = IceOptions(policy: policy)
        if !urls.isEmpty {
            options.servers = [IceServer(urls: urls, username: username, credential: credential, tlsCAFile: caFile)]
        }
        return options
    }

    func apply(to configuration: inout PeerConnection.Configuration) {
        configuration.iceServers += servers
        configuration.iceTransportPolicy = policy
    }
}
