// The Apple driver of `InterfaceMonitor`. Only compiled on Apple platforms, never on this Linux
// machine: NWPathMonitor says that the path changed, not which address did, so each update lists
// the addresses afresh and reports the difference (`InterfaceAddressSet.resync`), the same
// changes the netlink driver reports on Linux.
#if canImport(Network) && !os(Linux)
import Dispatch
import Network

public final class PathInterfaceMonitor: InterfaceMonitor, @unchecked Sendable {
    // @unchecked: `known` and `handler` are touched only by `loop`'s work; the path monitor's
    // queue only hands updates to the loop.
    public let loop: EventLoop
    private var monitor: NWPathMonitor?
    private var known = InterfaceAddressSet()
    private var handler: ((InterfaceEvent) -> Void)?
    private let queue = DispatchQueue(label: "swiftrtc.path-monitor")

    public init(loop: EventLoop) {
        self.loop = loop
    }

    public func start(_ handler: @escaping (InterfaceEvent) -> Void) throws(TransportError) {
        loop.preconditionInLoop()
        guard monitor == nil else { return }
        self.handler = handler
        known = InterfaceAddressSet(interfaceAddresses())
        let monitor = NWPathMonitor()
        monitor.pathUpdateHandler = { [weak self] _ in
            guard let self else { return }
            self.loop.execute { [weak self] in self?.pathChanged() }
        }
        monitor.start(queue: queue)
        self.monitor = monitor
    }

    public func stop() {
        monitor?.cancel()
        monitor = nil
        handler = nil
    }

    private func pathChanged() {
        guard let handler else { return }
        for event in known.resync(to: interfaceAddresses()) { handler(event) }
    }
}
#endif
