import Glibc
import STUN

/// Local addresses to gather host candidates on: every up interface, loopback included,
/// IPv4 and global/ULA IPv6 (link-local IPv6 needs scope ids that SDP cannot carry).
public func localInterfaceAddresses(includeIPv6: Bool = false) -> [SocketAddress] {
    var list: UnsafeMutablePointer<ifaddrs>?
    guard getifaddrs(&list) == 0, let first = list else { return [] }
    defer { freeifaddrs(list) }
    var result: [SocketAddress] = []
    var cursor: UnsafeMutablePointer<ifaddrs>? = first
    while let entry = cursor {
        defer { cursor = entry.pointee.ifa_next }
        guard let addr = entry.pointee.ifa_addr, entry.pointee.ifa_flags & UInt32(IFF_UP) != 0 else { continue }
        let family = Int32(addr.pointee.sa_family)
        guard family == AF_INET || (includeIPv6 && family == AF_INET6) else { continue }
        var storage = sockaddr_storage()
        withUnsafeMutableBytes(of: &storage) { dst in
            let size = family == AF_INET ? MemoryLayout<sockaddr_in>.size : MemoryLayout<sockaddr_in6>.size
            dst.copyMemory(from: UnsafeRawBufferPointer(start: addr, count: size))
        }
        guard let address = SocketAddress(storage: &storage) else { continue }
        if case .v6(let b) = address.ip, b.count == 16, b[0] == 0xfe, b[1] & 0xc0 == 0x80 { continue }
        if !result.contains(address) { result.append(address) }
    }
    // Non-loopback first: peers on other hosts try them first; loopback stays for same-host peers.
    return result.filter { !$0.isLoopback } + result.filter { $0.isLoopback }
}
