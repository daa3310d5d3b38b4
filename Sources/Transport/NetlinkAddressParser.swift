import STUN

/// The address messages of a Linux rtnetlink socket (RTM_NEWADDR / RTM_DELADDR, rtnetlink(7)),
/// sans-I/O: one datagram's bytes in, interface events out. Kernel input is still input: a
/// truncated or inconsistent message ends the parse of its datagram (the framing after it cannot
/// be trusted) and is counted, never trapped on. Netlink headers are in host byte order.
public enum NetlinkAddressParser {
    public struct Result: Sendable, Equatable {
        public var events: [InterfaceEvent] = []
        /// Messages that were not well-formed (the datagram's rest was skipped).
        public var malformed = 0
        /// The kernel said messages were dropped (NLMSG_OVERRUN): the caller should list the
        /// addresses afresh (`InterfaceAddressSet.resync`).
        public var overrun = false
    }

    static let headerSize = 16            // struct nlmsghdr
    static let addressHeaderSize = 8      // struct ifaddrmsg
    static let overrunType: UInt16 = 4    // NLMSG_OVERRUN
    static let newAddress: UInt16 = 20    // RTM_NEWADDR
    static let deleteAddress: UInt16 = 21 // RTM_DELADDR
    static let familyIPv4: UInt8 = 2      // AF_INET
    static let familyIPv6: UInt8 = 10     // AF_INET6 (Linux)
    static let attributeAddress: UInt16 = 1  // IFA_ADDRESS
    static let attributeLocal: UInt16 = 2    // IFA_LOCAL
    static let attributeFlags: UInt16 = 8    // IFA_FLAGS (32-bit, supersedes ifa_flags)
    static let flagDADFailed: UInt32 = 0x08  // IFA_F_DADFAILED
    static let flagTentative: UInt32 = 0x40  // IFA_F_TENTATIVE

    public static func parse(_ bytes: [UInt8]) -> Result {
        bytes.withUnsafeBytes { parse($0) }
    }

    public static func parse(_ bytes: UnsafeRawBufferPointer) -> Result {
        var result = Result()
        var offset = 0
        while bytes.count - offset >= headerSize {
            let length = Int(u32(bytes, offset))
            let type = u16(bytes, offset + 4)
            guard length >= headerSize, length <= bytes.count - offset else {
                result.malformed += 1
                return result
            }
            let body = UnsafeRawBufferPointer(rebasing: bytes[(offset + headerSize)..<(offset + length)])
            switch type {
            case newAddress, deleteAddress:
                guard let (address, flags) = addressMessage(body) else {
                    result.malformed += 1
                    return result
                }
                if let address {
                    // A tentative address cannot be bound yet; its NEWADDR comes again once
                    // DAD is done. One whose DAD failed will never work.
                    let usable = type == newAddress && flags & (flagTentative | flagDADFailed) == 0
                    result.events.append(usable ? .added(address) : .removed(address))
                }
            case overrunType:
                result.overrun = true
            default:
                break   // NLMSG_DONE, NLMSG_NOOP, NLMSG_ERROR, link and route messages
            }
            // Messages are padded to 4 bytes (NLMSG_ALIGN); the last one may end unpadded.
            offset += min((length + 3) & ~3, bytes.count - offset)
        }
        if offset != bytes.count { result.malformed += 1 }
        return result
    }

    /// An ifaddrmsg and its attributes: nil when malformed; a nil address for families and
    /// messages without one (not IPv4/IPv6, or no address attribute).
    private static func addressMessage(_ body: UnsafeRawBufferPointer) -> (InterfaceAddress?, UInt32)? {
        guard body.count >= addressHeaderSize else { return nil }
        let family = body[0], prefixLength = body[1]
        var flags = UInt32(body[2])
        let index = u32(body, 4)
        let size: Int
        switch family {
        case familyIPv4: size = 4
        case familyIPv6: size = 16
        default: size = 0
        }
        var address: [UInt8]?, local: [UInt8]?
        var offset = addressHeaderSize
        while body.count - offset >= 4 {
            let length = Int(u16(body, offset))
            let type = u16(body, offset + 2) & 0x3fff   // without NLA_F_NESTED / NLA_F_NET_BYTEORDER
            guard length >= 4, length <= body.count - offset else { return nil }
            let value = UnsafeRawBufferPointer(rebasing: body[(offset + 4)..<(offset + length)])
            switch type {
            case attributeAddress where size > 0:
                guard value.count == size else { return nil }
                address = Array(value)
            case attributeLocal where size > 0:
                guard value.count == size else { return nil }
                local = Array(value)
            case attributeFlags:
                guard value.count == 4 else { return nil }
                flags = u32(value, 0)
            default:
                break
            }
            offset += min((length + 3) & ~3, body.count - offset)
        }
        guard offset == body.count else { return nil }
        // IPv4: IFA_LOCAL is ours; IFA_ADDRESS is the peer's on a point-to-point link.
        guard let bytes = local ?? address else { return (nil, flags) }
        let ip: SocketAddress.IP = size == 4
            ? .v4(bytes.reduce(0) { $0 << 8 | UInt32($1) })
            : .v6(bytes)
        return (InterfaceAddress(ip: ip, prefixLength: prefixLength, interfaceIndex: index), flags)
    }

    private static func u16(_ b: UnsafeRawBufferPointer, _ at: Int) -> UInt16 {
        b.loadUnaligned(fromByteOffset: at, as: UInt16.self)
    }

    private static func u32(_ b: UnsafeRawBufferPointer, _ at: Int) -> UInt32 {
        b.loadUnaligned(fromByteOffset: at, as: UInt32.self)
    }
}

/// Fuzzing entry point for the netlink address parser: any bytes parse without trapping, and
/// every event carries an address of its family's size.
public func fuzzNetlinkAddresses(_ bytes: [UInt8]) {
    let result = NetlinkAddressParser.parse(bytes)
    for event in result.events {
        if case .v6(let b) = event.address.ip {
            precondition(b.count == 16, "fuzzNetlinkAddresses: an IPv6 address of \(b.count) bytes")
        }
    }
    var set = InterfaceAddressSet()
    for event in result.events { _ = set.apply(event) }
    _ = set.resync(to: [])
    precondition(set.addresses.isEmpty, "fuzzNetlinkAddresses: a resync to nothing left addresses")
}
