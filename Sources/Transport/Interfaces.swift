import Glibc
import STUN

/// Every address of every up interface, loopback included, IPv4 and IPv6 (link-local too):
/// what an `InterfaceMonitor` compares its messages with.
public func interfaceAddresses() -> [InterfaceAddress] {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0, let first = list else { return [] }
    defer { freeifaddrs(list) }
    var result: [InterfaceAddress] = []
    var cursor: UnsafeMutablePointer<ifaddrs>? = first
    while let entry = cursor {
        defer { cursor = entry.pointee.ifa_next }
        guard let addr = entry.pointee.ifa_addr, entry.pointee.ifa_flags & UInt32(IFF_UP) != 0,
              let ip = socketAddress(addr)?.ip else { continue }
        let prefix = entry.pointee.ifa_netmask.flatMap(socketAddress).map { prefixLength($0.ip) } ?? 0
        let index = entry.pointee.ifa_name.map { if_nametoindex($0) } ?? 0
        let address = InterfaceAddress(ip: ip, prefixLength: prefix, interfaceIndex: index)
        if !result.contains(where: { $0.ip == ip }) { result.append(address) }
    }
    return result
}

/// Local addresses to gather host candidates on: every up interface's gatherable addresses
/// (`InterfaceAddress.isGatherable`), non-loopback first: peers on other hosts try them first;
/// loopback stays for same-host peers.
public func localInterfaceAddresses(includeIPv6: Bool = false) -> [SocketAddress] {
    let result = interfaceAddresses().filter { $0.isGatherable(includeIPv6: includeIPv6) }.map { SocketAddress(ip: $0.ip, port: 0) }
    return result.filter { !$0.isLoopback } + result.filter { $0.isLoopback }
}

/// An IPv4 or IPv6 `sockaddr` as an address (other families: nil).
private func socketAddress(_ addr: UnsafeMutablePointer<sockaddr>) -> SocketAddress? {
    let family = Int32(addr.pointee.sa_family)
    guard family == AF_INET || family == AF_INET6 else { return nil }
    var storage = sockaddr_storage()
    withUnsafeMutableBytes(of: &storage) { dst in
        let size = family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size
        dst.copyMemory(from: UnsafeRawBufferPointer(start: addr, count: size))
    }
    return SocketAddress(storage: &storage)
}

/// The number of leading one bits of a netmask.
private func prefixLength(_ mask: SocketAddress.IP) -> UInt8 {
    switch mask {
    case .v4(let v): UInt8((~v).leadingZeroBitCount)
    case .v6(let bytes): UInt8(bytes.reduce(0) { $0 + (~$1).leadingZeroBitCount })
    }
}
