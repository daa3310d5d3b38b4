import Foundation
import HTTP

/// SRS's WebRTC HTTP API: `POST http://HOST:1985/rtc/v1/publish/` (or `/play/`) with JSON
/// `{api, tid, streamurl, sdp, clientip}`; the reply's `code` 0 carries the answer in `sdp`.
public struct SRSClient: Sendable {
    public enum Action: String, Sendable { case publish, play }

    /// `webrtc://host[:port]/app/stream[?query]` split up.
    public struct StreamURL: Sendable, Equatable {
        public var host: String
        public var port: Int?
        public var app: String
        public var stream: String
        public var query: String?
        public var original: String

        public init(parsing url: String) throws(SignalingError) {
            guard url.hasPrefix("webrtc://") else { throw SignalingError("\(url): an SRS stream URL starts with webrtc://") }
            var rest = Substring(url.dropFirst("webrtc://".count))
            var query: String?
            if let q = rest.firstIndex(of: "?") {
                query = String(rest[rest.index(after: q)...])
                rest = rest[..<q]
            }
            let parts = rest.split(separator: "/", omittingEmptySubsequences: false)
            guard parts.count >= 3, !parts[0].isEmpty, !parts[parts.count - 1].isEmpty else {
                throw SignalingError("\(url): expected webrtc://HOST[:PORT]/APP/STREAM")
            }
            let authority = parts[0]
            if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
                guard let port = Int(authority[authority.index(after: colon)...]), (1...65535).contains(port) else {
                    throw SignalingError("\(url): bad port in \(authority)")
                }
                host = String(authority[..<colon])
                self.port = port
            } else {
                host = String(authority)
                port = nil
            }
            app = parts[1..<(parts.count - 1)].joined(separator: "/")
            stream = String(parts[parts.count - 1])
            self.query = query
            original = url
        }

        /// Where SRS's API listens for this URL: port 1985 unless the URL names another (as SRS's
        /// JS SDK does), plain HTTP unless `schema=https` is in the query.
        public func apiURL(_ action: Action) -> String {
            let https = query?.split(separator: "&").contains("schema=https") ?? false
            let apiPort = port ?? (https ? 443 : 1985)
            var url = "\(https ? "https" : "http")://\(host):\(apiPort)/rtc/v1/\(action.rawValue)/"
            if let query { url += "?" + query }
            return url
        }
    }

    public let streamURL: StreamURL
    public var apiOverride: String?
    public var timeout: Duration
    /// Accept any certificate on an https API URL (explicit `--insecure` only).
    public var insecure: Bool
    /// Carries the request instead of the network (nil: HTTPClient).
    public var exchange: SignalingExchange?

    public init(url: String, apiOverride: String? = nil, timeout: Duration = .seconds(10), insecure: Bool = false,
                exchange: SignalingExchange? = nil) throws(SignalingError) {
        streamURL = try StreamURL(parsing: url)
        self.apiOverride = apiOverride
        self.timeout = timeout
        self.insecure = insecure
        self.exchange = exchange
    }

    public struct Answer: Sendable {
        public var sdp: String
        public var sessionID: String?
        public var server: String?
    }

    /// Sends the offer; returns the answer or throws an error carrying SRS's code and text.
    public func exchange(_ action: Action, offer: String, clientIP: String?) async throws -> Answer {
        let api = apiOverride ?? streamURL.apiURL(action)
        var body: [String: Any] = ["api": api, "tid": String(UInt32.random(in: 0...UInt32.max), radix: 36),
                                   "streamurl": streamURL.original, "sdp": offer]
        if let clientIP { body["clientip"] = clientIP }
        let json = try JSONSerialization.data(withJSONObject: body)
        let response = try await SignalingHTTP(timeout: timeout, insecure: insecure, exchange: exchange)
            .send(method: "POST", url: api, headers: ["Content-Type": "application/json"], body: Array(json))
        guard response.status == 200 else {
            throw SignalingError("\(api) answered HTTP \(response.status): \(String(decoding: response.body.prefix(200), as: UTF8.self))",
                                 status: response.status)
        }
        guard let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any] else {
            throw SignalingError("\(api) answered with something that is not JSON: \(String(decoding: response.body.prefix(120), as: UTF8.self))")
        }
        let code = (object["code"] as? Int) ?? (object["code"] as? NSNumber)?.intValue ?? -1
        guard code == 0 else {
            let text = (object["error"] as? String) ?? (object["msg"] as? String) ?? (object["data"] as? String) ?? ""
            throw SignalingError("SRS refused \(action.rawValue) of \(streamURL.original): code \(code)" + (text.isEmpty ? "" : " (\(text))"),
                                 status: code)
        }
        guard let sdp = object["sdp"] as? String, sdp.hasPrefix("v=0") else {
            throw SignalingError("\(api): reply has code 0 but no SDP answer")
        }
        return Answer(sdp: sdp, sessionID: object["sessionid"] as? String, server: (object["server"] as? String) ?? (object["server"] as? NSNumber)?.stringValue)
    }
}

/// The local address of the interface that routes to `host` (the reference app's IPUtil):
/// a connected UDP socket's name, no packet sent.
public func localAddress(routingTo host: String, port: UInt16 = 1985) -> String? {
    var hints = addrinfo()
    hints.ai_family = AF_INET
    hints.ai_socktype = Int32(SOCK_DGRAM.rawValue)
    var result: UnsafeMutablePointer<addrinfo>?
    guard getaddrinfo(host, String(port), &hints, &result) == 0, let info = result else { return nil }
    defer { freeaddrinfo(result) }
    let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    guard connect(fd, info.pointee.ai_addr, info.pointee.ai_addrlen) == 0 else { return nil }
    var local = sockaddr_in()
    var len = socklen_t(MemoryLayout<sockaddr_in>.size)
    let ok = withUnsafeMutablePointer(to: &local) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
    }
    guard ok == 0 else { return nil }
    var buffer = [CChar](repeating: 0, count: Int(INET_ADDRSTRLEN))
    var addr = local.sin_addr
    guard inet_ntop(AF_INET, &addr, &buffer, socklen_t(buffer.count)) != nil else { return nil }
    return String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
}
