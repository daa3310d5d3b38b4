// Percent-decoding of request targets (RFC 3986 §2.1) and query splitting.

enum PercentDecoding {
    /// Decodes `%XX` escapes (and `+` as a space when `plusIsSpace`). Returns nil on a bad escape
    /// or when the decoded bytes are not UTF-8, so the caller can say what was wrong.
    static func decode<S: StringProtocol>(_ text: S, plusIsSpace: Bool) -> String? {
        let input = Array(text.utf8)
        var out: [UInt8] = []
        out.reserveCapacity(input.count)
        var index = 0
        while index < input.count {
            let byte = input[index]
            if byte == 0x25 {  // %
                guard index + 2 < input.count,
                      let high = hexValue(input[index + 1]), let low = hexValue(input[index + 2]) else { return nil }
                out.append(high << 4 | low)
                index += 3
            } else {
                out.append(plusIsSpace && byte == 0x2B ? 0x20 : byte)
                index += 1
            }
        }
        return String(validating: out, as: UTF8.self)
    }

    static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case 0x30...0x39: return byte - 0x30
        case 0x41...0x46: return byte - 0x41 + 10
        case 0x61...0x66: return byte - 0x61 + 10
        default: return nil
        }
    }

    /// Splits `a=1&b=2&c` into ordered decoded pairs; an empty segment is skipped, a name without
    /// `=` gets an empty value. Returns the offending segment on a bad escape.
    static func parseQuery(_ query: Substring) -> Result<[(String, String)], QueryError> {
        var pairs: [(String, String)] = []
        for segment in query.split(separator: "&", omittingEmptySubsequences: true) {
            let name: Substring, value: Substring
            if let equals = segment.firstIndex(of: "=") {
                name = segment[..<equals]
                value = segment[segment.index(after: equals)...]
            } else {
                name = segment
                value = ""
            }
            guard let decodedName = decode(name, plusIsSpace: true),
                  let decodedValue = decode(value, plusIsSpace: true) else {
                return .failure(QueryError(segment: String(segment)))
            }
            pairs.append((decodedName, decodedValue))
        }
        return .success(pairs)
    }

    struct QueryError: Error { var segment: String }
}
