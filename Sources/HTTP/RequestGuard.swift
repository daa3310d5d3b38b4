// Who may reach a server from a web page: the Host names it answers (a DNS-rebinding page
// reaches a loopback server under the attacker's own name) and the page origins that may change
// state or open a WebSocket (a cross-site page can POST a "simple" request without a preflight).
// Sans-I/O: headers in, a refusal or nil out.
import Glibc

public struct RequestGuard: Sendable, Equatable {
    /// Host names answered (lowercase, without port) besides IP addresses, which a rebinding
    /// page can never send: its requests carry its own name. nil: any Host.
    public var allowedHosts: Set<String>?
    /// Origins whose pages may make state-changing requests and upgrades besides the server's
    /// own (`*`: any). The same list as the server's CORS origins.
    public var allowedOrigins: [String]

    public init(allowedHosts: Set<String>? = nil, allowedOrigins: [String] = ["*"]) {
        self.allowedHosts = allowedHosts
        self.allowedOrigins = allowedOrigins
    }

    /// The names a server answers when it checks Host: localhost, the name it is bound to
    /// (an IP there is harmless: IPs always pass) and the operator's `extra` names.
    public static func hostNames(boundTo host: String, extra: [String]) -> Set<String> {
        Set((["localhost", host] + extra).map { $0.lowercased() })
    }

    /// A refusal for the request, or nil to serve it. Host first: 421 for a name not served;
    /// then 403 for a foreign Origin on anything but GET, HEAD, OPTIONS and TRACE, or on an upgrade.
    public func refusal(method: String, headers: HTTPHeaders) -> HTTPResponse? {
        let host = headers["Host"]
        // No Host at all is an HTTP/1.0 client or a test tool, never a browser.
        if let allowedHosts, let host, !Self.accepts(host: host, allowed: allowedHosts) {
            return .text(421, "Host \(HeadParsing.quote(Array(host.utf8))) is not a name this server answers to: "
                         + "IP addresses, localhost and the names given with --allowed-host are\n")
        }
        let safe = ["GET", "HEAD", "OPTIONS", "TRACE"].contains(method) && !headers.contains("Upgrade")
        if !safe, let origin = headers["Origin"], !originAllowed(origin, host: host) {
            return .text(403, "Origin \(HeadParsing.quote(Array(origin.utf8))) may not make this request: only the server's own "
                         + "pages and the origins it allows (--cors-origin) may\n")
        }
        return nil
    }

    func originAllowed(_ origin: String, host: String?) -> Bool {
        if allowedOrigins.contains("*") || allowedOrigins.contains(origin) { return true }
        // Same origin: the page came from this authority (the scheme may differ behind a TLS proxy).
        guard let host, let separator = origin.range(of: "://") else { return false }
        return HTTPHeaders.same(origin[separator.upperBound...], host)
    }

    /// Whether a Host header value names an IP address or one of `allowed`.
    static func accepts(host value: String, allowed: Set<String>) -> Bool {
        let value = value.trimmingSpaces.lowercased()
        if value.hasPrefix("[") {
            guard let close = value.firstIndex(of: "]") else { return false }
            return isAddress(String(value[value.index(after: value.startIndex)..<close]), family: AF_INET6)
        }
        var name = Substring(value)
        if let colon = name.lastIndex(of: ":"), !name[name.index(after: colon)...].isEmpty,
           name[name.index(after: colon)...].allSatisfy(\.isNumber) {
            name = name[..<colon]
        }
        if name.hasSuffix(".") { name = name.dropLast() }   // "localhost." is localhost
        guard !name.isEmpty else { return false }
        return isAddress(String(name), family: AF_INET) || allowed.contains(String(name))
    }

    private static func isAddress(_ text: String, family: Int32) -> Bool {
        var buffer = [UInt8](repeating: 0, count: 16)
        return inet_pton(family, text, &buffer) == 1
    }
}
