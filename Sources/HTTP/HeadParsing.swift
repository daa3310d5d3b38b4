// Pieces shared by the request and response head parsers: splitting a head into lines and parsing
// one `name: value` field line (RFC 9112 §2.2, §5).

enum HeadParsing {
    /// Splits a head into lines. Lines end in CRLF or a bare LF (RFC 9112 §2.2 lets a recipient
    /// accept LF); a CR anywhere else is an error. Parsing stops at the first empty line after the
    /// start line; leading empty lines are skipped. Line numbers in errors count the start line as 1.
    static func lines(_ bytes: [UInt8], kind: HTTPError.Kind) throws(HTTPError) -> [ArraySlice<UInt8>] {
        var lines: [ArraySlice<UInt8>] = []
        var start = 0
        var index = 0
        while index <= bytes.count {
            if index == bytes.count || bytes[index] == 0x0A {
                var end = index
                if index < bytes.count, end > start, bytes[end - 1] == 0x0D { end -= 1 }
                let line = bytes[start..<end]
                if let cr = line.firstIndex(of: 0x0D) {
                    throw HTTPError(kind, "bare CR at line \(lines.count + 1), offset \(cr - start)")
                }
                if line.isEmpty {
                    if !lines.isEmpty { return lines }  // the empty line that ends the head
                } else {
                    lines.append(line)
                }
                start = index + 1
            }
            index += 1
        }
        return lines
    }

    /// Parses one header field line. `lineNumber` is used in error messages.
    static func field(_ line: ArraySlice<UInt8>, lineNumber: Int, kind: HTTPError.Kind) throws(HTTPError) -> (String, String) {
        guard let first = line.first else { throw HTTPError(kind, "empty header line at line \(lineNumber)") }
        if first == 0x20 || first == 0x09 {
            throw HTTPError(kind, "obsolete line folding at line \(lineNumber)")
        }
        guard let colon = line.firstIndex(of: 0x3A) else {
            throw HTTPError(kind, "header line without colon at line \(lineNumber)")
        }
        let name = line[line.startIndex..<colon]
        if name.isEmpty { throw HTTPError(kind, "empty header name at line \(lineNumber)") }
        if let last = name.last, last == 0x20 || last == 0x09 {
            throw HTTPError(kind, "whitespace before colon at line \(lineNumber)")
        }
        if let bad = name.firstIndex(where: { !isTokenByte($0) }) {
            throw HTTPError(kind, "invalid character in header name at line \(lineNumber), offset \(bad - line.startIndex)")
        }
        var valueStart = colon + 1
        var valueEnd = line.endIndex
        while valueStart < valueEnd, line[valueStart] == 0x20 || line[valueStart] == 0x09 { valueStart += 1 }
        while valueEnd > valueStart, line[valueEnd - 1] == 0x20 || line[valueEnd - 1] == 0x09 { valueEnd -= 1 }
        let value = line[valueStart..<valueEnd]
        if let bad = value.firstIndex(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) {
            throw HTTPError(kind, "invalid character in header value at line \(lineNumber), offset \(bad - line.startIndex)")
        }
        return (String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
    }

    /// tchar from RFC 9110 §5.6.2.
    static func isTokenByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: return true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"):
            return true
        default: return false
        }
    }

    /// Network text made safe to quote in an error message: printable ASCII, at most 60 bytes.
    static func quote<C: Collection>(_ bytes: C) -> String where C.Element == UInt8 {
        var out = "\""
        for (count, byte) in bytes.enumerated() {
            if count == 60 { out += "…"; break }
            if byte >= 0x20 && byte < 0x7F && byte != 0x22 && byte != 0x5C {
                out.unicodeScalars.append(Unicode.Scalar(byte))
            } else {
                out += "\\x" + String(byte, radix: 16, uppercase: true).leftPadded(2)
            }
        }
        return out + "\""
    }

    /// Parses `HTTP/<digit>.<digit>`; returns (major, minor).
    static func version<C: Collection>(_ bytes: C) -> (Int, Int)? where C.Element == UInt8 {
        let a = Array(bytes)
        guard a.count == 8, a[0] == 0x48, a[1] == 0x54, a[2] == 0x54, a[3] == 0x50, a[4] == 0x2F,
              a[6] == 0x2E, (0x30...0x39).contains(a[5]), (0x30...0x39).contains(a[7]) else { return nil }
        return (Int(a[5] - 0x30), Int(a[7] - 0x30))
    }

    /// The Content-Length of a head: nil when absent, a failure message when a value is not a
    /// number or the values disagree (RFC 9112 §6.3 allows `5, 5`). An absurdly long number reads
    /// as Int.max so it is refused as too large rather than as malformed.
    static func contentLength(_ headers: HTTPHeaders) -> Result<Int?, HTTPError> {
        var length: Int?
        for field in headers.values("Content-Length") {
            for item in field.split(separator: ",", omittingEmptySubsequences: false) {
                let text = item.trimmingSpaces
                guard !text.isEmpty, text.utf8.allSatisfy({ (0x30...0x39).contains($0) }) else {
                    return .failure(HTTPError(.badRequest, "Content-Length is not a number: \(quote(Array(field.utf8)))"))
                }
                let value = text.utf8.count > 18 ? Int.max : (Int(text) ?? Int.max)
                if let known = length, known != value {
                    return .failure(HTTPError(.badRequest, "conflicting Content-Length values"))
                }
                length = value
            }
        }
        return .success(length)
    }
}

extension String {
    func leftPadded(_ width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
