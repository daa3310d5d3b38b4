import STUN

public enum CandidateType: String, Sendable, Hashable, CaseIterable {
    case host, srflx, prflx, relay

    /// RFC 8445 §5.1.2.2 recommended type preferences.
    public var preference: UInt32 {
        switch self {
        case .host: return 126
        case .prflx: return 110
        case .srflx: return 100
        case .relay: return 0
        }
    }
}

/// An ICE candidate as carried in SDP `a=candidate:` lines and W3C `RTCIceCandidate.candidate`.
public struct Candidate: Sendable, Hashable, CustomStringConvertible {
    public var foundation: String
    public var component: Int
    /// Lowercased transport ("udp", "tcp").
    public var transport: String
    public var priority: UInt32
    /// IP text or an mDNS ".local" name.
    public var address: String
    public var port: UInt16
    public var type: CandidateType
    public var relatedAddress: String?
    public var relatedPort: UInt16?
    /// Trailing name/value pairs in their original order (generation, ufrag, network-id, tcptype…).
    public var extensions: [(String, String)]

    public init(foundation: String, component: Int = 1, transport: String = "udp", priority: UInt32,
                address: String, port: UInt16, type: CandidateType,
                relatedAddress: String? = nil, relatedPort: UInt16? = nil, extensions: [(String, String)] = []) {
        self.foundation = foundation
        self.component = component
        self.transport = transport.lowercased()
        self.priority = priority
        self.address = address
        self.port = port
        self.type = type
        self.relatedAddress = relatedAddress
        self.relatedPort = relatedPort
        self.extensions = extensions
    }

    /// RFC 8445 §5.1.2.1: (2^24)*type preference + (2^8)*local preference + (256 - component ID).
    public static func priority(type: CandidateType, localPreference: UInt16, component: Int = 1) -> UInt32 {
        let componentPart = UInt32(max(0, min(255, 256 - component)))
        return (type.preference << 24) | (UInt32(localPreference) << 8) | componentPart
    }

    /// The address as a socket address; nil for mDNS and other names.
    public var socketAddress: SocketAddress? {
        SocketAddress(host: address, port: port)
    }

    /// Value of the first extension with this name, e.g. `extensionValue("ufrag")`.
    public func extensionValue(_ name: String) -> String? {
        extensions.first { $0.0 == name }?.1
    }

    /// Parses "candidate:…" with or without a leading "a=" and with or without "candidate:".
    public init(parsing attribute: String) throws(ICEError) {
        var text = Substring(attribute)
        while let last = text.last, last.isNewline || last == " " { text = text.dropLast() }
        if text.hasPrefix("a=") { text = text.dropFirst(2) }
        if text.lowercased().hasPrefix("candidate:") { text = text.dropFirst("candidate:".count) }
        let fields = text.split(whereSeparator: { $0 == " " || $0 == "\t" }).map(String.init)
        guard fields.count >= 8 else {
            throw ICEError("candidate has \(fields.count) fields, needs at least 8: \"\(attribute)\"")
        }
        let foundation = fields[0]
        guard (1...32).contains(foundation.count), foundation.allSatisfy(Self.isIceChar) else {
            throw ICEError("candidate field 1 (foundation) \"\(foundation)\" is not 1-32 ice-chars")
        }
        guard let component = Int(fields[1]), (1...256).contains(component) else {
            throw ICEError("candidate field 2 (component) \"\(fields[1])\" is not a number in 1...256")
        }
        let transport = fields[2].lowercased()
        guard !transport.isEmpty, transport.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else {
            throw ICEError("candidate field 3 (transport) \"\(fields[2])\" is not a token")
        }
        guard let priority = UInt32(fields[3]) else {
            throw ICEError("candidate field 4 (priority) \"\(fields[3])\" is not a 32-bit number")
        }
        let address = fields[4]
        guard let port = UInt16(fields[5]) else {
            throw ICEError("candidate field 6 (port) \"\(fields[5])\" is not a port number")
        }
        guard fields[6] == "typ" else {
            throw ICEError("candidate field 7 is \"\(fields[6])\", expected \"typ\"")
        }
        guard let type = CandidateType(rawValue: fields[7].lowercased()) else {
            throw ICEError("candidate field 8 (type) \"\(fields[7])\" is not host, srflx, prflx or relay")
        }
        var relatedAddress: String?
        var relatedPort: UInt16?
        var extensions: [(String, String)] = []
        var index = 8
        while index < fields.count {
            guard index + 1 < fields.count else {
                throw ICEError("candidate field \(index + 1) \"\(fields[index])\" has no value")
            }
            let name = fields[index], value = fields[index + 1]
            switch name {
            case "raddr":
                relatedAddress = value
            case "rport":
                guard let p = UInt16(value) else {
                    throw ICEError("candidate field \(index + 2) (rport) \"\(value)\" is not a port number")
                }
                relatedPort = p
            default:
                extensions.append((name, value))
            }
            index += 2
        }
        self.init(foundation: foundation, component: component, transport: transport, priority: priority,
                  address: address, port: port, type: type, relatedAddress: relatedAddress,
                  relatedPort: relatedPort, extensions: extensions)
    }

    /// "candidate:1 1 udp 2130706431 192.0.2.1 5000 typ host …" (no "a=").
    public var attributeValue: String {
        var parts = ["candidate:\(foundation)", String(component), transport, String(priority), address, String(port), "typ", type.rawValue]
        if let relatedAddress { parts += ["raddr", relatedAddress] }
        if let relatedPort { parts += ["rport", String(relatedPort)] }
        for (name, value) in extensions { parts += [name, value] }
        return parts.joined(separator: " ")
    }

    public var description: String { attributeValue }

    static func isIceChar(_ c: Character) -> Bool {
        c.isASCII && (c.isLetter || c.isNumber || c == "+" || c == "/")
    }

    // Tuples are not Hashable, so equality and hashing are spelled out.
    public static func == (a: Candidate, b: Candidate) -> Bool {
        a.foundation == b.foundation && a.component == b.component && a.transport == b.transport
            && a.priority == b.priority && a.address == b.address && a.port == b.port && a.type == b.type
            && a.relatedAddress == b.relatedAddress && a.relatedPort == b.relatedPort
            && a.extensions.count == b.extensions.count
            && zip(a.extensions, b.extensions).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(foundation)
        hasher.combine(component)
        hasher.combine(transport)
        hasher.combine(priority)
        hasher.combine(address)
        hasher.combine(port)
        hasher.combine(type)
        hasher.combine(relatedAddress)
        hasher.combine(relatedPort)
        for (name, value) in extensions {
            hasher.combine(name)
            hasher.combine(value)
        }
    }
}
