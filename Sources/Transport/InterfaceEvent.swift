import STUN

/// An address assigned to one of the host's interfaces.
public struct InterfaceAddress: Hashable, Sendable, CustomStringConvertible {
    public var ip: SocketAddress.IP
    public var prefixLength: UInt8
    /// The interface's index (`if_nametoindex`); 0 when not known.
    public var interfaceIndex: UInt32

    public init(ip: SocketAddress.IP, prefixLength: UInt8, interfaceIndex: UInt32 = 0) {
        self.ip = ip
        self.prefixLength = prefixLength
        self.interfaceIndex = interfaceIndex
    }

    public var description: String {
        "\(SocketAddress(ip: ip, port: 0).host)/\(prefixLength)" + (interfaceIndex == 0 ? "" : " if\(interfaceIndex)")
    }

    /// Whether host candidates may be gathered on it: IPv4 (loopback included), and with
    /// `includeIPv6` global or ULA IPv6 — link-local IPv6 needs a scope id SDP cannot carry.
    public func isGatherable(includeIPv6: Bool) -> Bool {
        let address = SocketAddress(ip: ip, port: 0)
        guard !address.isUnspecified else { return false }
        if address.isIPv4 { return true }
        return includeIPv6 && !address.isLinkLocal
    }
}

/// A change of the host's addresses, as an interface monitor reports it.
public enum InterfaceEvent: Hashable, Sendable {
    /// Usable now: assigned and, for IPv6, past duplicate address detection.
    case added(InterfaceAddress)
    /// Gone, or no longer usable (IPv6 duplicate address detection failed).
    case removed(InterfaceAddress)

    public var address: InterfaceAddress {
        switch self {
        case .added(let a), .removed(let a): a
        }
    }
}

/// The addresses a monitor has reported, by IP: turns a stream of kernel messages (which
/// repeat an address on every lifetime update) or a fresh listing into changes only.
public struct InterfaceAddressSet: Sendable {
    public private(set) var addresses: [SocketAddress.IP: InterfaceAddress] = [:]

    public init(_ initial: [InterfaceAddress] = []) {
        for a in initial { addresses[a.ip] = a }
    }

    /// The event as a change of the set; nil when it changes nothing.
    public mutating func apply(_ event: InterfaceEvent) -> InterfaceEvent? {
        switch event {
        case .added(let a):
            guard addresses[a.ip] == nil else { return nil }
            addresses[a.ip] = a
        case .removed(let a):
            guard addresses.removeValue(forKey: a.ip) != nil else { return nil }
        }
        return event
    }

    /// What changed between the set and a full `listing` (after lost messages, or on a
    /// platform that says only "the path changed"): removals first, then additions, each in
    /// a stable order. The set becomes the listing.
    public mutating func resync(to listing: [InterfaceAddress]) -> [InterfaceEvent] {
        var now: [SocketAddress.IP: InterfaceAddress] = [:]
        for a in listing where now[a.ip] == nil { now[a.ip] = a }
        let gone = addresses.values.filter { now[$0.ip] == nil }.sorted { $0.description < $1.description }
        var seen = Set<SocketAddress.IP>()
        let new = listing.filter { addresses[$0.ip] == nil && seen.insert($0.ip).inserted }
        addresses = now
        return gone.map(InterfaceEvent.removed) + new.map(InterfaceEvent.added)
    }
}
