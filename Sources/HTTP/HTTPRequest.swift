// A request as the server hands it to a handler (and as the parser sees its head).

/// The request line and header fields of a request, decoded.
public struct HTTPRequestHead: Sendable, Equatable {
    public var method: String
    /// The request target exactly as sent (e.g. `/rtc/v1/whip/?app=live&stream=a%20b`).
    public var target: String
    /// `HTTP/1.1` or `HTTP/1.0`.
    public var version: String
    /// The percent-decoded path without the query (`*` for `OPTIONS *`).
    public var path: String
    /// Query parameters in order, percent-decoded (`+` read as a space).
    public var query: [(String, String)]
    public var headers: HTTPHeaders

    public static func == (lhs: HTTPRequestHead, rhs: HTTPRequestHead) -> Bool {
        lhs.method == rhs.method && lhs.target == rhs.target && lhs.version == rhs.version
            && lhs.path == rhs.path && lhs.headers == rhs.headers
            && lhs.query.elementsEqual(rhs.query) { $0 == $1 }
    }
}

public struct HTTPRequest: Sendable {
    public var method: String
    public var target: String
    public var version: String
    public var path: String
    public var query: [(String, String)]
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The peer as `ip:port` (`[ip6]:port` for IPv6).
    public var remoteAddress: String

    public init(method: String, target: String, version: String = "HTTP/1.1", path: String,
                query: [(String, String)] = [], headers: HTTPHeaders = [], body: [UInt8] = [],
                remoteAddress: String = "") {
        self.method = method
        self.target = target
        self.version = version
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    public init(head: HTTPRequestHead, body: [UInt8], remoteAddress: String) {
        self.init(method: head.method, target: head.target, version: head.version, path: head.path,
                  query: head.query, headers: head.headers, body: body, remoteAddress: remoteAddress)
    }

    /// The request line and header fields, without the body.
    public var head: HTTPRequestHead {
        HTTPRequestHead(method: method, target: target, version: version, path: path, query: query, headers: headers)
    }

    /// The first value of query parameter `name`.
    public func queryValue(_ name: String) -> String? {
        query.first { $0.0 == name }?.1
    }

    /// Whether Content-Type names `type` (`application/json; charset=utf-8` is application/json),
    /// case-insensitively.
    public func hasMediaType(_ type: String) -> Bool {
        guard let value = headers["Content-Type"] else { return false }
        let essence = value.split(separator: ";", maxSplits: 1, omittingEmptySubsequences: false).first ?? ""
        return HTTPHeaders.same(essence.trimmingSpaces, type)
    }

    /// The body as UTF-8 text (invalid sequences replaced).
    public var bodyText: String { String(decoding: body, as: UTF8.self) }
}
