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

/// How the signaling clients carry a request: nil is the network (`HTTPClient`, TLS included);
/// a closure serves it some other way, e.g. an in-process relay in simulated-time tests.
/// The answer is an `HTTPClientResponse`, whoever carried it.
public typealias SignalingExchange = @Sendable (SignalingRequest) async throws -> HTTPClientResponse
