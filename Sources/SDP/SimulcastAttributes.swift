// Typed values of the attributes that describe simulcast: rid (RFC 8851) and simulcast (RFC 8853).

/// `a=rid:<id> send|recv[ pt=<fmt>,…;<name>=<value>;…]` (RFC 8851 §10): one RTP stream of a
/// media section, named by the `id` its packets carry in `sdes:rtp-stream-id` (RFC 8852), with
/// the limits it is to keep (`max-width`, `max-height`, `max-fps`, `max-br`, …).
public struct RID: Sendable, Equatable {
    public enum Direction: String, Sendable {
        case send, recv
    }

    /// A `<name>[=<value>]` restriction, kept as written (unknown ones too, RFC 8851 §5).
    public struct Restriction: Sendable, Equatable {
        public var name: String
        public var value: String?

        public init(name: String, value: String? = nil) {
            self.name = name
            self.value = value
        }
    }

    public var id: String
    public var direction: Direction
    /// `pt=`: the payload types this stream may use (empty: any of the section's).
    public var payloadTypes: [UInt8]
    public var restrictions: [Restriction]

    public init(id: String, direction: Direction, payloadTypes: [UInt8] = [], restrictions: [Restriction] = []) {
        self.id = id
        self.direction = direction
        self.payloadTypes = payloadTypes
        self.restrictions = restrictions
    }

    public init?(attributeValue: String) {
        guard let parsed = try? Self.parse(Substring(attributeValue)) else { return nil }
        self = parsed
    }

    /// A numeric restriction such as `max-width`, if present and a number.
    public func limit(_ name: String) -> Int? {
        restrictions.first { $0.name == name }?.value.flatMap { parseInt(trimmed($0)) }
    }

    public var attributeValue: String {
        var parameters: [String] = []
        if !payloadTypes.isEmpty { parameters.append("pt=" + payloadTypes.map(String.init).joined(separator: ",")) }
        parameters += restrictions.map { r in r.value.map { "\(r.name)=\($0)" } ?? r.name }
        return "\(id) \(direction.rawValue)" + (parameters.isEmpty ? "" : " " + parameters.joined(separator: ";"))
    }

    public static func isValidID(_ text: String) -> Bool { isValidID(Substring(text)) }

    /// rid-id = 1*(ALPHA / DIGIT / "-" / "_"); RFC 8852's header element holds at most 255 bytes.
    public static func isValidID(_ text: Substring) -> Bool {
        !text.isEmpty && text.utf8.count <= 255 && text.utf8.allSatisfy { unit in
            (unit >= 0x30 && unit <= 0x39) || (unit | 0x20 >= 0x61 && unit | 0x20 <= 0x7a) || unit == 0x2d || unit == 0x5f
        }
    }

    static func parse(_ value: Substring) throws(ValueError) -> RID {
        let parts = fields(value)
        guard parts.count == 2 || parts.count == 3 else {
            throw ValueError("rid \(quoted(value)) is not \"<id> send|recv[ <parameters>]\"")
        }
        guard isValidID(parts[0]) else { throw ValueError("rid id \(quoted(parts[0])) is not letters, digits, - and _") }
        guard let direction = Direction(rawValue: String(parts[1])) else {
            throw ValueError("rid \(parts[0]) direction \(quoted(parts[1])) is not send or recv")
        }
        var rid = RID(id: String(parts[0]), direction: direction)
        guard parts.count == 3 else { return rid }
        for (index, parameter) in fields(parts[2], separator: UInt8(ascii: ";"), keepingEmpty: true).enumerated() {
            let (name, value) = splitOnce(trimmed(parameter), at: UInt8(ascii: "="))
            guard isToken(name) else { throw ValueError("rid \(parts[0]) parameter \(quoted(parameter)) is not <name>[=<value>]") }
            if name == "pt" {
                guard index == 0, let list = value, rid.payloadTypes.isEmpty else {
                    throw ValueError("rid \(parts[0]): pt= must come first and list payload types")
                }
                for format in fields(list, separator: UInt8(ascii: ","), keepingEmpty: true) {
                    rid.payloadTypes.append(try parsePayloadType(trimmed(format), in: "rid pt"))
                }
            } else {
                rid.restrictions.append(Restriction(name: String(name), value: value.map { String(trimmed($0)) }))
            }
        }
        return rid
    }
}

/// `a=simulcast:<direction> <streams>[ <direction> <streams>]` (RFC 8853 §5.1): the rids a
/// section sends or receives as simulcast, in order of preference (Chromium: lowest first).
/// `<streams>` is `;`-separated; each is a `,`-separated list of alternative rids, one of which is
/// used; a `~` prefix marks a stream as paused.
public struct Simulcast: Sendable, Equatable {
    public struct Stream: Sendable, Equatable {
        public var rid: String
        public var paused: Bool

        public init(rid: String, paused: Bool = false) {
            self.rid = rid
            self.paused = paused
        }

        var text: String { (paused ? "~" : "") + rid }
    }

    /// Each element one simulcast stream, given as its alternatives.
    public var send: [[Stream]]
    public var recv: [[Stream]]

    public init(send: [[Stream]] = [], recv: [[Stream]] = []) {
        self.send = send
        self.recv = recv
    }

    public init?(attributeValue: String) {
        guard let parsed = try? Self.parse(Substring(attributeValue)) else { return nil }
        self = parsed
    }

    /// The first alternative of each stream, in order (what a sender with one choice per
    /// stream, as every browser, means).
    public var sendRIDs: [String] { send.compactMap { $0.first?.rid } }
    public var recvRIDs: [String] { recv.compactMap { $0.first?.rid } }

    public var attributeValue: String {
        func list(_ streams: [[Stream]]) -> String { streams.map { $0.map(\.text).joined(separator: ",") }.joined(separator: ";") }
        var parts: [String] = []
        if !send.isEmpty { parts.append("send " + list(send)) }
        if !recv.isEmpty { parts.append("recv " + list(recv)) }
        return parts.joined(separator: " ")
    }

    static func parse(_ value: Substring) throws(ValueError) -> Simulcast {
        let parts = fields(value)
        guard parts.count == 2 || parts.count == 4 else {
            throw ValueError("simulcast \(quoted(value)) is not \"send|recv <streams>[ send|recv <streams>]\"")
        }
        var simulcast = Simulcast()
        for pair in stride(from: 0, to: parts.count, by: 2) {
            let direction = parts[pair]
            var streams: [[Stream]] = []
            for stream in fields(parts[pair + 1], separator: UInt8(ascii: ";"), keepingEmpty: true) {
                var alternatives: [Stream] = []
                for alternative in fields(stream, separator: UInt8(ascii: ","), keepingEmpty: true) {
                    let paused = alternative.first == "~"
                    let rid = paused ? alternative.dropFirst() : alternative
                    guard RID.isValidID(rid) else {
                        throw ValueError("simulcast stream \(quoted(alternative)) is not a rid (letters, digits, - and _, ~ to pause)")
                    }
                    alternatives.append(Stream(rid: String(rid), paused: paused))
                }
                streams.append(alternatives)
            }
            switch direction {
            case "send" where simulcast.send.isEmpty: simulcast.send = streams
            case "recv" where simulcast.recv.isEmpty: simulcast.recv = streams
            default: throw ValueError("simulcast direction \(quoted(direction)) is not send or recv (each at most once)")
            }
        }
        return simulcast
    }
}
