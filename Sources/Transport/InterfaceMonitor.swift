/// Reports the host's address changes on an event loop: a netlink socket on Linux
/// (`NetlinkInterfaceMonitor`), `NWPathMonitor` on Apple platforms (`PathInterfaceMonitor`),
/// or a test's `VirtualHost` on a simulated loop.
public protocol InterfaceMonitor: AnyObject {
    /// Loop work: from now on `handler` gets each change, as loop work, until `stop`.
    func start(_ handler: @escaping (InterfaceEvent) -> Void) throws(TransportError)
    /// Loop work; idempotent.
    func stop()
}

/// Makes the monitor for a connection on its loop (nil: this loop's host is not watched).
public typealias InterfaceMonitorFactory = @Sendable (EventLoop) throws(TransportError) -> InterfaceMonitor?

/// The platform's monitor for a threaded loop; none for a simulated loop, which polls nothing
/// (its tests inject interface events through a `VirtualHost`).
public let systemInterfaceMonitor: InterfaceMonitorFactory = { loop throws(TransportError) in
    guard !loop.isSimulated else { return nil }
    #if os(Linux)
    return NetlinkInterfaceMonitor(loop: loop)
    #elseif canImport(Network)
    return PathInterfaceMonitor(loop: loop)
    #else
    return nil
    #endif
}
