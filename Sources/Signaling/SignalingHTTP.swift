import HTTP

/// One request/response for the signaling clients, `http://` and `https://` alike, through our
/// own HTTPClient. https verifies the server's certificate against the system CA store; only
/// `insecure` (the CLI's explicit `--insecure`) accepts any certificate — the reference app
/// trusted every certificate silently; we don't.
struct SignalingHTTP: Sendable {
    var timeout: Duration
    var insecure: Bool = false
    /// Carries the request instead of the network when set.
    var exchange: SignalingExchange? = nil

    @inline(never)   // works around a swift-frontend 6.3.1 crash (coro-split) in release builds
    func send(method: String, url: String, headers: HTTPHeaders = [], body: [UInt8] = []) async throws -> HTTPClientResponse {
        guard url.lowercased().hasPrefix("http://") || url.lowercased().hasPrefix("https://") else {
            throw SignalingError("\(url): only http:// and https:// URLs are supported")
        }
        if let exchange { return try await exchange(SignalingRequest(method: method, url: url, headers: headers, body: body)) }
        return try await HTTPClient(timeout: timeout, insecure: insecure).send(method: method, url: url, headers: headers, body: body)
    }
}
