import Glibc
import Testing
@testable import HTTP

@Suite struct ClientTests {
    @Test func follows307And308KeepingMethodAndBody() async throws {
        try await withServer(handler: { request in
            switch request.path {
            case "/a": return .redirect(307, to: "b?hop=1")                         // relative
            case "/b": return .redirect(308, to: "/c/d")                            // absolute path
            default: return await echoHandler(request)
            }
        }) { server in
            let base = "http://127.0.0.1:\(server.port)"
            let response = try await HTTPClient().send(method: "POST", url: "\(base)/a", headers: ["Content-Type": "application/sdp"], body: Array("offer".utf8))
            #expect(response.status == 200)
            #expect(response.text == "POST /c/d  offer")
            #expect(response.headers["X-Echo-Content-Type"] == "application/sdp")
            #expect(response.finalURL == "\(base)/c/d")
        }
    }

    @Test func returnsOtherRedirectsAndStopsAfterMaxHops() async throws {
        try await withServer(handler: { request in
            request.path == "/found" ? .redirect(302, to: "/elsewhere") : .redirect(307, to: request.path)
        }) { server in
            let found = try await HTTPClient().send(method: "GET", url: "http://127.0.0.1:\(server.port)/found")
            #expect(found.status == 302 && found.headers["Location"] == "/elsewhere")
            await #expect(throws: HTTPError(.tooManyRedirects, "stopped after 5 redirects at http://127.0.0.1:\(server.port)/loop")) {
                try await HTTPClient().send(method: "GET", url: "http://127.0.0.1:\(server.port)/loop")
            }
        }
    }

    @Test func dropsAuthorizationWhenRedirectedToAnotherOrigin() async throws {
        try await withServer(handler: { request in
            .text(200, request.headers["Authorization"] ?? "none")
        }) { target in
            try await withServer(handler: { _ in .redirect(307, to: "http://127.0.0.1:\(target.port)/x") }) { origin in
                let response = try await HTTPClient().send(method: "GET", url: "http://127.0.0.1:\(origin.port)/",
                                                           headers: ["Authorization": "Bearer secret"])
                #expect(response.text == "none")
            }
        }
    }

    @Test func decodesChunkedResponsesAndSendsExactRequests() async throws {
        let server = try CannedServer(responses: [
            "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nContent-Type: application/json\r\n\r\n4\r\n{\"co\r\nA;name=v\r\nde\":0,\"x\":\r\n2\r\n1}\r\n0\r\nX-Trailer: t\r\n\r\n",
            "HTTP/1.0 200 OK\r\n\r\nuntil close",
        ])
        defer { server.finish() }
        let client = HTTPClient()
        let chunked = try await client.send(method: "POST", url: "http://127.0.0.1:\(server.port)/api?x=1", body: Array("{}".utf8))
        #expect(chunked.status == 200)
        #expect(chunked.text == #"{"code":0,"x":1}"#)
        #expect(chunked.headers["Content-Type"] == "application/json")
        let untilClose = try await client.send(method: "GET", url: "http://127.0.0.1:\(server.port)/")
        #expect(untilClose.text == "until close")
        server.finish()
        #expect(server.requests.withLock { $0 } == ["POST /api?x=1 {}", "GET / "])
    }

    @Test func reportsMalformedStatusLines() async throws {
        let server = try CannedServer(responses: ["SSH-2.0-OpenSSH\r\n\r\n"])
        defer { server.finish() }
        await #expect(throws: HTTPError(.malformedResponse, "malformed response status line \"SSH-2.0-OpenSSH\" from 127.0.0.1:\(server.port)")) {
            try await HTTPClient().send(method: "GET", url: "http://127.0.0.1:\(server.port)/")
        }
    }

    @Test func reportsRefusedConnections() async throws {
        let port = try closedPort()
        await #expect(throws: HTTPError(.connectionRefused, "connection refused to 127.0.0.1:\(port)")) {
            try await HTTPClient().send(method: "GET", url: "http://127.0.0.1:\(port)/rtc/v1/publish/")
        }
    }

    @Test func timesOutOnASilentServer() async throws {
        // Listening but never accepting: the kernel completes the handshake, nobody answers.
        let listener = try Sockets.listen(host: "127.0.0.1", port: 0, backlog: 4)
        defer { close(listener.fd) }
        await #expect(throws: HTTPError(.timedOut, "timed out after 200 ms waiting for 127.0.0.1:\(listener.port)")) {
            try await HTTPClient(timeout: .milliseconds(200)).send(method: "GET", url: "http://127.0.0.1:\(listener.port)/")
        }
    }

    @Test func cancellationAbortsARequest() async throws {
        let listener = try Sockets.listen(host: "127.0.0.1", port: 0, backlog: 4)
        defer { close(listener.fd) }
        let task = Task {
            try await HTTPClient(timeout: .seconds(60)).send(method: "GET", url: "http://127.0.0.1:\(listener.port)/")
        }
        task.cancel()
        let result = await task.result
        #expect(throws: HTTPError(.cancelled, "request to 127.0.0.1:\(listener.port) cancelled")) { try result.get() }
    }

    @Test func rejectsUnsupportedURLsAndMethods() async {
        await #expect(throws: HTTPError(.invalidURL, "unsupported URL scheme \"ftp\" in ftp://x/")) {
            try await HTTPClient().send(method: "GET", url: "ftp://x/")
        }
        await #expect(throws: HTTPError(.badRequest, "invalid HTTP method \"GET /\"")) {
            try await HTTPClient().send(method: "GET /", url: "http://x/")
        }
    }
}
