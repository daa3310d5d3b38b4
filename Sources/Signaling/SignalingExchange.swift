import HTTP

/// One HTTP request of a signaling client (SRS's API, WHIP/WHEP).
public struct SignalingRequest: Sendable {
    public var method: String
    public var url: String
    public var headers: HTTPHeaders
    public var body: [UInt8]

    public init(method: String, url: String, headers: HTTPHeaders = [], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }
}

/// The server's answer to a `SignalingRequest`.
public struct SignalingResponse: Sendable {
    public var status: Int
    public var reason: String
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The URL that produced this response, after redirects (`Location` resolves against it).
    public var finalURL: String

    public init(status: Int, reason: String, headers: HTTPHeaders = [], body: [UInt8] = [], finalURL: String) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.finalURL = finalURL
    }

    /// The body as UTF-8 text (invalid sequences replaced).
    public var text: String { String(decoding: body, as: UTF8.self) }
}

/// How the signaling clients carry a request: nil is the network (`HTTPClient`, TLS included);
/// a closure serves it some other way, e.g. an in-process relay in simulated-time tests.
public typealias SignalingExchange = @Sendable (SignalingRequest) async throws -> SignalingResponse
