/// A STUN or TURN server URL: `stun:host[:port]`, `stuns:…` (RFC 7064) and
/// `turn:host[:port][?transport=udp|tcp]`, `turns:…` (RFC 7065). The host may be a name; the
/// driver resolves it (this type does no I/O).
public struct ICEServerURL: Sendable, Hashable, CustomStringConvertible {
    public enum Scheme: String, Sendable, Hashable {
        case stun, stuns, turn, turns
        public var isTURN: Bool { self == .turn || self == .turns }
        public var isSecure: Bool { self == .stuns || self == .turns }
    }
    public enum Transport: String, Sendable, Hashable { case udp, tcp }

    public var scheme: Scheme
    /// A name or an IP literal (IPv6 without the brackets).
    public var host: String
    public var port: UInt16
    /// turn: defaults to UDP, turns: to TCP (TLS); STUN URLs are always UDP here.
    public var transport: Transport

    public init(parsing text: String) throws(ICEError) {
        let trimmed = text.trimmingSpaces
        guard let colon = trimmed.firstIndex(of: ":") else {
            throw ICEError("ICE server URL \"\(text)\" has no scheme (expected stun:, stuns:, turn: or turns:)")
        }
        guard let scheme = Scheme(rawValue: trimmed[..<colon].lowercased()) else {
            throw ICEError("ICE server URL \"\(text)\" has scheme \"\(trimmed[..<colon])\"; expected stun, stuns, turn or turns")
        }
        var rest = trimmed[trimmed.index(after: colon)...]
        if rest.hasPrefix("//") {
            throw ICEError("ICE server URL \"\(text)\": write \(scheme.rawValue):host[:port], without \"//\" (RFC 7064/7065)")
        }
        var query: Substring?
        if let q = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: q)...]
            rest = rest[..<q]
        }
        var host: Substring
        var portText: Substring?
        if rest.hasPrefix("[") {
            guard let close = rest.firstIndex(of: "]") else {
                throw ICEError("ICE server URL \"\(text)\": IPv6 address without its closing \"]\"")
            }
            host = rest[rest.index(after: rest.startIndex)..<close]
            let after = rest[rest.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw ICEError("ICE server URL \"\(text)\": unexpected \"\(after)\" after the IPv6 address") }
                portText = after.dropFirst()
            }
        } else if let c = rest.firstIndex(of: ":") {
            host = rest[..<c]
            portText = rest[rest.index(after: c)...]
        } else {
            host = rest
        }
        guard !host.isEmpty else { throw ICEError("ICE server URL \"\(text)\" has no host") }
        guard host.allSatisfy({ $0.isASCII && ($0.isLetter || $0.isNumber || "-._:%".contains($0)) }) else {
            throw ICEError("ICE server URL \"\(text)\": host \"\(host)\" has characters a host name cannot have")
        }
        var port: UInt16 = scheme.isSecure ? 5349 : 3478
        if let portText {
            guard let p = UInt16(portText), p != 0 else {
                throw ICEError("ICE server URL \"\(text)\": port \"\(portText)\" is not a number in 1...65535")
            }
            port = p
        }
        var transport: Transport = scheme == .turns ? .tcp : .udp
        if let query {
            guard scheme.isTURN else {
                throw ICEError("ICE server URL \"\(text)\": \(scheme.rawValue): URLs take no query (RFC 7064)")
            }
            let parts = query.split(separator: "=", maxSplits: 1)
            guard parts.count == 2, parts[0] == "transport", let t = Transport(rawValue: parts[1].lowercased()) else {
                throw ICEError("ICE server URL \"\(text)\": the query must be transport=udp or transport=tcp, not \"\(query)\"")
            }
            transport = t
        }
        self.scheme = scheme
        self.host = String(host)
        self.port = port
        self.transport = transport
    }

    public var description: String {
        let h = host.contains(":") ? "[\(host)]" : host
        let q = scheme.isTURN ? "?transport=\(transport.rawValue)" : ""
        return "\(scheme.rawValue):\(h):\(port)\(q)"
    }
}

extension StringProtocol {
    var trimmingSpaces: Substring {
        var s = Substring(self)
        while let f = s.first, f == " " || f.isNewline { s = s.dropFirst() }
        while let l = s.last, l == " " || l.isNewline { s = s.dropLast() }
        return s
    }
}
