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
