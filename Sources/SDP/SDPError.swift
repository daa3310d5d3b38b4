/// A parse failure: the 1-based line number of the offending line and what was wrong with it.
public struct SDPError: Error, CustomStringConvertible, Equatable, Sendable {
    public var line: Int
    public var message: String

    public init(line: Int, message: String) {
        self.line = line
        self.message = message
    }

    /// Line 0: a fault of the whole text (a fragment without credentials), not of one line.
    public var description: String { line > 0 ? "SDP line \(line): \(message)" : message }
}

/// Why an attribute value did not match its grammar; the parser adds the line number.
/// Internal so the typed value parsers can report a reason without knowing where they are.
struct ValueError: Error {
    var message: String
    init(_ message: String) { self.message = message }
}
