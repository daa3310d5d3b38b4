import HTTP

/// WHIP (RFC 9725) and WHEP client: the offer goes out as `application/sdp`, a `201 Created`
/// brings the answer and the session's `Location`, `DELETE` ends it.
public struct WHIPClient: Sendable {
    public let endpoint: String
    public var token: String?
    public var timeout: Duration
    /// Accept any certificate on https (explicit `--insecure` only).
    public var insecure: Bool
    /// Carries the requests instead of the network (nil: HTTPClient).
    public var exchange: SignalingExchange?

    public init(endpoint: String, token: String? = nil, timeout: Duration = .seconds(10), insecure: Bool = false,
                exchange: SignalingExchange? = nil) {
        self.endpoint = endpoint
        self.token = token
        self.timeout = timeout
        self.insecure = insecure
        self.exchange = exchange
    }

    private var http: SignalingHTTP { SignalingHTTP(timeout: timeout, insecure: insecure, exchange: exchange) }

    /// What the server answered.
    public struct Session: Sendable {
        public var answer: String
        /// The session resource, resolved against the endpoint (nil if the server sent none).
        public var resource: String?
        /// `Link: <stun:…>; rel="ice-server"` headers, as ICE server URLs.
        public var iceServers: [String]
        /// The entity-tag of the ICE session (RFC 9725 §4.3.1), for `If-Match` on trickle PATCHes.
        public var etag: String?
        /// The `Accept-Patch` media types the 201 advertised (empty: it said nothing).
        public var acceptPatch: [String]

        public init(answer: String, resource: String?, iceServers: [String] = [], etag: String? = nil, acceptPatch: [String] = []) {
            self.answer = answer
            self.resource = resource
            self.iceServers = iceServers
            self.etag = etag
            self.acceptPatch = acceptPatch
        }
    }

    /// POSTs the offer; follows 307/308 redirects; a 503 with Retry-After is retried once.
    public func publish(offer: String) async throws -> Session {
        let client = http
        var headers: HTTPHeaders = ["Content-Type": "application/sdp"]
        if let token { headers.add("Authorization", "Bearer \(token)") }
        var response = try await client.send(method: "POST", url: endpoint, headers: headers, body: Array(offer.utf8))
        if response.status == 503, let wait = response.headers["Retry-After"].flatMap(Int.init), wait <= 30 {
            try await Task.sleep(for: .seconds(wait))
            response = try await client.send(method: "POST", url: endpoint, headers: headers, body: Array(offer.utf8))
        }
        guard response.status == 201 || response.status == 200 else {
            let text = String(decoding: response.body.prefix(300), as: UTF8.self).trimmingTrailingNewlines
            throw SignalingError("\(endpoint) answered \(response.status) \(response.reason)" + (text.isEmpty ? "" : ": \(text)"),
                                 status: response.status)
        }
        guard (response.headers["Content-Type"] ?? "application/sdp").lowercased().hasPrefix("application/sdp") else {
            throw SignalingError("\(endpoint) answered with Content-Type \(response.headers["Content-Type"] ?? "?"), expected application/sdp")
        }
        let answer = String(decoding: response.body, as: UTF8.self)
        guard answer.hasPrefix("v=0") else { throw SignalingError("\(endpoint) answered with a body that is not SDP") }
        let resource = response.headers["Location"].flatMap { HTTPClient.resolve($0, against: response.finalURL) }
        // The DELETE carries the bearer token: never to a clear-text resource of a TLS endpoint.
        if let resource, response.finalURL.lowercased().hasPrefix("https:"), !resource.lowercased().hasPrefix("https:") {
            throw SignalingError("\(endpoint) gave the session resource \(resource), which leaves https; refusing it")
        }
        let acceptPatch = response.headers.values("Accept-Patch").flatMap { $0.split(separator: ",") }
            .compactMap { $0.split(separator: ";").first.map { $0.trimmingCharacters(in: " ").lowercased() } }
        return Session(answer: answer, resource: resource, iceServers: Self.iceServers(from: response.headers.values("Link")),
                       etag: response.headers["ETag"], acceptPatch: acceptPatch)
    }

    /// PATCHes an `application/trickle-ice-sdpfrag` body to the session resource (RFC 9725
    /// §4.3: trickle candidates, or an ICE restart with `If-Match: "*"`). Returns the response
    /// whatever its status: 405/501/422 tell the caller the server does not take it.
    public func patch(_ session: Session, fragment: String, ifMatch: String?) async throws -> HTTPClientResponse {
        guard let resource = session.resource else {
            throw SignalingError("\(endpoint) gave no session resource (Location) to PATCH")
        }
        var headers: HTTPHeaders = ["Content-Type": "application/trickle-ice-sdpfrag"]
        if let ifMatch { headers.add("If-Match", ifMatch) }
        if let token { headers.add("Authorization", "Bearer \(token)") }
        return try await http.send(method: "PATCH", url: resource, headers: headers, body: Array(fragment.utf8))
    }

    /// DELETEs the session resource.
    public func stop(_ session: Session) async throws {
        guard let resource = session.resource else { return }
        var headers: HTTPHeaders = [:]
        if let token { headers.add("Authorization", "Bearer \(token)") }
        let response = try await http.send(method: "DELETE", url: resource, headers: headers)
        guard (200..<300).contains(response.status) else {
            throw SignalingError("DELETE \(resource) answered \(response.status)", status: response.status)
        }
    }

    /// `<stun:stun.example.net>; rel="ice-server"` → "stun:stun.example.net".
    static func iceServers(from links: [String]) -> [String] {
        links.flatMap { $0.split(separator: ",") }.compactMap { link -> String? in
            let parts = link.split(separator: ";").map { $0.trimmingCharacters(in: " ") }
            guard let first = parts.first, first.hasPrefix("<"), first.hasSuffix(">"),
                  parts.dropFirst().contains(where: { ["rel=\"ice-server\"", "rel=ice-server"].contains($0.filter { $0 != " " }) })
            else { return nil }
            return String(first.dropFirst().dropLast())
        }
    }
}

public struct SignalingError: Error, CustomStringConvertible, Sendable {
    public var description: String
    /// The HTTP status (or SRS `code`) the server refused with; nil when no server answered.
    public var status: Int?
    public init(_ description: String, status: Int? = nil) {
        self.description = description
        self.status = status
    }
}

extension String {
    var trimmingTrailingNewlines: String {
        var s = Substring(self)
        while let last = s.last, last == "\n" || last == "\r" { s = s.dropLast() }
        return String(s)
    }
}

extension StringProtocol {
    func trimmingCharacters(in character: Character) -> String {
        var s = Substring(self)
        while s.first == character { s = s.dropFirst() }
        while s.last == character { s = s.dropLast() }
        return String(s)
    }
}
