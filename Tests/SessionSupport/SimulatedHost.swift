import Locks
import PeerConnection
import STUN
import Transport

/// A machine on a simulation's virtual network: every connection made there (a session makes a
/// new one each time it reconnects) gets its own sockets at the host's address, behind the
/// host's one access link — an outage cuts them all, the ones made during it too.
public final class SimulatedHost: Sendable {
    public let address: SocketAddress
    private let network: VirtualNetwork
    private let state = Locked(State())

    private struct State {
        var endpoints: [WeakEndpoint] = []
        var outageUntil: ContinuousClock.Instant?
    }

    private struct WeakEndpoint: @unchecked Sendable {
        // @unchecked: endpoints are touched only as loop work; the list is behind `state`'s lock.
        weak var endpoint: VirtualEndpoint?
    }

    init(network: VirtualNetwork, address: SocketAddress) {
        self.network = network
        self.address = address
    }

    /// Sockets for one connection at this host (a free port each time).
    public var packetIO: PacketIOFactory {
        { [self] loop, _ in
            let endpoint = try network.endpoint(at: address)
            let remaining = state.withLock { s -> Duration? in
                s.endpoints.removeAll { $0.endpoint == nil }
                s.endpoints.append(WeakEndpoint(endpoint: endpoint))
                return s.outageUntil.map { $0 - loop.now }
            }
            if let remaining, remaining > .zero {
                endpoint.uplink.blackHole(for: remaining)
                endpoint.downlink.blackHole(for: remaining)
            }
            return endpoint
        }
    }

    /// Drops everything the host sends or receives from now for `duration` (loop work).
    public func blackHole(for duration: Duration) {
        let loop = network.loop
        let endpoints = state.withLock { s -> [VirtualEndpoint] in
            s.outageUntil = loop.now + duration
            return s.endpoints.compactMap(\.endpoint)
        }
        for endpoint in endpoints {
            endpoint.uplink.blackHole(for: duration)
            endpoint.downlink.blackHole(for: duration)
        }
    }
}
