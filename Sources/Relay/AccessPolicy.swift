import Foundation
import HTTP
import Signaling

/// Who may publish, play, signal and administer the relay, the way SRS users know it: a token per
/// role (`--publish-token`, `--play-token`, `--api-token`, `--signal-token`), presented as
/// `Authorization: Bearer` (WHIP, WHEP, the API, signaling) or as `?token=`/`?secret=` on SRS's
/// `streamurl` (the one place SRS clients put it; nowhere else in a URL, where it would end up in
/// logs); and an `on_publish`/`on_play` style HTTP hook for apps that decide per stream. No tokens
/// and no hook is an open server, which `swiftrtc serve` only allows on loopback unless the
/// operator says `--no-auth`, and which answers only loopback Host names (and `--allowed-host`).
public struct AccessPolicy: Sendable {
    public var publishToken: String?
    public var playToken: String?
    public var apiToken: String?
    /// P2P signaling (`/rtc/v1/signal/`): peers present it, and every room needs a key. Without
    /// it, signaling is off once any access control is on.
    public var signalToken: String?
    /// Host names served besides IP addresses and localhost (`--allowed-host`): every name an
    /// open server is reached by; with access control on, given names become the only ones.
    public var allowedHosts: [String]
    /// POSTed a JSON description of every publish/play (SRS's hook body); 2xx allows, unless
    /// the body is JSON with a non-zero `code` (SRS's convention).
    public var hook: String?
    /// Origins whose pages may call the API from a browser (`*`: any). Empty: the relay's own
    /// pages only (same origin needs no CORS).
    public var corsOrigins: [String]

    public init(publishToken: String? = nil, playToken: String? = nil, apiToken: String? = nil, signalToken: String? = nil,
                hook: String? = nil, corsOrigins: [String] = [], allowedHosts: [String] = []) {
        self.publishToken = publishToken
        self.playToken = playToken
        self.apiToken = apiToken
        self.signalToken = signalToken
        self.hook = hook
        self.corsOrigins = corsOrigins
        self.allowedHosts = allowedHosts
    }

    /// Nothing is checked: no token, no hook.
    public var isOpen: Bool { publishToken == nil && playToken == nil && apiToken == nil && signalToken == nil && hook == nil }

    /// The Host names the HTTP server answers besides IP addresses; nil: any. An open server
    /// (reachable by any page's DNS-rebinding trick) answers only localhost, the name it is
    /// bound to and `allowedHosts`; a protected one any Host unless names were given.
    func servedHosts(boundTo host: String) -> Set<String>? {
        guard isOpen || !allowedHosts.isEmpty else { return nil }
        return RequestGuard.hostNames(boundTo: host, extra: allowedHosts)
    }

    /// Who may use the signaling endpoint.
    var signalAccess: SignalAccess {
        if let signalToken { return .token(signalToken) }
        return isOpen ? .open : .closed("signaling is off: the server was started with access control but no --signal-token")
    }

    /// Whether a request head carries one of the configured tokens (any role): such requests are
    /// served from the connections kept in reserve while the server is full.
    func credentialed(_ head: HTTPRequestHead) -> Bool {
        let tokens = [publishToken, playToken, apiToken, signalToken].compactMap { $0 }
        guard let presented = Credentials.bearer(head.headers) ?? SignalAccess.presentedToken(head.headers) else { return false }
        return tokens.contains { Credentials.matches(presented, $0) }
    }
    public enum Decision: Equatable, Sendable {
        case allow
        /// 401: no credentials; 403: wrong ones, or a capability the server does not offer.
        case deny(status: Int, message: String)
    }

    func admit(_ role: RelaySession.Role, presented: String?) -> Decision {
        let what = role == .publisher ? "publishing" : "playing"
        guard let required = role == .publisher ? publishToken : playToken else { return .allow }
        guard let presented, !presented.isEmpty else {
            return .deny(status: 401, message: "\(what) needs a token (Authorization: Bearer, or ?token= on the stream URL)")
        }
        return Self.same(presented, required) ? .allow : .deny(status: 403, message: "wrong token for \(what)")
    }

    /// The stream listing and kicking: open on an open server, else only with `--api-token`.
    func admitAPI(presented: String?) -> Decision {
        guard let required = apiToken else {
            return isOpen ? .allow : .deny(status: 403, message: "the API needs the server started with --api-token")
        }
        guard let presented, !presented.isEmpty else { return .deny(status: 401, message: "the API needs a token (Authorization: Bearer)") }
        return Self.same(presented, required) ? .allow : .deny(status: 403, message: "wrong API token")
    }

    /// The Access-Control-Allow-Origin to answer a request from `origin` with, or nil.
    func allowedOrigin(_ origin: String?) -> String? {
        guard let origin else { return nil }
        if corsOrigins.contains("*") { return "*" }
        return corsOrigins.contains(origin) ? origin : nil
    }

    /// Constant time in the length of `b`, so the comparison does not tell how much matched.
    static func same(_ a: String, _ b: String) -> Bool { Credentials.matches(a, b) }

