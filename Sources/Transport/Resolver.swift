import Glibc
import STUN

/// Host names to addresses with getaddrinfo: blocking, so call it off any event loop (the
/// PeerConnection resolves its ICE servers once, when it is created).
public enum Resolver {
    /// IPv4 first (our sockets are mostly IPv4), then IPv6; an IP literal comes back as itself.
    public static func resolve(_ host: String, port: UInt16) throws(TransportError) -> [SocketAddress] {
        if let literal = SocketAddress(host: host, port: port) { return [literal] }
        var hints = addrinfo()
        hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
        hints.ai_family = AF_UNSPEC
        var list: UnsafeMutablePointer<addrinfo>?
        let rc = getaddrinfo(host, nil, &hints, &list)
        guard rc == 0 else {
            throw TransportError("cannot resolve \"\(host)\": \(String(cString: gai_strerror(rc)))")
        }
        defer { freeaddrinfo(list) }
        var found: [SocketAddress] = []
        var entry = list
        while let e = entry {
            if let sa = e.pointee.ai_addr, var address = SocketAddress(sockaddr: UnsafePointer(sa)) {
                address.port = port
                if !found.contains(address) { found.append(address) }
            }
            entry = e.pointee.ai_next
        }
        guard !found.isEmpty else { throw TransportError("\"\(host)\" has no IPv4 or IPv6 address") }
        return found.filter(\.isIPv4) + found.filter { !$0.isIPv4 }
    }
}
