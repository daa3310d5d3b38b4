import Testing
@testable import HTTP

@Suite struct URLTests {
    // RFC 3986 §5.4.1 normal examples and §5.4.2 abnormal ones, with base http://a/b/c/d;p?q.
    @Test(arguments: [
        ("g", "http://a/b/c/g"), ("./g", "http://a/b/c/g"), ("g/", "http://a/b/c/g/"),
        ("/g", "http://a/g"), ("//g", "http://g"), ("?y", "http://a/b/c/d;p?y"),
        ("g?y", "http://a/b/c/g?y"), ("#s", "http://a/b/c/d;p?q#s"), ("", "http://a/b/c/d;p?q"),
        (".", "http://a/b/c/"), ("./", "http://a/b/c/"), ("..", "http://a/b/"), ("../g", "http://a/b/g"),
        ("../..", "http://a/"), ("../../g", "http://a/g"), ("../../../g", "http://a/g"),
        ("/./g", "http://a/g"), ("/../g", "http://a/g"), ("g.", "http://a/b/c/g."), ("..g", "http://a/b/c/..g"),
        ("./g/.", "http://a/b/c/g/"), ("g/../h", "http://a/b/c/h"), ("g;x=1/../y", "http://a/b/c/y"),
        ("g:h", "g:h"), ("http://x:1/y", "http://x:1/y"),
    ])
    func resolvesReferencesPerRFC3986(reference: String, expected: String) {
        #expect(HTTPClient.resolve(reference, against: "http://a/b/c/d;p?q") == expected)
    }

    @Test func resolvesSRSStyleRelativeLocation() {
        #expect(HTTPClient.resolve("/rtc/v1/whip/?action=delete&token=abc", against: "http://127.0.0.1:1985/rtc/v1/whip/?app=live&stream=s")
                == "http://127.0.0.1:1985/rtc/v1/whip/?action=delete&token=abc")
        #expect(HTTPClient.resolve("x", against: "not a url") == nil)
    }

    @Test func parsesHTTPURLs() throws {
        let plain = try HTTPURL.parse("http://Example.com/a?b#frag")
        #expect(plain.host == "example.com" && plain.port == 80 && plain.target == "/a?b" && plain.authority == "example.com")
        let v6 = try HTTPURL.parse("http://[::1]:1985")
        #expect(v6.host == "::1" && v6.port == 1985 && v6.target == "/" && v6.authority == "[::1]:1985" && v6.display == "[::1]:1985")
        let query = try HTTPURL.parse("http://h:8?x=1")
        #expect(query.target == "/?x=1")
        #expect(throws: HTTPError(.invalidURL, "not an absolute http:// or https:// URL: \"h/x\"")) { try HTTPURL.parse("h/x") }
        #expect(throws: HTTPError(.invalidURL, "bad port \"99999\" in http://h:99999/")) { try HTTPURL.parse("http://h:99999/") }
        #expect(throws: HTTPError(.invalidURL, "URL contains a space or control character: \"http://h/a b\"")) { try HTTPURL.parse("http://h/a b") }
    }

    @Test func parsesResponseHeads() throws {
        let head = try parseHTTPResponseHead(Array("HTTP/1.1 201 Created\r\nLocation: /x\r\n\r\n".utf8))
        #expect(head.status == 201 && head.reason == "Created" && head.headers["location"] == "/x")
        let bare = try parseHTTPResponseHead(Array("HTTP/1.0 204\r\n\r\n".utf8))
        #expect(bare.status == 204 && bare.reason == "")
        #expect(throws: HTTPError(.malformedResponse, "malformed response status line \"ICY 200 OK\"")) {
            try parseHTTPResponseHead(Array("ICY 200 OK\r\n\r\n".utf8))
        }
    }

    @Test func describesDurations() {
        #expect(Sockets.describe(.milliseconds(200)) == "200 ms")
        #expect(Sockets.describe(.seconds(10)) == "10 s")
        #expect(Sockets.describe(.milliseconds(1500)) == "1.5 s")
    }
}
