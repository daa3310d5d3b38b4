// Line-by-line parser for RFC 8866 descriptions. Splits on LF (a preceding CR is dropped), so
// CRLF and bare-LF input both work; trailing blank lines are ignored.

extension SessionDescription {
    /// Parses a session description. Throws `SDPError` naming the 1-based line that was wrong.
    public init(parsing text: String) throws(SDPError) {
        self = try SDPParser.parse(text)
    }
}

enum SDPParser {
    /// The line types RFC 8866 §5 defines; any other letter is an error.
    static let sessionTypes: Set<UInt8> = Set("vosiuepcbtrzkam".utf8)
    static let mediaTypes: Set<UInt8> = Set("icbka".utf8)
    /// Types that may appear more than once in their section; the rest are single.
    static let repeatableInSession: Set<UInt8> = Set("epbtra".utf8)
    static let repeatableInMedia: Set<UInt8> = Set("ba".utf8)

    static func parse(_ text: String) throws(SDPError) -> SessionDescription {
        let lines = splitLines(text)
        guard !lines.isEmpty else { throw SDPError(line: 1, message: "empty session description") }

        var session = SessionDescription(timing: [])
        var seen: Set<UInt8> = []
        var mediaSeen: Set<UInt8> = []

        for (index, line) in lines.enumerated() {
            let number = index + 1
            let (type, value) = try split(line, number: number)

            if index == 0 {
                guard type == UInt8(ascii: "v") else { throw SDPError(line: number, message: "v= must come first") }
            }
            func fail(_ message: String) -> SDPError { SDPError(line: number, message: message) }
            func wrap<T>(_ body: () throws(ValueError) -> T) throws(SDPError) -> T {
                do { return try body() } catch { throw fail(error.message) }
            }
            let letter = String(UnicodeScalar(type))

            if type == UInt8(ascii: "m") {
                if session.media.isEmpty { try checkSessionComplete(seen, line: number) }
                session.media.append(try wrap { () throws(ValueError) in try parseMediaLine(value) })
                mediaSeen = []
                continue
            }

            if !session.media.isEmpty {
                guard mediaTypes.contains(type) else {
                    throw fail("\(letter)= is a session-level line and must come before the first m= line")
                }
                if !repeatableInMedia.contains(type), mediaSeen.contains(type) {
                    throw fail("duplicate \(letter)= line in a media section")
                }
                mediaSeen.insert(type)
                // Edit the last section in place: a copy would make each a= line copy the list.
                let last = session.media.count - 1
                switch type {
                case UInt8(ascii: "i"): session.media[last].information = String(value)
                case UInt8(ascii: "c"):
                    session.media[last].connection = try wrap { () throws(ValueError) in try Connection.parse(value) }
                case UInt8(ascii: "b"):
                    session.media[last].bandwidths.append(try wrap { () throws(ValueError) in try Bandwidth.parse(value) })
                case UInt8(ascii: "k"): session.media[last].encryptionKey = String(value)
                default:
                    session.media[last].attributes.append(try wrap { () throws(ValueError) in try parseAttribute(value) })
                }
                continue
            }

            if seen.contains(type), !repeatableInSession.contains(type) {
                if type == UInt8(ascii: "v") { throw fail("v= may appear only once, as the first line") }
                throw fail("duplicate \(letter)= line")
            }
            seen.insert(type)
            switch type {
            case UInt8(ascii: "v"):
                guard isDecimal(value), let version = parseInt(value) else {
                    throw fail("v= version \(quoted(value)) is not a number")
                }
                guard version == 0 else { throw fail("v= version \(version) is not supported (only 0)") }
                session.version = version
            case UInt8(ascii: "o"): session.origin = try wrap { () throws(ValueError) in try Origin.parse(value) }
            case UInt8(ascii: "s"): session.sessionName = String(value)
            case UInt8(ascii: "i"): session.information = String(value)
            case UInt8(ascii: "u"): session.uri = String(value)
            case UInt8(ascii: "e"): session.emails.append(String(value))
            case UInt8(ascii: "p"): session.phones.append(String(value))
            case UInt8(ascii: "c"): session.connection = try wrap { () throws(ValueError) in try Connection.parse(value) }
            case UInt8(ascii: "b"): session.bandwidths.append(try wrap { () throws(ValueError) in try Bandwidth.parse(value) })
            case UInt8(ascii: "t"): session.timing.append(try wrap { () throws(ValueError) in try Timing.parse(value) })
            case UInt8(ascii: "r"):
                guard !session.timing.isEmpty else { throw fail("r= must follow a t= line") }
                session.timing[session.timing.count - 1].repeats.append(String(value))
            case UInt8(ascii: "z"): session.timeZones = String(value)
            case UInt8(ascii: "k"): session.encryptionKey = String(value)
            default: session.attributes.append(try wrap { () throws(ValueError) in try parseAttribute(value) })
            }
        }

        if session.media.isEmpty { try checkSessionComplete(seen, line: lines.count + 1) }
        return session
    }

