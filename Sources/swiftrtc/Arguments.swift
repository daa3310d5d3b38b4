import Foundation

/// A small command-line parser shaped like swift-argument-parser's basics: `--name value`,
/// `--name=value`, flags and positionals; anything unknown is an error that names it.
struct Arguments {
    let command: String
    let usage: String
    private var rest: [String]

    init(command: String, _ args: [String], usage: String) {
        self.command = command
        self.usage = usage
        self.rest = args
    }

    var wantsHelp: Bool { rest.contains("--help") || rest.contains("-h") }

    mutating func option(_ name: String) throws(UsageError) -> String? {
        var i = 0
        while i < rest.count {
            let arg = rest[i]
            if arg == "--\(name)" {
                guard i + 1 < rest.count else { throw UsageError("\(command): --\(name) needs a value") }
                let value = rest[i + 1]
                rest.removeSubrange(i...(i + 1))
                return value
            }
            if arg.hasPrefix("--\(name)=") {
                rest.remove(at: i)
                return String(arg.dropFirst(name.count + 3))
            }
            i += 1
        }
        return nil
    }

    mutating func option<T>(_ name: String, default value: T, _ convert: (String) -> T?) throws(UsageError) -> T {
        guard let text = try option(name) else { return value }
        guard let converted = convert(text) else { throw UsageError("\(command): --\(name) \"\(text)\" is not valid") }
        return converted
    }

    /// A number within `range` (NaN and infinities are never within it); out of range or not a
    /// number is an error that says which range, so a typo cannot reach the library as 1e-10 fps.
    mutating func number<T: LosslessStringConvertible & Comparable>(_ name: String, default value: T,
                                                                     in range: ClosedRange<T>) throws(UsageError) -> T {
        try number(name, in: range) ?? value
    }

    /// The same, with no default: nil when the flag is absent.
    mutating func number<T: LosslessStringConvertible & Comparable>(_ name: String, in range: ClosedRange<T>) throws(UsageError) -> T? {
        guard let text = try option(name) else { return nil }
        guard let n = T(text.trimmingCharacters(in: .whitespaces)), range.contains(n) else {
            throw UsageError("\(command): --\(name) \"\(text)\" is not a number in \(range.lowerBound)…\(range.upperBound)")
        }
        return n
    }

    /// Every value of a repeatable option, in order.
    mutating func options(_ name: String) throws(UsageError) -> [String] {
        var values: [String] = []
        while let v = try option(name) { values.append(v) }
        return values
    }

    /// Every `--allowed-host NAME`: DNS names without a port (IP addresses are always served).
    mutating func hostNames(_ name: String) throws(UsageError) -> [String] {
        let names = try options(name)
        for host in names where host.isEmpty || host.utf8.count > 253
            || !host.utf8.allSatisfy({ $0 == 0x2D || $0 == 0x2E || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) }) {
            throw UsageError("\(command): --\(name) \"\(host)\" is not a host name (letters, digits, '-' and '.'; no port)")
        }
        return names
    }

    mutating func flag(_ name: String) -> Bool {
        guard let i = rest.firstIndex(of: "--\(name)") else { return false }
        rest.remove(at: i)
        return true
    }

    mutating func positional(_ what: String) throws(UsageError) -> String {
        guard let i = rest.firstIndex(where: { !$0.hasPrefix("--") }) else {
            // An unknown option left over is the likelier mistake than a forgotten argument.
            if let unknown = rest.first { throw UsageError("\(command): unknown option \(unknown)") }
            throw UsageError("\(command): missing \(what)")
        }
        return rest.remove(at: i)
    }

    /// Everything must have been consumed.
    func finish() throws(UsageError) {
        if let unknown = rest.first {
            throw UsageError(unknown.hasPrefix("-") ? "\(command): unknown option \(unknown)" : "\(command): unexpected argument \"\(unknown)\"")
        }
    }
}

/// The longest --duration and the like: a year, so seconds × 1e9 never overflows a Duration.
let maxSeconds = 365.0 * 24 * 3600

struct UsageError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// "HOST:PORT" (IPv6 as "[::1]:PORT").
func parseHostPort(_ text: String) -> (host: String, port: UInt16)? {
    if text.hasPrefix("["), let close = text.firstIndex(of: "]") {
        let host = String(text[text.index(after: text.startIndex)..<close])
        let after = text[text.index(after: close)...]
        guard after.hasPrefix(":"), let port = UInt16(after.dropFirst()) else { return nil }
        return (host, port)
    }
    guard let colon = text.lastIndex(of: ":"), let port = UInt16(text[text.index(after: colon)...]) else { return nil }
    let host = String(text[..<colon])
    return host.isEmpty ? nil : (host, port)
}

func printError(_ message: String) {
    FileHandle.standardError.write(Data((message + "\n").utf8))
}

/// Writes one line to stdout unbuffered, so a parent reading a pipe sees it at once.
func say(_ message: String) {
    FileHandle.standardOutput.write(Data((message + "\n").utf8))
}
