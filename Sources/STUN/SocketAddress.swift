#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An IP address and UDP/TCP port, shared by every layer of the stack.
public struct SocketAddress: Hashable, Sendable, CustomStringConvertible {
    public enum IP: Hashable, Sendable {
        /// IPv4 address in host byte order (`0x7f000001` is 127.0.0.1).
        case v4(UInt32)
        /// IPv6 address as its 16 network-order bytes.
        case v6([UInt8])
    }

    public var ip: IP
    public var port: UInt16

    public init(ip: IP, port: UInt16) {
        self.ip = ip
        self.port = port
    }

    /// Parses dotted IPv4 or IPv6 text ("::1", "[::1]", "fe80::1%eth0" — the zone is dropped).
    /// Returns nil for anything else, including host names.
    public init?(host: String, port: UInt16) {
        var text = Substring(host)
        if text.hasPrefix("["), text.hasSuffix("]") {
            text = text.dropFirst().dropLast()
        }
        if let zone = text.firstIndex(of: "%") {
            text = text[..<zone]
        }
        let plain = String(text)
        if plain.contains(":") {
            var addr = in6_addr()
            guard inet_pton(AF_INET6, plain, &addr) == 1 else { return nil }
            let bytes = withUnsafeBytes(of: &addr) { Array($0) }
            self.ip = .v6(bytes)
        } else {
            var addr = in_addr()
            guard inet_pton(AF_INET, plain, &addr) == 1 else { return nil }
            self.ip = .v4(UInt32(bigEndian: addr.s_addr))
        }
        self.port = port
    }

    /// The address as text without the port: "1.2.3.4" or "2001:db8::1".
    public var host: String {
        switch ip {
        case .v4(let v):
            return "\(v >> 24).\((v >> 16) & 0xff).\((v >> 8) & 0xff).\(v & 0xff)"
        case .v6(let bytes):
            guard bytes.count == 16 else { return "::" }
            var addr = in6_addr()
            withUnsafeMutableBytes(of: &addr) { raw in
                for i in 0..<16 { raw[i] = bytes[i] }
            }
            var buffer = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
            guard inet_ntop(AF_INET6, &addr, &buffer, socklen_t(buffer.count)) != nil else { return "::" }
            return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        }
    }

    public var description: String {
        switch ip {
        case .v4: return "\(host):\(port)"
        case .v6: return "[\(host)]:\(port)"
        }
    }

    public var isIPv4: Bool {
        if case .v4 = ip { return true }
        return false
    }

    /// 127.0.0.0/8 or ::1.
    public var isLoopback: Bool {
        switch ip {
        case .v4(let v): return v >> 24 == 127
        case .v6(let b): return b.count == 16 && b.prefix(15).allSatisfy { $0 == 0 } && b[15] == 1
        }
    }

    /// 169.254.0.0/16 or fe80::/10.
    public var isLinkLocal: Bool {
        switch ip {
        case .v4(let v): return v >> 16 == 0xa9fe
        case .v6(let b): return b.count == 16 && b[0] == 0xfe && (b[1] & 0xc0) == 0x80
        }
    }

    /// 0.0.0.0 or ::.
    public var isUnspecified: Bool {
        switch ip {
        case .v4(let v): return v == 0
        case .v6(let b): return b.allSatisfy { $0 == 0 }
        }
    }
}

// MARK: - sockaddr conversion for drivers that own sockets

extension SocketAddress {
    /// Reads a `sockaddr_in` or `sockaddr_in6`; nil for other families.
    public init?(sockaddr pointer: UnsafePointer<sockaddr>) {
        switch Int32(pointer.pointee.sa_family) {
        case AF_INET:
            let sin = UnsafeRawPointer(pointer).loadUnaligned(as: sockaddr_in.self)
            self.init(ip: .v4(UInt32(bigEndian: sin.sin_addr.s_addr)), port: UInt16(bigEndian: sin.sin_port))
        case AF_INET6:
            var sin6 = UnsafeRawPointer(pointer).loadUnaligned(as: sockaddr_in6.self)
            let bytes = withUnsafeBytes(of: &sin6.sin6_addr) { Array($0) }
            self.init(ip: .v6(bytes), port: UInt16(bigEndian: sin6.sin6_port))
        default:
            return nil
        }
    }

    /// Calls `body` with this address as a `sockaddr` of the right family and its length.
    public func withSockAddr<R>(_ body: (UnsafePointer<sockaddr>, socklen_t) throws -> R) rethrows -> R {
        switch ip {
        case .v4(let v):
            var sin = sockaddr_in()
            sin.sin_family = sa_family_t(AF_INET)
            sin.sin_port = port.bigEndian
            sin.sin_addr = in_addr(s_addr: v.bigEndian)
            return try withUnsafePointer(to: &sin) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in>.size))
                }
            }
        case .v6(let bytes):
            var sin6 = sockaddr_in6()
            sin6.sin6_family = sa_family_t(AF_INET6)
            sin6.sin6_port = port.bigEndian
            withUnsafeMutableBytes(of: &sin6.sin6_addr) { raw in
                for i in 0..<min(16, bytes.count) { raw[i] = bytes[i] }
            }
            return try withUnsafePointer(to: &sin6) {
                try $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    try body($0, socklen_t(MemoryLayout<sockaddr_in6>.size))
                }
            }
        }
    }
}
