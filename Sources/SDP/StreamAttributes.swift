// Typed values of the attributes that tie RTP streams to tracks: ssrc, ssrc-group, msid, group.

/// `a=ssrc:<ssrc> <attribute>[:<value>]` (RFC 5576), e.g. `1234 cname:abc`, `1234 msid:s t`.
public struct SSRCAttribute: Sendable, Equatable {
    public var ssrc: UInt32
    public var name: String
    public var value: String?

    public init(ssrc: UInt32, name: String, value: String? = nil) {
        self.ssrc = ssrc
        self.name = name
        self.value = value
    }

    public init?(attributeValue: String) {
        guard let parsed = try? Self.parse(Substring(attributeValue)) else { return nil }
        self = parsed
    }

    public var attributeValue: String {
        if let value { return "\(ssrc) \(name):\(value)" }
        return "\(ssrc) \(name)"
    }

    static func parse(_ value: Substring) throws(ValueError) -> SSRCAttribute {
        let (ssrcText, rest) = splitOnce(trimmed(value), at: UInt8(ascii: " "))
        let ssrc = try parseSSRC(ssrcText, in: "ssrc")
        let body = trimmed(rest ?? "")
        guard !body.isEmpty else { throw ValueError("ssrc \(quoted(value)) is not \"<ssrc> <attribute>[:<value>]\"") }
        let (name, attributeValue) = splitOnce(body, at: UInt8(ascii: ":"))
        guard !name.isEmpty else { throw ValueError("ssrc \(ssrcText) has an empty attribute name") }
        return SSRCAttribute(ssrc: ssrc, name: String(name), value: attributeValue.map(String.init))
    }
}

/// `a=ssrc-group:<semantics> <ssrc>...` (RFC 5576), e.g. `FID 1111 2222` pairing a stream with its RTX.
public struct SSRCGroup: Sendable, Equatable {
    public var semantics: String
    public var ssrcs: [UInt32]

    public init(semantics: String, ssrcs: [UInt32]) {
        self.semantics = semantics
        self.ssrcs = ssrcs
    }

    public init?(attributeValue: String) {
        guard let parsed = try? Self.parse(Substring(attributeValue)) else { return nil }
        self = parsed
    }

    public var attributeValue: String {
        ([semantics] + ssrcs.map(String.init)).joined(separator: " ")
    }

    static func parse(_ value: Substring) throws(ValueError) -> SSRCGroup {
        let parts = fields(value)
        guard let semantics = parts.first else { throw ValueError("ssrc-group needs \"<semantics> <ssrc>...\"") }
        var ssrcs: [UInt32] = []
        for part in parts.dropFirst() { ssrcs.append(try parseSSRC(part, in: "ssrc-group")) }
        return SSRCGroup(semantics: String(semantics), ssrcs: ssrcs)
    }
}

func parseSSRC(_ text: Substring, in attribute: String) throws(ValueError) -> UInt32 {
    guard let value = parseUInt64(text) else { throw ValueError("\(attribute) SSRC \(quoted(text)) is not a number") }
    guard value <= UInt64(UInt32.max) else { throw ValueError("\(attribute) SSRC \(text) out of range") }
    return UInt32(value)
}

/// `a=msid:<stream id>[ <track id>]` (RFC 8830). A stream id of "-" means "no stream".
public struct MSID: Sendable, Equatable {
    public var streamID: String
    public var trackID: String?

    public init(streamID: String, trackID: String? = nil) {
        self.streamID = streamID
        self.trackID = trackID
    }

    public init?(attributeValue: String) {
        guard let parsed = try? Self.parse(Substring(attributeValue)) else { return nil }
        self = parsed
    }

    public var attributeValue: String {
        if let trackID { return "\(streamID) \(trackID)" }
        return streamID
    }

    static func parse(_ value: Substring) throws(ValueError) -> MSID {
        let parts = fields(value)
        guard parts.count == 1 || parts.count == 2 else {
            throw ValueError("msid \(quoted(value)) is not \"<stream id>[ <track id>]\"")
        }
        return MSID(streamID: String(parts[0]), trackID: parts.count == 2 ? String(parts[1]) : nil)
    }
}

/// `a=group:<semantics> <mid>...` (RFC 9143 for BUNDLE; also LS, FID), session level.
public struct Group: Sendable, Equatable {
    public var semantics: String
    public var mids: [String]

    public init(semantics: String, mids: [String]) {
        self.semantics = semantics
        self.mids = mids
    }

    public init?(attributeValue: String) {
        guard let parsed = try? Self.parse(Substring(attributeValue)) else { return nil }
        self = parsed
    }

    public var attributeValue: String { ([semantics] + mids).joined(separator: " ") }

    static func parse(_ value: Substring) throws(ValueError) -> Group {
        let parts = fields(value)
        guard let semantics = parts.first else { throw ValueError("group needs \"<semantics> <mid>...\"") }
        return Group(semantics: String(semantics), mids: parts.dropFirst().map(String.init))
    }
}
