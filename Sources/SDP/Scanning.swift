// Small text helpers shared by the line and attribute parsers. They work on Unicode scalars, not
// Characters, because SDP's grammar is byte-oriented: a space followed by a combining mark is still
// a separator on the wire.

/// Splits on `separator`, dropping empty pieces (runs of separators count as one). Scans UTF-8
/// bytes: separators are ASCII, so every cut lands on a scalar boundary.
func fields(_ text: Substring, separator: UInt8 = 0x20, keepingEmpty: Bool = false) -> [Substring] {
    var result: [Substring] = []
    let utf8 = text.utf8
    var start = utf8.startIndex
    var index = start
    while index != utf8.endIndex {
        if utf8[index] == separator {
            if keepingEmpty || start != index { result.append(text[start..<index]) }
            start = utf8.index(after: index)
        }
        index = utf8.index(after: index)
    }
    if keepingEmpty || start != index { result.append(text[start..<index]) }
    return result
}

func fields(_ text: String, separator: UInt8 = 0x20) -> [Substring] {
    fields(Substring(text), separator: separator)
}

/// Splits at the first `separator`: the part before, and the part after (nil when absent).
func splitOnce(_ text: Substring, at separator: UInt8) -> (head: Substring, tail: Substring?) {
    guard let index = text.utf8.firstIndex(of: separator) else { return (text, nil) }
    return (text[..<index], text[text.utf8.index(after: index)...])
}

/// Parses a plain decimal number: digits only (no sign, no spaces), without overflowing.
func parseUInt64(_ text: Substring) -> UInt64? {
    var result: UInt64 = 0
    var sawDigit = false
    for unit in text.utf8 {
        guard unit >= 0x30, unit <= 0x39 else { return nil }
        let (times10, overflow1) = result.multipliedReportingOverflow(by: 10)
        let (sum, overflow2) = times10.addingReportingOverflow(UInt64(unit - 0x30))
        if overflow1 || overflow2 { return nil }
        result = sum
        sawDigit = true
    }
    return sawDigit ? result : nil
}

/// A decimal number that also fits in `Int` and lies in `range`.
func parseInt(_ text: Substring, in range: ClosedRange<Int> = 0...Int.max) -> Int? {
    guard let value = parseUInt64(text), value <= UInt64(Int.max) else { return nil }
    let int = Int(value)
    return range.contains(int) ? int : nil
}

/// True when every byte is a decimal digit (and there is at least one).
func isDecimal(_ text: Substring) -> Bool {
    !text.utf8.isEmpty && text.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 }
}

/// RFC 8866 token-char: visible ASCII except the separators `"(),/:;<=>?@[\]{}` and space.
func isTokenChar(_ unit: UInt8) -> Bool {
    switch unit {
    case 0x21, 0x23...0x27, 0x2A, 0x2B, 0x2D, 0x2E, 0x30...0x39, 0x41...0x5A, 0x5E...0x7E: true
    default: false
    }
}

func isToken(_ text: Substring) -> Bool {
    !text.utf8.isEmpty && text.utf8.allSatisfy(isTokenChar)
}

/// Quotes text for an error message, cut short so a huge fuzzed value cannot flood a log.
func quoted(_ text: Substring) -> String {
    let limit = 60
    let scalars = Substring(text).unicodeScalars
    if scalars.count <= limit { return "\"\(text)\"" }
    let cut = Substring(scalars.prefix(limit))
    return "\"\(cut)…\""
}

/// Drops leading and trailing spaces and tabs.
func trimmed(_ text: Substring) -> Substring {
    let utf8 = text.utf8
    let isBlank: (UInt8) -> Bool = { $0 == 0x20 || $0 == 0x09 }
    guard let first = utf8.firstIndex(where: { !isBlank($0) }), let last = utf8.lastIndex(where: { !isBlank($0) })
    else { return text[text.endIndex...] }
    return text[first...last]
}

func trimmed(_ text: String) -> Substring { trimmed(Substring(text)) }

/// An RTP payload type: 0–127 (the marker bit takes the eighth bit of the header byte).
func parsePayloadType(_ text: Substring, in attribute: String) throws(ValueError) -> UInt8 {
    guard isDecimal(text) else {
        throw ValueError("\(attribute) payload type \(quoted(text)) is not a number")
    }
    guard let value = parseInt(text, in: 0...127) else {
        throw ValueError("\(attribute) payload type \(text) out of range")
    }
    return UInt8(value)
}
