// Response head parsing for the client (RFC 9112 §4): a pure function over bytes.

public struct HTTPResponseHead: Sendable, Equatable {
    public var version: String
    public var status: Int
    public var reason: String
    public var headers: HTTPHeaders
}

/// Parses a status line and header fields; `bytes` may include the empty line ending the head.
public func parseHTTPResponseHead(_ bytes: [UInt8]) throws(HTTPError) -> HTTPResponseHead {
    let lines = try HeadParsing.lines(bytes, kind: .malformedResponse)
    guard let statusLine = lines.first else {
        throw HTTPError(.malformedResponse, "malformed response status line \"\" (empty)")
    }
    let malformed = HTTPError(.malformedResponse, "malformed response status line \(HeadParsing.quote(statusLine))")
    let parts = statusLine.split(separator: 0x20, maxSplits: 2, omittingEmptySubsequences: false)
    guard parts.count >= 2, let (major, minor) = HeadParsing.version(parts[0]), major == 1,
          parts[1].count == 3, parts[1].allSatisfy({ (0x30...0x39).contains($0) }) else { throw malformed }
    let status = parts[1].reduce(0) { $0 * 10 + Int($1 - 0x30) }
    guard status >= 100 else { throw malformed }
    let reasonBytes = parts.count == 3 ? parts[2] : []
    if reasonBytes.contains(where: { ($0 < 0x20 && $0 != 0x09) || $0 == 0x7F }) { throw malformed }

    var headers = HTTPHeaders()
    for (offset, line) in lines.dropFirst().enumerated() {
        let (name, value) = try HeadParsing.field(line, lineNumber: offset + 2, kind: .malformedResponse)
        headers.add(name, value)
    }
    return HTTPResponseHead(version: "HTTP/\(major).\(minor)", status: status,
                            reason: String(decoding: reasonBytes, as: UTF8.self), headers: headers)
}