    /// o=, s= and t= are required before the media sections (v= is checked on line 1).
    private static func checkSessionComplete(_ seen: Set<UInt8>, line: Int) throws(SDPError) {
        for (type, name) in [(UInt8(ascii: "o"), "o="), (UInt8(ascii: "s"), "s="), (UInt8(ascii: "t"), "t=")]
        where !seen.contains(type) {
            throw SDPError(line: line, message: "missing required \(name) line")
        }
    }

    /// Lines as byte slices without their CR/LF, trailing blank lines removed.
    static func splitLines(_ text: String) -> [ArraySlice<UInt8>] {
        let bytes = Array(text.utf8)
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: false).map { line in
            line.last == 0x0D ? line.dropLast() : line
        }
        while let last = lines.last, last.allSatisfy({ $0 == 0x20 || $0 == 0x09 || $0 == 0x0D }) {
            lines.removeLast()
        }
        return lines
    }

    /// `<type>=<value>` with a one-letter type and no spaces around `=`.
    private static func split(_ line: ArraySlice<UInt8>, number: Int) throws(SDPError) -> (UInt8, Substring) {
        guard line.count >= 2, let type = line.first, line[line.startIndex + 1] == UInt8(ascii: "=") else {
            throw SDPError(line: number, message: "expected \"<type>=<value>\"")
        }
        guard sessionTypes.contains(type) else {
            let shown = UnicodeScalar(type).escaped(asASCII: true)
            throw SDPError(line: number, message: "unknown line type \"\(shown)\"")
        }
        return (type, Substring(String(decoding: line.dropFirst(2), as: UTF8.self)))
    }

    /// `m=<media> <port>[/<number of ports>] <proto> <fmt> ...`
    static func parseMediaLine(_ value: Substring) throws(ValueError) -> MediaDescription {
        let parts = fields(value)
        guard parts.count >= 3 else {
            throw ValueError("m= needs \"<media> <port> <proto> <fmt> ...\", got \(parts.count) fields")
        }
        let (portText, countText) = splitOnce(parts[1], at: UInt8(ascii: "/"))
        guard isDecimal(portText) else { throw ValueError("m= port \(quoted(portText)) is not a number") }
        guard let port = parseInt(portText, in: 0...65535) else { throw ValueError("m= port \(portText) out of range") }
        var portCount: Int?
        if let countText {
            guard let count = parseInt(countText, in: 1...65535) else {
                throw ValueError("m= port count \(quoted(countText)) is not a number from 1 to 65535")
            }
            portCount = count
        }
        return MediaDescription(
            kind: String(parts[0]), port: port, portCount: portCount, proto: String(parts[2]),
            formats: parts.dropFirst(3).map(String.init))
    }

    /// `a=<name>[:<value>]`; the value is everything after the first colon, verbatim.
    static func parseAttribute(_ text: Substring) throws(ValueError) -> Attribute {
        let (name, value) = splitOnce(text, at: UInt8(ascii: ":"))
        guard !name.isEmpty else { throw ValueError("attribute name is empty") }
        guard isToken(name) else { throw ValueError("attribute name \(quoted(name)) is not a token") }
        let attribute = Attribute(name: String(name), value: value.map(String.init))
        try attribute.validate()
        return attribute
    }
}
