import HTTP
import Testing
@testable import Relay

@Suite struct AccessPolicyTests {
    @Test func tokensPerRoleWith401And403() {
        let p = AccessPolicy(publishToken: "pub", playToken: "play", apiToken: "api")
        #expect(p.admit(.publisher, presented: "pub") == .allow)
        #expect(p.admit(.publisher, presented: nil)
                == .deny(status: 401, message: "publishing needs a token (Authorization: Bearer, or ?token= on the stream URL)"))
        #expect(p.admit(.publisher, presented: "play") == .deny(status: 403, message: "wrong token for publishing"))
        #expect(p.admit(.player, presented: "play") == .allow)
        #expect(p.admit(.player, presented: "pub") == .deny(status: 403, message: "wrong token for playing"))
        #expect(p.admitAPI(presented: "api") == .allow)
        #expect(p.admitAPI(presented: nil) == .deny(status: 401, message: "the API needs a token (Authorization: Bearer)"))
        #expect(p.admitAPI(presented: "pub") == .deny(status: 403, message: "wrong API token"))
    }

    @Test func openServerAllowsAllButAPIIsOffOnceAnyAccessIsSet() {
        let open = AccessPolicy()
        #expect(open.isOpen)
        #expect(open.admit(.publisher, presented: nil) == .allow && open.admitAPI(presented: nil) == .allow)
        let publishOnly = AccessPolicy(publishToken: "pub")
        #expect(publishOnly.admit(.player, presented: nil) == .allow)
        #expect(publishOnly.admitAPI(presented: "pub") == .deny(status: 403, message: "the API needs the server started with --api-token"))
    }

    @Test func comparesWholeTokens() {
        #expect(AccessPolicy.same("secret", "secret"))
        #expect(!AccessPolicy.same("secre", "secret") && !AccessPolicy.same("secrets", "secret") && !AccessPolicy.same("", "secret"))
        #expect(!AccessPolicy.same("Secret", "secret"))
    }

    @Test func findsTheTokenInTheHeaderOrTheStreamURLButNotTheRequestURL() {
        let bearer = HTTPRequest(method: "POST", target: "/", path: "/rtc/v1/whip/", headers: ["Authorization": "Bearer  abc "])
        #expect(AccessPolicy.presentedToken(bearer) == "abc")
        // ?token= on the request's own URL ends up in access logs and histories: not accepted.
        let query = HTTPRequest(method: "POST", target: "/", path: "/rtc/v1/whip/", query: [("app", "live"), ("token", "q")])
        #expect(AccessPolicy.presentedToken(query) == nil)
        let plain = HTTPRequest(method: "POST", target: "/", path: "/rtc/v1/publish/")
        #expect(AccessPolicy.presentedToken(plain, streamQuery: "vhost=x&secret=s%20t") == "s t")
        #expect(AccessPolicy.presentedToken(plain, streamQuery: "vhost=x") == nil)
    }

    /// Requests carrying any configured token may use the reserve of connections.
    @Test func credentialedHeadsCarryAnyConfiguredToken() {
        let p = AccessPolicy(publishToken: "pub", apiToken: "api", signalToken: "sig")
        func head(_ headers: HTTPHeaders) -> HTTPRequestHead {
            HTTPRequest(method: "POST", target: "/", path: "/", headers: headers).head
        }
        #expect(p.credentialed(head(["Authorization": "Bearer pub"])) && p.credentialed(head(["Authorization": "Bearer api"])))
        #expect(p.credentialed(head(["Sec-WebSocket-Protocol": "swiftrtc.signal, swiftrtc.bearer.c2ln"])))   // "sig"
        #expect(!p.credentialed(head(["Authorization": "Bearer nope"])) && !p.credentialed(head([:])))
    }

    @Test func hostsAndSignalingFollowTheMode() {
        #expect(AccessPolicy().servedHosts(boundTo: "127.0.0.1") == ["localhost", "127.0.0.1"])
        #expect(AccessPolicy(allowedHosts: ["Relay.LAN"]).servedHosts(boundTo: "localhost") == ["localhost", "relay.lan"])
        #expect(AccessPolicy(apiToken: "a").servedHosts(boundTo: "0.0.0.0") == nil)
        #expect(AccessPolicy(apiToken: "a", allowedHosts: ["relay.example"]).servedHosts(boundTo: "0.0.0.0") == ["localhost", "0.0.0.0", "relay.example"])
        #expect(AccessPolicy().signalAccess == .open)
        #expect(AccessPolicy(signalToken: "s").signalAccess == .token("s") && !AccessPolicy(signalToken: "s").isOpen)
        #expect(AccessPolicy(publishToken: "p").signalAccess
                == .closed("signaling is off: the server was started with access control but no --signal-token"))
    }

    @Test func corsAllowlist() {
        #expect(AccessPolicy().allowedOrigin("https://evil.example") == nil)
        let p = AccessPolicy(corsOrigins: ["https://app.example"])
        #expect(p.allowedOrigin("https://app.example") == "https://app.example")
        #expect(p.allowedOrigin("https://evil.example") == nil)
        #expect(AccessPolicy(corsOrigins: ["*"]).allowedOrigin("https://any.example") == "*")
    }

    @Test func streamNamesAreASafeSet() throws {
        for ok in ["live", "cam-1", "a_b.c", String(repeating: "x", count: 64)] { try StreamName.validate(ok, what: "stream") }
        for bad in ["", "a/b", "a b", ".hidden", "x\r\nforged: line", "nul\u{0}", "é", String(repeating: "x", count: 65)] {
            #expect(throws: RelayError.self, "\(bad.debugDescription)") { try StreamName.validate(bad, what: "stream") }
        }
        let error = #expect(throws: RelayError.self) { try StreamName.validate("a\nb", what: "app") }
        #expect(error?.message == "invalid app name a\\u{a}b: use 1–64 of A–Z a–z 0–9 - _ . (not starting with .)")
        #expect(error?.httpStatus == 400)
    }

    @Test func logLinesEscapeControlCharacters() {
        #expect(escapedForLog("plain text ünïcode") == "plain text ünïcode")
        #expect(escapedForLog("a\r\nserve: forged\u{0}\u{1b}[31m") == "a\\u{d}\\u{a}serve: forged\\u{0}\\u{1b}[31m")
    }

    @Test func offerLimits() throws {
        let m = "m=audio 9 UDP/TLS/RTP/SAVPF 111\r\n"
        try OfferLimits.check("v=0\r\n" + String(repeating: m, count: 3))
        let many = #expect(throws: RelayError.self) { try OfferLimits.check("v=0\r\n" + String(repeating: m, count: 4)) }
        #expect(many?.message == "the offer has 4 media sections; at most 3 are accepted")
        let big = #expect(throws: RelayError.self) { try OfferLimits.check("v=0\r\n" + String(repeating: "a=x\r\n", count: 20_000)) }
        #expect(big?.message == "the offer is 100005 bytes; at most 65536 are accepted")
    }
}
