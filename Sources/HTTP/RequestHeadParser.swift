// Request head parsing (RFC 9112 §3): a pure function over bytes, fuzzed by FuzzEntry.swift.

/// Parses a request line and its header fields. `bytes` may or may not include the empty line
/// that ends the head; anything after that empty line is ignored. Errors carry the status the
/// server answers with (`HTTPError.responseStatus`) and say which line was wrong.
public func parseHTTPRequestHead(_ bytes: [UInt8]) throws(HTTPError) -> HTTPRequestHead {
    let lines = try HeadParsing.lines(bytes, kind: .badRequest)
    guard let requestLine = lines.first else { throw HTTPError(.badRequest, "malformed request line: empty request") }
    let parts = requestLine.split(separator: 0x20, omittingEmptySubsequences: false)
    guard parts.count == 3, parts.allSatisfy({ !$0.isEmpty }) else {
        throw HTTPError(.badRequest, "malformed request line: expected METHOD SP target SP HTTP-version")
    }
    let methodBytes = parts[0], targetBytes = parts[1], versionBytes = parts[2]
    guard methodBytes.allSatisfy(HeadParsing.isTokenByte) else {
        throw HTTPError(.badRequest, "malformed request line: method is not a token")
    }
    if let bad = targetBytes.firstIndex(where: { $0 <= 0x20 || $0 >= 0x7F }) {
        throw HTTPError(.badRequest, "malformed request line: invalid character in target at offset \(bad - requestLine.startIndex)")
    }
    guard let (major, minor) = HeadParsing.version(versionBytes) else {
        throw HTTPError(.badRequest, "malformed request line: bad HTTP version \(HeadParsing.quote(versionBytes))")
    }
    guard major == 1 else {
        throw HTTPError(.versionNotSupported, "HTTP version \(major).\(minor) not supported")
    }

    var headers = HTTPHeaders()
    for (offset, line) in lines.dropFirst().enumerated() {
        let (name, value) = try HeadParsing.field(line, lineNumber: offset + 2, kind: .badRequest)
        headers.add(name, value)
    }

    let target = String(decoding: targetBytes, as: UTF8.self)
    let (path, query) = try splitTarget(target)
    return HTTPRequestHead(method: String(decoding: methodBytes, as: UTF8.self), target: target,
                           version: "HTTP/\(major).\(minor)", path: path, query: query, headers: headers)
}

/// Splits a request target into a decoded path and query. Accepts origin-form (`/a?b`),
/// absolute-form (`http://host/a?b`, RFC 9112 §3.2.2) and asterisk-form (`*`).
func splitTarget(_ target: String) throws(HTTPError) -> (String, [(String, String)]) {
    if target == "*" { return ("*", []) }
    var rest = Substring(target)
    if !rest.hasPrefix("/") {
        let lower = rest.lowercased()
        guard lower.hasPrefix("http://") || lower.hasPrefix("https://") else {
            throw HTTPError(.badRequest, "malformed request line: target must start with \"/\"")
        }
        let afterScheme = rest[rest.index(rest.startIndex, offsetBy: lower.hasPrefix("http://") ? 7 : 8)...]
        if let slash = afterScheme.firstIndex(where: { $0 == "/" || $0 == "?" }) {
            rest = afterScheme[slash...]
        } else {
            rest = "/"
        }
        if rest.hasPrefix("?") { rest = "/" + rest }
    }
    if let hash = rest.firstIndex(of: "#") { rest = rest[..<hash] }
    var rawPath = rest
    var rawQuery: Substring = ""
    if let question = rest.firstIndex(of: "?") {
        rawPath = rest[..<question]
        rawQuery = rest[rest.index(after: question)...]
    }
    guard let path = PercentDecoding.decode(rawPath, plusIsSpace: false) else {
        throw HTTPError(.badRequest, "invalid percent-encoding in path")
    }
    switch PercentDecoding.parseQuery(rawQuery) {
    case .success(let query):
        return (path.isEmpty ? "/" : path, query)
    case .failure(let error):
        throw HTTPError(.badRequest, "invalid percent-encoding in query parameter \(HeadParsing.quote(Array(error.segment.utf8)))")
    }
}
