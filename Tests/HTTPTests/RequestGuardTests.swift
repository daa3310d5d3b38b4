import Testing
@testable import HTTP

/// Host names and page origins a server answers (against DNS rebinding and cross-site POSTs).
@Suite struct RequestGuardTests {
    let loopbackOnly = RequestGuard(allowedHosts: ["localhost", "relay.lan"], allowedOrigins: [])

    @Test(arguments: ["localhost", "localhost:1985", "LOCALHOST.", "127.0.0.1", "127.5.6.7:80", "[::1]:1985", "[::1]",
                      "10.0.0.5:1985", "relay.lan:8443", " localhost "])
    func answersIPAddressesAndItsNames(host: String) {
        #expect(loopbackOnly.refusal(method: "GET", headers: ["Host": host]) == nil)
    }

    @Test(arguments: ["rebind.evil.example", "rebind.evil.example:1985", "localhost.evil.example", "127.0.0.1.nip.io",
                      "0x7f.1", "", ":1985", "[::1", "[evil]:80"])
    func refusesOtherNamesWith421(host: String) {
        let refusal = loopbackOnly.refusal(method: "GET", headers: ["Host": host])
        #expect(refusal?.status == 421)
        #expect(refusal.map { String(decoding: $0.body, as: UTF8.self) }?.contains("is not a name this server answers to") == true)
    }

    @Test func anyHostWithoutAnAllowlistAndNoHostIsNoBrowser() {
        #expect(RequestGuard(allowedHosts: nil, allowedOrigins: []).refusal(method: "POST", headers: ["Host": "rebind.evil.example"]) == nil)
        #expect(loopbackOnly.refusal(method: "GET", headers: [:]) == nil)
        let refusal = loopbackOnly.refusal(method: "DELETE", headers: ["Host": "rebind.evil.example:1985"])
        #expect(refusal == .text(421, "Host \"rebind.evil.example:1985\" is not a name this server answers to: "
                                 + "IP addresses, localhost and the names given with --allowed-host are\n"))
    }

    @Test func foreignOriginsMayNotChangeStateOrUpgrade() {
        let host: HTTPHeaders = ["Host": "127.0.0.1:1985", "Origin": "https://evil.example"]
        for method in ["POST", "PATCH", "DELETE", "PUT"] {
            #expect(loopbackOnly.refusal(method: method, headers: host) == .text(403, "Origin \"https://evil.example\" may not make "
                    + "this request: only the server's own pages and the origins it allows (--cors-origin) may\n"), "\(method)")
        }
        // Reading is CORS's business (no Allow-Origin, the browser keeps the answer from the page).
        #expect(loopbackOnly.refusal(method: "GET", headers: host) == nil)
        #expect(loopbackOnly.refusal(method: "OPTIONS", headers: host) == nil)
        var upgrade = host
        upgrade.add("Upgrade", "websocket")
        #expect(loopbackOnly.refusal(method: "GET", headers: upgrade)?.status == 403)
        #expect(loopbackOnly.refusal(method: "POST", headers: ["Host": "127.0.0.1:1985", "Origin": "null"])?.status == 403)
    }

    @Test func sameOriginListedOriginsAndNoOriginPass() {
        #expect(loopbackOnly.refusal(method: "POST", headers: ["Host": "127.0.0.1:1985", "Origin": "http://127.0.0.1:1985"]) == nil)
        #expect(loopbackOnly.refusal(method: "POST", headers: ["Host": "LocalHost:1985", "Origin": "https://localhost:1985"]) == nil)
        #expect(loopbackOnly.refusal(method: "POST", headers: ["Host": "127.0.0.1:1985"]) == nil)
        // Another port is another origin.
        #expect(loopbackOnly.refusal(method: "POST", headers: ["Host": "127.0.0.1:1985", "Origin": "http://127.0.0.1:8080"])?.status == 403)
        let listed = RequestGuard(allowedHosts: nil, allowedOrigins: ["https://app.example"])
        #expect(listed.refusal(method: "POST", headers: ["Host": "relay", "Origin": "https://app.example"]) == nil)
        #expect(listed.refusal(method: "POST", headers: ["Host": "relay", "Origin": "https://app.example.evil"])?.status == 403)
        #expect(RequestGuard(allowedOrigins: ["*"]).refusal(method: "DELETE", headers: ["Origin": "https://any.example"]) == nil)
    }
}
