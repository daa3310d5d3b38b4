import SeededRandom
import Testing
@testable import HTTP

@Suite struct RequestParsingTests {
    @Test func parsesRequestLineTargetAndHeaders() throws {
        let head = try parseHTTPRequestHead(Array(
            "POST /rtc/v1/whip/a%20b?app=live&stream=cam+1&x=%2F&flag HTTP/1.1\r\nHost: h\r\ncontent-TYPE:  application/sdp \r\nX-A: 1\r\nx-a: 2\r\n\r\n".utf8))
        #expect(head.method == "POST")
        #expect(head.target == "/rtc/v1/whip/a%20b?app=live&stream=cam+1&x=%2F&flag")
        #expect(head.path == "/rtc/v1/whip/a b")
        #expect(head.query.map { $0.0 } == ["app", "stream", "x", "flag"])
        #expect(head.query.map { $0.1 } == ["live", "cam 1", "/", ""])
        #expect(head.version == "HTTP/1.1")
        #expect(head.headers["Content-Type"] == "application/sdp")
        #expect(head.headers.values("X-A") == ["1", "2"])
        let request = HTTPRequest(head: head, body: [], remoteAddress: "")
        #expect(request.queryValue("stream") == "cam 1")
        #expect(request.queryValue("missing") == nil)
    }

    @Test func acceptsBareLineFeedsAbsoluteFormAndAsterisk() throws {
        let lf = try parseHTTPRequestHead(Array("GET /a HTTP/1.0\nHost: x\n\n".utf8))
        #expect(lf.path == "/a" && lf.headers["host"] == "x" && lf.version == "HTTP/1.0")
        let absolute = try parseHTTPRequestHead(Array("GET http://example.com:8080/p/q?z=1 HTTP/1.1\r\n\r\n".utf8))
        #expect(absolute.path == "/p/q" && absolute.query.first?.1 == "1")
        let star = try parseHTTPRequestHead(Array("OPTIONS * HTTP/1.1\r\n\r\n".utf8))
        #expect(star.path == "*")
    }

    @Test(arguments: [
        ("GET /\r\n\r\n", "malformed request line: expected METHOD SP target SP HTTP-version"),
        ("GET  / HTTP/1.1\r\n\r\n", "malformed request line: expected METHOD SP target SP HTTP-version"),
        ("G(T / HTTP/1.1\r\n\r\n", "malformed request line: method is not a token"),
        ("GET / HTTX/1.1\r\n\r\n", "malformed request line: bad HTTP version \"HTTX/1.1\""),
        ("GET abc HTTP/1.1\r\n\r\n", "malformed request line: target must start with \"/\""),
        ("GET /a\u{7F} HTTP/1.1\r\n\r\n", "malformed request line: invalid character in target at offset 6"),
        ("GET / HTTP/1.1\r\nHost: x\r\nNoColonHere\r\n\r\n", "header line without colon at line 3"),
        ("GET / HTTP/1.1\r\nHost : x\r\n\r\n", "whitespace before colon at line 2"),
        ("GET / HTTP/1.1\r\nA: 1\r\n folded\r\n\r\n", "obsolete line folding at line 3"),
        ("GET / HTTP/1.1\r\n: x\r\n\r\n", "empty header name at line 2"),
        ("GET / HTTP/1.1\r\nA\"B: x\r\n\r\n", "invalid character in header name at line 2, offset 1"),
        ("GET / HTTP/1.1\r\nA: x\u{1}y\r\n\r\n", "invalid character in header value at line 2, offset 4"),
        ("GET / HTTP/1.1\r\nA: x\ry\r\n\r\n", "bare CR at line 2, offset 4"),
        ("GET /%zz HTTP/1.1\r\n\r\n", "invalid percent-encoding in path"),
        ("GET /?a=%4 HTTP/1.1\r\n\r\n", "invalid percent-encoding in query parameter \"a=%4\""),
    ])
    func rejectsMalformedHeadsWithReason(input: String, message: String) {
        #expect(throws: HTTPError(.badRequest, message)) { try parseHTTPRequestHead(Array(input.utf8)) }
    }

    @Test func rejectsOtherMajorVersionsWith505() {
        #expect(throws: HTTPError(.versionNotSupported, "HTTP version 2.0 not supported")) {
            try parseHTTPRequestHead(Array("GET / HTTP/2.0\r\n\r\n".utf8))
        }
        #expect(HTTPError(.versionNotSupported, "").responseStatus == 505)
    }

    @Test func headersAreOrderedAndCaseInsensitive() {
        var headers: HTTPHeaders = [("Link", "<a>"), ("Content-Type", "text/plain"), ("link", "<b>")]
        #expect(headers.values("LINK") == ["<a>", "<b>"])
        headers.set("LINK", "<c>")
        #expect(headers.map(\.name) == ["LINK", "Content-Type"])
        #expect(headers["link"] == "<c>")
        headers.add("X", "1")
        headers.remove("content-type")
        #expect(headers.map(\.value) == ["<c>", "1"])
        let dictionary: HTTPHeaders = ["A": "1"]
        #expect(dictionary == HTTPHeaders([("a", "1")]))
        var bytes: [UInt8] = []
        HTTPHeaders([("X", "a\r\nInjected: yes")]).serialize(into: &bytes)
        #expect(String(decoding: bytes, as: UTF8.self) == "X: a  Injected: yes\r\n")
    }
}

