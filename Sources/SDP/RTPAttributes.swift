// Typed values of the RTP payload attributes: rtpmap, fmtp parameters, rtcp-fb, extmap.

/// `a=rtpmap:<payload type> <encoding name>/<clock rate>[/<channels>]` (RFC 8866 §6.6).
public struct RTPMap: Sendable, Equatable {
    public var payloadType: UInt8
    public var encodingName: String
    public var clockRate: Int
    public var channels: Int?

    public init(payloadType: UInt8, encodingName: String, clockRate: Int, channels: Int? = nil) {
        self.payloadType = payloadType
        self.encodingName = encodingName
        self.clockRate = clockRate
        self.channels = channels
    }

    public init?(attributeValue: String) {
        guard let parsed = try? Self.parse(Substring(attributeValue)) else { return nil }
        self = parsed
    }

    public var attributeValue: String {
        var text = "\(payloadType) \(encodingName)/\(clockRate)"
        if let channels { text += "/\(channels)" }
        return text
    }

    static func parse(_ value: Substring) throws(ValueError) -> RTPMap {
        let parts = fields(value)
        guard parts.count == 2 else {
            throw ValueError("rtpmap \(quoted(value)) is not \"<payload type> <encoding name>/<clock rate>[/<channels>]\"")
        }
        let payloadType = try parsePayloadType(parts[0], in: "rtpmap")
        let encoding = fields(parts[1], separator: UInt8(ascii: "/"), keepingEmpty: true)
        guard encoding.count == 2 || encoding.count == 3, !encoding[0].isEmpty else {
            throw ValueError("rtpmap encoding \(quoted(parts[1])) is not \"<name>/<clock rate>[/<channels>]\"")
        }
        guard let clockRate = parseInt(encoding[1]) else {
            throw ValueError("rtpmap clock rate \(quoted(encoding[1])) is not a number")
        }
        var channels: Int?
        if encoding.count == 3 {
            guard let count = parseInt(encoding[2]) else {
                throw ValueError("rtpmap channel count \(quoted(encoding[2])) is not a number")
            }
            channels = count
        }
        return RTPMap(payloadType: payloadType, encodingName: String(encoding[0]), clockRate: clockRate, channels: channels)
    }
}

/// One `name=value` of an fmtp parameter string such as
/// `profile-level-id=42e01f;packetization-mode=1`. A bare item (e.g. the `0-15` of telephone-event)
/// has no `=` and a nil value.
public struct FormatParameter: Sendable, Equatable {
    public var name: String
    public var value: String?

    public init(name: String, value: String? = nil) {
        self.name = name
        self.value = value
    }

    /// Splits `key=value;key=value` into ordered pairs; spaces around items are ignored, empty
    /// items skipped.
    public static func parse(_ parameters: String) -> [FormatParameter] {
        fields(parameters, separator: UInt8(ascii: ";")).compactMap { item in
            let item = trimmed(item)
            guard !item.isEmpty else { return nil }
            let (name, value) = splitOnce(item, at: UInt8(ascii: "="))
            return FormatParameter(name: String(trimmed(name)), value: value.map { String(trimmed($0)) })
        }
    }

    /// The inverse of `parse`: `key=value` items joined with `;`.
    public static func serialize(_ parameters: [FormatParameter]) -> String {
        parameters.map { item in
            if let value = item.value { return "\(item.name)=\(value)" }
            return item.name
        }.joined(separator: ";")
    }
}

extension Array where Element == FormatParameter {
    /// The value of the first parameter called `name` (compared ASCII-case-insensitively, as the
    /// media type registrations define). A bare item yields "".
    public func value(for name: String) -> String? {
        let wanted = name.lowercased()
        guard let item = first(where: { $0.name.lowercased() == wanted }) else { return nil }
        return item.value ?? ""
    }
}

/// `a=rtcp-fb:<payload type or *> <type>[ <parameter>]` (RFC 4585), e.g. `96 nack pli`,
/// `* transport-cc`.
public struct RTCPFeedback: Sendable, Equatable {
    /// A payload type number as text, or "*" for every format of the m= line.
    public var payloadType: String
    public var type: String
    public var parameter: String?

    public init(payloadType: String, type: String, parameter: String? = nil) {
        self.payloadType = payloadType
        self.type = type
        self.parameter = parameter
    }

    public init?(attributeValue: String) {
        guard let parsed = try? Self.parse(Substring(attributeValue)) else { return nil }
        self = parsed
    }

    public var attributeValue: String {
        if let parameter { return "\(payloadType) \(type) \(parameter)" }
        return "\(payloadType) \(type)"
    }

    /// True when this feedback applies to `payloadType` (its own number or the wildcard).
    public func applies(to payloadType: UInt8) -> Bool {
        self.payloadType == "*" || self.payloadType == String(payloadType)
    }

    static func parse(_ value: Substring) throws(ValueError) -> RTCPFeedback {
        let (format, rest) = splitOnce(trimmed(value), at: UInt8(ascii: " "))
        if format != "*" { _ = try parsePayloadType(format, in: "rtcp-fb") }
        let body = trimmed(rest ?? "")
        guard !body.isEmpty else {
            throw ValueError("rtcp-fb \(quoted(value)) is not \"<payload type> <type>[ <parameter>]\"")
        }
        let (type, parameter) = splitOnce(body, at: UInt8(ascii: " "))
        let parameterText = parameter.map(trimmed)
        return RTCPFeedback(
            payloadType: String(format), type: String(type),
            parameter: (parameterText?.isEmpty ?? true) ? nil : parameterText.map(String.init))
    }
}

/// `a=extmap:<id>[/<direction>] <uri>[ <extension attributes>]` (RFC 8285).
public struct ExtMap: Sendable, Equatable {
    /// 1–14 for one-byte headers, up to 255 with two-byte headers.
    public var id: Int
    public var direction: String?
    public var uri: String
    public var attributes: String?

    public init(id: Int, direction: String? = nil, uri: String, attributes: String? = nil) {
        self.id = id
        self.direction = direction
        self.uri = uri
        self.attributes = attributes
    }

    public init?(attributeValue: String) {
        guard let parsed = try? Self.parse(Substring(attributeValue)) else { return nil }
        self = parsed
    }

    public var attributeValue: String {
        var text = String(id)
        if let direction { text += "/\(direction)" }
        text += " \(uri)"
        if let attributes { text += " \(attributes)" }
        return text
    }

    static func parse(_ value: Substring) throws(ValueError) -> ExtMap {
        let (head, rest) = splitOnce(trimmed(value), at: UInt8(ascii: " "))
        let body = trimmed(rest ?? "")
        guard !body.isEmpty else {
            throw ValueError("extmap \(quoted(value)) is not \"<id>[/<direction>] <uri>[ <attributes>]\"")
        }
        let (idText, direction) = splitOnce(head, at: UInt8(ascii: "/"))
        guard isDecimal(idText) else { throw ValueError("extmap id \(quoted(idText)) is not a number") }
        guard let id = parseInt(idText, in: 1...255) else {
            throw ValueError("extmap id \(idText) out of range (1-255)")
        }
        if let direction, Direction(rawValue: String(direction)) == nil {
            throw ValueError("extmap direction \(quoted(direction)) is not sendrecv, sendonly, recvonly or inactive")
        }
        let (uri, attributes) = splitOnce(body, at: UInt8(ascii: " "))
        let attributesText = attributes.map(trimmed)
        return ExtMap(
            id: id, direction: direction.map(String.init), uri: String(uri),
            attributes: (attributesText?.isEmpty ?? true) ? nil : attributesText.map(String.init))
    }
}
