import PeerConnection
import Signaling
import Transport

/// Where a session's connections and signaling run: by default the process's shared event loop,
/// sockets on the configured interfaces and the network. Tests put all of it on a simulation: a
/// simulated loop, a virtual network and an in-process server.
public struct SessionEnvironment: Sendable {
    /// The loop every connection of the session runs on; the session's timers run there too.
    public var loop: EventLoop = .shared
    /// The connections' datagram paths (nil: sockets on `interfaceAddresses`).
    public var packetIO: PacketIOFactory?
    /// Carries the signaling requests (nil: the network).
    public var exchange: SignalingExchange?
    /// Counts the session's signaling work in flight (see `SignalingActivity`).
    public var activity = SignalingActivity()
    /// Seeds the reconnect backoff's jitter (nil: a random seed).
    public var seed: UInt64?

    public init() {}

    func makePeerConnection(_ configuration: PeerConnection.Configuration) throws -> PeerConnection {
        try PeerConnection(configuration: configuration, loop: loop, packetIO: packetIO)
    }
}