@Suite struct RequestDecoderTests {
    private func decodeAll(_ text: String, limits: HTTPLimits = .init()) throws(HTTPError) -> [HTTPRequest] {
        var decoder = HTTPRequestDecoder(limits: limits)
        decoder.append(Array(text.utf8))
        var requests: [HTTPRequest] = []
        while true {
            switch try decoder.next() {
            case .request(let request): requests.append(request)
            case .sendContinue: continue
            case .needMoreData: return requests
            }
        }
    }

    @Test func decodesPipelinedRequestsWithBodies() throws {
        let requests = try decodeAll("\r\nPOST /a HTTP/1.1\r\nContent-Length: 5\r\n\r\nhelloGET /b HTTP/1.1\r\n\r\nDELETE /c HTTP/1.1\r\nContent-Length: 0\r\n\r\n")
        #expect(requests.map(\.method) == ["POST", "GET", "DELETE"])
        #expect(requests.map(\.bodyText) == ["hello", "", ""])
    }

    @Test func decodesChunkedBodiesFedByteByByte() throws {
        let text = "POST /x HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n7\r\n, world\r\n0\r\nTrailer: t\r\n\r\nGET /next HTTP/1.1\r\n\r\n"
        var decoder = HTTPRequestDecoder()
        var requests: [HTTPRequest] = []
        for byte in text.utf8 {
            decoder.append([byte])
            while case .request(let request) = try decoder.next() { requests.append(request) }
        }
        #expect(requests.map(\.bodyText) == ["hello, world", ""])
        #expect(requests.map(\.path) == ["/x", "/next"])
    }

    @Test func answersExpectContinueOnceBeforeTheBody() throws {
        var decoder = HTTPRequestDecoder()
        decoder.append(Array("PUT /x HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n".utf8))
        guard case .sendContinue = try decoder.next() else { Issue.record("no 100-continue"); return }
        guard case .needMoreData = try decoder.next() else { Issue.record("expected to wait for the body"); return }
        decoder.append(Array("ok".utf8))
        guard case .request(let request) = try decoder.next() else { Issue.record("no request"); return }
        #expect(request.bodyText == "ok")
    }

    @Test(arguments: [
        ("POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n", HTTPError(.badRequest, "Content-Length is not a number: \"abc\"")),
        ("POST / HTTP/1.1\r\nContent-Length: 3\r\nContent-Length: 4\r\n\r\n", HTTPError(.badRequest, "conflicting Content-Length values")),
        ("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", HTTPError(.badRequest, "both Transfer-Encoding and Content-Length present")),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", HTTPError(.notImplemented, "Transfer-Encoding \"gzip\" not supported")),
        ("POST / HTTP/1.1\r\nContent-Length: 101\r\n\r\n", HTTPError(.bodyTooLarge, "101-byte request body exceeds the limit of 100 bytes")),
        ("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999999\r\n\r\n", HTTPError(.bodyTooLarge, "a request body exceeds the limit of 100 bytes")),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n65\r\n", HTTPError(.bodyTooLarge, "chunked body exceeds 100 bytes")),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", HTTPError(.badRequest, "malformed chunk size line \"zz\" for chunk 1")),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc", HTTPError(.badRequest, "chunk 1 data not followed by CRLF")),
        ("GET / HTTP/1.1\r\nX: \(String(repeating: "a", count: 200))\r\n\r\n", HTTPError(.headersTooLarge, "request head exceeds 128 bytes")),
        ("GET / HTTP/1.1\r\nX: \(String(repeating: "a", count: 200))", HTTPError(.headersTooLarge, "request head exceeds 128 bytes")),
    ])
    func framingErrors(input: String, error: HTTPError) {
        #expect(throws: error) { try decodeAll(input, limits: HTTPLimits(maxHeaderBytes: 128, maxBodyBytes: 100)) }
    }

    @Test func keepAliveFollowsVersionAndConnectionHeader() throws {
        let requests = try decodeAll("GET / HTTP/1.1\r\n\r\nGET / HTTP/1.1\r\nConnection: Keep-Alive, close\r\n\r\nGET / HTTP/1.0\r\n\r\nGET / HTTP/1.0\r\nConnection: keep-alive\r\n\r\n")
        #expect(requests.map(\.keepAlive) == [true, false, false, true])
    }

    @Test func fuzzEntriesSurviveMutatedInputs() {
        let seeds = [
            "POST /a?b=c HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
            "GET / HTTP/1.1\r\nContent-Length: 3\r\nExpect: 100-continue\r\n\r\nabc",
            "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
        ].map { Array($0.utf8) }
        var rng = SplitMix64(seed: 0x4854_5450)
        func random(_ bound: Int) -> Int { Int(rng.next() % UInt64(max(bound, 1))) }
        for round in 0..<3000 {
            var input = seeds[round % seeds.count]
            for _ in 0...random(6) {
                switch random(4) {
                case 0 where !input.isEmpty: input[random(input.count)] = UInt8(random(256))
                case 1: input.insert(UInt8(random(256)), at: random(input.count + 1))
                case 2 where !input.isEmpty: input.remove(at: random(input.count))
                default: input.insert(contentsOf: [0x0D, 0x0A, 0x3A, 0x30, 0x25][random(5)...], at: random(input.count + 1))
                }
            }
            fuzzHTTPRequest(input)
            fuzzHTTPResponse(input)
        }
    }
}
