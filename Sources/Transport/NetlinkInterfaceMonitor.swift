#if os(Linux)
import Glibc

/// The Linux driver of `InterfaceMonitor`: an rtnetlink socket subscribed to the IPv4 and IPv6
/// address groups, polled by a threaded loop; its datagrams go through `NetlinkAddressParser`.
/// Lost messages (the socket's buffer overran) are made good by listing the addresses afresh.
public final class NetlinkInterfaceMonitor: InterfaceMonitor {
    public let loop: EventLoop
    private var fd: Int32 = -1
    private var known = InterfaceAddressSet()
    private var handler: ((InterfaceEvent) -> Void)?
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 65536, alignment: 8)
    /// Parse results the kernel sent that were malformed (counted, skipped).
    public private(set) var malformedMessages = 0

    static let netlinkRoute: Int32 = 0             // NETLINK_ROUTE
    static let groups: UInt32 = 0x10 | 0x100       // RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR

    public init(loop: EventLoop) {
        self.loop = loop
    }

    public func start(_ handler: @escaping (InterfaceEvent) -> Void) throws(TransportError) {
        loop.preconditionInLoop()
        guard fd < 0 else { return }
        let fd = socket(AF_NETLINK, Int32(SOCK_RAW.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue),
                        Self.netlinkRoute)
        guard fd >= 0 else { throw TransportError("netlink socket() failed: \(errnoString())") }
        // struct sockaddr_nl: family, pad, pid (0: the kernel assigns), groups.
        var address = [UInt8](repeating: 0, count: 12)
        address.withUnsafeMutableBytes { p in
            p.storeBytes(of: UInt16(AF_NETLINK), toByteOffset: 0, as: UInt16.self)
            p.storeBytes(of: Self.groups, toByteOffset: 8, as: UInt32.self)
        }
        let rc = address.withUnsafeBytes { p in
            Glibc.bind(fd, p.baseAddress?.assumingMemoryBound(to: sockaddr.self), socklen_t(p.count))
        }
        guard rc == 0 else {
            let reason = errnoString()
            Glibc.close(fd)
            throw TransportError("netlink bind to the address groups failed: \(reason)")
        }
        self.fd = fd
        self.handler = handler
        // Subscribed first, then listed: an address that appears in between is in the listing,
        // and its message changes nothing.
        known = InterfaceAddressSet(interfaceAddresses())
        loop.register(fd: fd) { [weak self] in self?.readable() }
    }

    public func stop() {
        guard fd >= 0 else { return }
        loop.unregister(fd: fd)
        Glibc.close(fd)
        fd = -1
        handler = nil
    }

    private func readable() {
        for _ in 0..<64 {   // bounded, like the UDP drain
            guard fd >= 0 else { return }
            let n = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
            if n < 0 {
                // ENOBUFS: the kernel dropped messages for us; the listing says what they were.
                if errno == ENOBUFS { report(known.resync(to: interfaceAddresses())) }
                if errno == EINTR || errno == ENOBUFS { continue }
                return
            }
            let result = NetlinkAddressParser.parse(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            malformedMessages += result.malformed
            report(result.events.compactMap { known.apply($0) })
            if result.overrun { report(known.resync(to: interfaceAddresses())) }
        }
    }

    private func report(_ events: [InterfaceEvent]) {
        for event in events { handler?(event) }
    }

    deinit {
        // Not stopped: the loop must forget the fd before it is closed, or it polls a dead one.
        if fd >= 0 {
            let fd = fd, loop = loop
            loop.execute {
                loop.unregister(fd: fd)
                Glibc.close(fd)
            }
        }
        buffer.deallocate()
    }
}
#endif
