import STUN

/// A simulated machine on a `VirtualNetwork`: the interface addresses its connections gather
/// on, which a test adds and removes while they run (Wi-Fi coming up, a phone leaving it).
/// `monitors` makes each connection's `InterfaceMonitor`; a change reaches every started one as
/// loop work. Removing an address first takes it off the network, as the kernel does before it
/// tells anyone: sockets there can no longer send or receive. Loop work only.
public final class VirtualHost: @unchecked Sendable {
    // @unchecked: touched only by `network.loop`'s work; Sendable so a factory can capture it.
    public let network: VirtualNetwork
    public private(set) var addresses: [SocketAddress.IP]
    private var monitors: [WeakMonitor] = []

    private struct WeakMonitor {
        weak var monitor: VirtualInterfaceMonitor?
    }

    public init(network: VirtualNetwork, addresses: [SocketAddress.IP]) {
        self.network = network
        self.addresses = addresses
    }

    /// The factory a `PeerConnection` takes to watch this host.
    public var monitorFactory: InterfaceMonitorFactory {
        { [self] _ in
            let monitor = VirtualInterfaceMonitor(loop: network.loop)
            monitors.append(WeakMonitor(monitor: monitor))
            return monitor
        }
    }

    /// The host gets `ip` (a prefix length for the record only).
    public func addAddress(_ ip: SocketAddress.IP, prefixLength: UInt8 = 24) {
        network.loop.preconditionInLoop()
        guard !addresses.contains(ip) else { return }
        addresses.append(ip)
        report(.added(InterfaceAddress(ip: ip, prefixLength: prefixLength)))
    }

    /// The host loses `ip`: off the network at once, then reported.
    public func removeAddress(_ ip: SocketAddress.IP, prefixLength: UInt8 = 24) {
        network.loop.preconditionInLoop()
        guard addresses.contains(ip) else { return }
        addresses.removeAll { $0 == ip }
        network.removeAddress(ip)
        report(.removed(InterfaceAddress(ip: ip, prefixLength: prefixLength)))
    }

    private func report(_ event: InterfaceEvent) {
        monitors.removeAll { $0.monitor == nil }
        for entry in monitors {
            guard let monitor = entry.monitor else { continue }
            // Later, as loop work: a kernel message is read after the change, never inside it.
            network.loop.execute { monitor.deliver(event) }
        }
    }
}

/// A connection's view of a `VirtualHost`.
final class VirtualInterfaceMonitor: InterfaceMonitor, @unchecked Sendable {
    // @unchecked: touched only by `loop`'s work.
    let loop: EventLoop
    private var handler: ((InterfaceEvent) -> Void)?

    init(loop: EventLoop) {
        self.loop = loop
    }

    func start(_ handler: @escaping (InterfaceEvent) -> Void) throws(TransportError) {
        self.handler = handler
    }

    func stop() {
        handler = nil
    }

    func deliver(_ event: InterfaceEvent) {
        handler?(event)
    }
}
