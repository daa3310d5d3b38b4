// A response a handler returns, with builders for the content types the project serves.

public struct HTTPResponse: Sendable, Equatable {
    public var status: Int
    public var reason: String
    public var headers: HTTPHeaders
    public var body: [UInt8]

    /// `reason` defaults to the standard phrase for `status`.
    public init(status: Int, reason: String? = nil, headers: HTTPHeaders = [], body: [UInt8] = []) {
        self.status = status
        self.reason = reason ?? HTTPResponse.reasonPhrase(status)
        self.headers = headers
        self.body = body
    }

    /// `text/plain; charset=utf-8`.
    public static func text(_ status: Int, _ text: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/plain; charset=utf-8"], body: Array(text.utf8))
    }

    /// `application/json` with an already encoded body.
    public static func json(_ status: Int, _ encoded: [UInt8]) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "application/json"], body: encoded)
    }

    /// `application/json` with an already encoded body.
    public static func json(_ status: Int, _ encoded: String) -> HTTPResponse {
        json(status, Array(encoded.utf8))
    }

    /// `application/sdp`, as WHIP/WHEP answer; `location` becomes the Location header (the
    /// session resource of a 201 Created).
    public static func sdp(_ status: Int, _ sdp: String, location: String? = nil) -> HTTPResponse {
        var response = HTTPResponse(status: status, headers: ["Content-Type": "application/sdp"], body: Array(sdp.utf8))
        if let location { response.headers.add("Location", location) }
        return response
    }

    /// `text/html; charset=utf-8`.
    public static func html(_ status: Int, _ html: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Content-Type": "text/html; charset=utf-8"], body: Array(html.utf8))
    }

    /// A response with no body (e.g. 204, or 200 to a DELETE).
    public static func empty(_ status: Int) -> HTTPResponse {
        HTTPResponse(status: status)
    }

    /// A redirect with a Location header (307/308 keep method and body).
    public static func redirect(_ status: Int, to location: String) -> HTTPResponse {
        HTTPResponse(status: status, headers: ["Location": location])
    }

    /// Whether a response with this status may carry a body (RFC 9110 §6.4.1).
    static func statusAllowsBody(_ status: Int) -> Bool {
        !(100...199).contains(status) && status != 204 && status != 304
    }

    public static func reasonPhrase(_ status: Int) -> String {
        switch status {
        case 100: return "Continue"
        case 101: return "Switching Protocols"
        case 200: return "OK"
        case 201: return "Created"
        case 202: return "Accepted"
        case 204: return "No Content"
        case 206: return "Partial Content"
        case 301: return "Moved Permanently"
        case 302: return "Found"
        case 303: return "See Other"
        case 304: return "Not Modified"
        case 307: return "Temporary Redirect"
        case 308: return "Permanent Redirect"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 406: return "Not Acceptable"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 410: return "Gone"
        case 411: return "Length Required"
        case 412: return "Precondition Failed"
        case 413: return "Content Too Large"
        case 415: return "Unsupported Media Type"
        case 417: return "Expectation Failed"
        case 421: return "Misdirected Request"
        case 422: return "Unprocessable Content"
        case 428: return "Precondition Required"
        case 429: return "Too Many Requests"
        case 431: return "Request Header Fields Too Large"
        case 500: return "Internal Server Error"
        case 501: return "Not Implemented"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        case 505: return "HTTP Version Not Supported"
        default:
            switch status {
            case 100...199: return "Informational"
            case 200...299: return "Success"
            case 300...399: return "Redirection"
            case 400...499: return "Client Error"
            default: return "Server Error"
            }
        }
    }

    /// The bytes sent for this response. The server owns the framing: any Content-Length or
    /// Transfer-Encoding from the handler is replaced; `headOnly` (a HEAD request) omits the body
    /// but keeps its length.
    func serialize(headOnly: Bool, close: Bool) -> [UInt8] {
        let status = (100...999).contains(self.status) ? self.status : 500
        let allowsBody = Self.statusAllowsBody(status)
        var headers = self.headers
        headers.remove("Content-Length")
        headers.remove("Transfer-Encoding")
        if close { headers.set("Connection", "close") }
        if allowsBody { headers.set("Content-Length", String(body.count)) }

        var out: [UInt8] = []
        out.reserveCapacity(128 + (allowsBody && !headOnly ? body.count : 0))
        out.append(contentsOf: "HTTP/1.1 \(status) ".utf8)
        HTTPHeaders.appendSafe(reason, to: &out)
        out.append(0x0D); out.append(0x0A)
        headers.serialize(into: &out)
        out.append(0x0D); out.append(0x0A)
        if allowsBody && !headOnly { out.append(contentsOf: body) }
        return out
    }
}
