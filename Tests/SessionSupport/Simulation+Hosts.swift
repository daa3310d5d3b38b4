import PeerConnection
import STUN
import Transport

/// Peers whose machine has several interfaces, which a test adds and removes while they run
/// (`VirtualHost`): their connections gather on every address the host has and follow its
/// changes as a netlink monitor would report them.
extension Simulation {
    /// A host with `count` fresh addresses (10.0.0.N).
    public func host(addresses count: Int) -> VirtualHost {
        VirtualHost(network: network, addresses: (0..<count).map { _ in nextAddress().ip })
    }

    /// A peer on `host`: a socket on each of its addresses (the first preferred), its interface
    /// changes injected. `endpoint` receives its attachment (to set link conditions).
    public func peer(on host: VirtualHost, _ configure: (inout PeerConnection.Configuration) -> Void = { _ in },
                     endpoint: (@Sendable (VirtualEndpoint) -> Void)? = nil) throws -> PeerConnection {
        var config = PeerConnection.Configuration()
        config.codecExecution = .inline
        configure(&config)
        let network = network
        return try PeerConnection(configuration: config, loop: loop, packetIO: { _, _ in
            let io = try network.endpoint(at: host.addresses.map { SocketAddress(ip: $0, port: 0) })
            endpoint?(io)
            return io
        }, interfaces: host.monitorFactory)
    }

    /// Adds or removes one of `host`'s addresses now (as loop work).
    public func add(_ ip: SocketAddress.IP, to host: VirtualHost) {
        loop.perform { host.addAddress(ip) }
    }

    public func remove(_ ip: SocketAddress.IP, from host: VirtualHost) {
        loop.perform { host.removeAddress(ip) }
    }
}
