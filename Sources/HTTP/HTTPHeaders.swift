// Header fields in the order they were received or added; names compare case-insensitively
// (RFC 9110 §5.1) but keep the spelling they were given.

public struct HTTPHeaders: Sendable, Sequence, Equatable, CustomStringConvertible,
    ExpressibleByArrayLiteral, ExpressibleByDictionaryLiteral {
    public typealias Element = (name: String, value: String)

    private var fields: [(name: String, value: String)] = []

    public init() {}

    public init(_ fields: [(String, String)]) {
        for (name, value) in fields { add(name, value) }
    }

    public init(arrayLiteral elements: (String, String)...) {
        self.init(elements)
    }

    public init(dictionaryLiteral elements: (String, String)...) {
        self.init(elements)
    }

    /// The first value of `name`, or nil. Use `values(_:)` for fields that may repeat.
    public subscript(name: String) -> String? {
        fields.first { Self.same($0.name, name) }?.value
    }

    /// Every value of `name`, in order.
    public func values(_ name: String) -> [String] {
        fields.filter { Self.same($0.name, name) }.map(\.value)
    }

    public func contains(_ name: String) -> Bool {
        fields.contains { Self.same($0.name, name) }
    }

    /// Appends a field, keeping any existing ones with the same name.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every field named `name` with one field (at the position of the first one).
    public mutating func set(_ name: String, _ value: String) {
        if let first = fields.firstIndex(where: { Self.same($0.name, name) }) {
            fields[first] = (name, value)
            var index = fields.count - 1
            while index > first {
                if Self.same(fields[index].name, name) { fields.remove(at: index) }
                index -= 1
            }
        } else {
            fields.append((name, value))
        }
    }

    public mutating func remove(_ name: String) {
        fields.removeAll { Self.same($0.name, name) }
    }

    public var count: Int { fields.count }
    public var isEmpty: Bool { fields.isEmpty }

    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.count == rhs.fields.count
            && zip(lhs.fields, rhs.fields).allSatisfy { same($0.name, $1.name) && $0.value == $1.value }
    }

    public var description: String {
        fields.map { "\($0.name): \($0.value)" }.joined(separator: "\n")
    }

    /// Whether a comma-separated header (such as Connection) lists `token`, case-insensitively.
    func hasToken(_ name: String, _ token: String) -> Bool {
        values(name).contains { value in
            value.split(separator: ",").contains { Self.same($0.trimmingSpaces, token) }
        }
    }

    /// ASCII case-insensitive comparison; header names are ASCII tokens.
    static func same<A: StringProtocol, B: StringProtocol>(_ a: A, _ b: B) -> Bool {
        let x = a.utf8, y = b.utf8
        guard x.count == y.count else { return false }
        for (p, q) in zip(x, y) where lowerASCII(p) != lowerASCII(q) { return false }
        return true
    }

    static func lowerASCII(_ byte: UInt8) -> UInt8 {
        byte >= 0x41 && byte <= 0x5A ? byte | 0x20 : byte
    }

    /// Writes the fields as `name: value\r\n` lines. CR, LF and NUL in names or values would let
    /// a caller's data split the message, so they become spaces.
    func serialize(into out: inout [UInt8]) {
        for (name, value) in fields {
            Self.appendSafe(name, to: &out)
            out.append(0x3A); out.append(0x20)
            Self.appendSafe(value, to: &out)
            out.append(0x0D); out.append(0x0A)
        }
    }

    static func appendSafe(_ text: String, to out: inout [UInt8]) {
        for byte in text.utf8 {
            out.append(byte == 0x0D || byte == 0x0A || byte == 0 ? 0x20 : byte)
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (HTTP's optional whitespace).
    var trimmingSpaces: String {
        var scalars = Substring(self)
        while let first = scalars.first, first == " " || first == "\t" { scalars.removeFirst() }
        while let last = scalars.last, last == " " || last == "\t" { scalars.removeLast() }
        return String(scalars)
    }
}