    /// The bearer token of a request, else `?token=`/`?secret=` of an SRS `streamurl` query
    /// (never of the request's own URL).
    static func presentedToken(_ request: HTTPRequest, streamQuery: String? = nil) -> String? {
        if let bearer = Credentials.bearer(request.headers) { return bearer }
        guard let streamQuery else { return nil }
        for pair in streamQuery.split(separator: "&") {
            let kv = pair.split(separator: "=", maxSplits: 1)
            if kv.count == 2, kv[0] == "token" || kv[0] == "secret" {
                return String(kv[1]).removingPercentEncoding ?? String(kv[1])
            }
        }
        return nil
    }

    /// Asks the hook; any failure to get a clear yes is a no (fail closed).
    func askHook(action: String, app: String, stream: String, param: String, ip: String, client: String) async -> Decision {
        guard let hook else { return .allow }
        do {
            let response = try await postHook(hook, Self.hookBody(action: action, app: app, stream: stream, param: param, ip: ip, client: client))
            guard (200..<300).contains(response.status) else {
                return .deny(status: 403, message: "\(action) denied by the hook (HTTP \(response.status))")
            }
            if let object = try? JSONSerialization.jsonObject(with: Data(response.body)) as? [String: Any],
               let code = object["code"] as? Int, code != 0 {
                return .deny(status: 403, message: "\(action) denied by the hook (code \(code))")
            }
            return .allow
        } catch {
            return .deny(status: 403, message: "\(action) hook \(hook) failed: \(error)")
        }
    }

    /// Tells the hook of an event whose answer changes nothing (SRS's `on_dvr`): nil when it
    /// took it (2xx), else why not, for the log. `extra` adds to SRS's common fields.
    func notifyHook(action: String, app: String, stream: String, param: String, ip: String, client: String,
                    extra: [String: String] = [:]) async -> String? {
        guard let hook else { return nil }
        var body = Self.hookBody(action: action, app: app, stream: stream, param: param, ip: ip, client: client)
        for (key, value) in extra { body[key] = value }
        do {
            let response = try await postHook(hook, body)
            return (200..<300).contains(response.status) ? nil : "\(action) hook \(hook) answered HTTP \(response.status)"
        } catch {
            return "\(action) hook \(hook) failed: \(error)"
        }
    }

    /// SRS's hook body: the fields every action has.
    private static func hookBody(action: String, app: String, stream: String, param: String, ip: String, client: String) -> [String: Any] {
        ["action": action, "app": app, "stream": stream, "param": param, "ip": ip,
         "client_id": client, "vhost": "__defaultVhost__", "server_id": "swiftrtc"]
    }

    /// The one POST to the hook (5 s, no redirects), for asking and for telling.
    private func postHook(_ hook: String, _ body: [String: Any]) async throws -> HTTPClientResponse {
        let data = try JSONSerialization.data(withJSONObject: body, options: [.sortedKeys])
        return try await HTTPClient(timeout: .seconds(5), maxRedirects: 0)
            .send(method: "POST", url: hook, headers: ["Content-Type": "application/json"], body: Array(data))
    }
}

/// App and stream names: 1–64 characters of `A–Z a–z 0–9 - _ .`, not starting with a dot. The
/// URL-safe set SRS's examples use; no `/` (so `a/b` + `c` and `a` + `b/c` cannot be one stream),
/// no control characters (so nothing odd reaches a log line).
enum StreamName {
    static func validate(_ name: String, what: String) throws(RelayError) {
        guard SafeName.isValid(name), !name.hasPrefix(".") else {
            throw RelayError("invalid \(what) name \(escapedForLog(name)): use 1–64 of A–Z a–z 0–9 - _ . (not starting with .)", code: 400)
        }
    }
}

/// Control characters (CR, LF, NUL, ESC …) as `\u{…}` escapes, so a client's bytes cannot forge
/// or garble log lines.
func escapedForLog(_ text: String) -> String {
    guard text.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else { return text }
    var out = ""
    for u in text.unicodeScalars {
        if u.properties.generalCategory == .control {
            out += "\\u{\(String(u.value, radix: 16))}"
        } else {
            out.unicodeScalars.append(u)
        }
    }
    return out
}

/// What an offer may hold: publishers and players need an audio and a video section (and maybe
/// data); hundreds of m-lines are an attack on the loop that parses them.
enum OfferLimits {
    static let maxBytes = 64 * 1024
    static let maxMediaSections = 3

    static func check(_ offer: String) throws(RelayError) {
        guard offer.utf8.count <= maxBytes else {
            throw RelayError("the offer is \(offer.utf8.count) bytes; at most \(maxBytes) are accepted", code: 400)
        }
        var sections = 0
        for line in offer.split(whereSeparator: \.isNewline) where line.hasPrefix("m=") {
            sections += 1
        }
        guard sections <= maxMediaSections else {
            throw RelayError("the offer has \(sections) media sections; at most \(maxMediaSections) are accepted", code: 400)
        }
    }
}
