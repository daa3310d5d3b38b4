// The fixed-format lines of a description: o=, c=, b=, t= (with its r= lines) and a=.

/// `o=<username> <sess-id> <sess-version> <nettype> <addrtype> <unicast-address>`
public struct Origin: Sendable, Equatable {
    public var username: String
    /// Kept as text: RFC 8866 calls it a numeric string, but it only has to be unique.
    public var sessionID: String
    public var sessionVersion: UInt64
    public var netType: String
    public var addrType: String
    public var address: String

    public init(
        username: String = "-", sessionID: String = "0", sessionVersion: UInt64 = 0,
        netType: String = "IN", addrType: String = "IP4", address: String = "127.0.0.1"
    ) {
        self.username = username
        self.sessionID = sessionID
        self.sessionVersion = sessionVersion
        self.netType = netType
        self.addrType = addrType
        self.address = address
    }

    var line: String { "\(username) \(sessionID) \(sessionVersion) \(netType) \(addrType) \(address)" }

    static func parse(_ value: Substring) throws(ValueError) -> Origin {
        let parts = fields(value)
        guard parts.count == 6 else {
            throw ValueError(
                "o= needs 6 fields \"<username> <sess-id> <sess-version> <nettype> <addrtype> <address>\", got \(parts.count)")
        }
        guard let version = parseUInt64(parts[2]) else {
            throw ValueError("o= session version \(quoted(parts[2])) is not a number")
        }
        return Origin(
            username: String(parts[0]), sessionID: String(parts[1]), sessionVersion: version,
            netType: String(parts[3]), addrType: String(parts[4]), address: String(parts[5]))
    }
}

/// `c=<nettype> <addrtype> <connection-address>`; a multicast TTL or address count stays in `address`
/// (e.g. "233.252.0.1/127/3") since WebRTC never uses them.
public struct Connection: Sendable, Equatable {
    public var netType: String
    public var addrType: String
    public var address: String

    public init(netType: String = "IN", addrType: String = "IP4", address: String) {
        self.netType = netType
        self.addrType = addrType
        self.address = address
    }

    var line: String { "\(netType) \(addrType) \(address)" }

    static func parse(_ value: Substring) throws(ValueError) -> Connection {
        let parts = fields(value)
        guard parts.count == 3 else {
            throw ValueError("c= needs 3 fields \"<nettype> <addrtype> <address>\", got \(parts.count)")
        }
        return Connection(netType: String(parts[0]), addrType: String(parts[1]), address: String(parts[2]))
    }
}

/// `b=<bwtype>:<bandwidth>`, e.g. `b=AS:2500` (kilobits per second) or `b=TIAS:2500000` (bits per second).
public struct Bandwidth: Sendable, Equatable {
    public var type: String
    public var value: Int

    public init(type: String, value: Int) {
        self.type = type
        self.value = value
    }

    var line: String { "\(type):\(value)" }

    static func parse(_ value: Substring) throws(ValueError) -> Bandwidth {
        let (type, amount) = splitOnce(value, at: UInt8(ascii: ":"))
        guard let amount else { throw ValueError("b= must be \"<bwtype>:<bandwidth>\"") }
        guard isToken(type) else { throw ValueError("b= type \(quoted(type)) is not a token") }
        guard let number = parseInt(amount) else {
            throw ValueError("b= bandwidth \(quoted(amount)) is not a number")
        }
        return Bandwidth(type: String(type), value: number)
    }
}

/// `t=<start-time> <stop-time>` (NTP seconds; `t=0 0` for an unbounded session, as WebRTC always
/// sends) plus the `r=` lines that follow it, kept as their raw text.
public struct Timing: Sendable, Equatable {
    public var start: UInt64
    public var stop: UInt64
    public var repeats: [String]

    public init(start: UInt64 = 0, stop: UInt64 = 0, repeats: [String] = []) {
        self.start = start
        self.stop = stop
        self.repeats = repeats
    }

    var line: String { "\(start) \(stop)" }

    static func parse(_ value: Substring) throws(ValueError) -> Timing {
        let parts = fields(value)
        guard parts.count == 2 else {
            throw ValueError("t= needs 2 fields \"<start-time> <stop-time>\", got \(parts.count)")
        }
        guard let start = parseUInt64(parts[0]) else {
            throw ValueError("t= start time \(quoted(parts[0])) is not a number")
        }
        guard let stop = parseUInt64(parts[1]) else {
            throw ValueError("t= stop time \(quoted(parts[1])) is not a number")
        }
        return Timing(start: start, stop: stop)
    }
}

/// One `a=` line: `a=<name>:<value>`, or a flag `a=<name>` (value nil). `a=<name>:` has value "".
/// Values are kept verbatim so descriptions with attributes we do not know round-trip exactly.
public struct Attribute: Sendable, Equatable, CustomStringConvertible {
    public var name: String
    public var value: String?

    public init(name: String, value: String? = nil) {
        self.name = name
        self.value = value
    }

    /// `Attribute("mid", "0")`, `Attribute("rtcp-mux")`.
    public init(_ name: String, _ value: String? = nil) {
        self.init(name: name, value: value)
    }

    /// The text after `a=`.
    public var description: String {
        if let value { return "\(name):\(value)" }
        return name
    }
}
