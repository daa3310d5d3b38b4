import Glibc
import Locks
import Testing
import TestSupport
@testable import HTTP

/// An echo handler: `METHOD path query body from remote`, with the request's headers reflected
/// as X-Echo-*. `/status/N` answers N.
@Sendable func echoHandler(_ request: HTTPRequest) async -> HTTPResponse {
    if request.path.hasPrefix("/status/"), let status = Int(request.path.dropFirst(8)) {
        return .text(status, "status \(status)")
    }
    let query = request.query.map { "\($0.0)=\($0.1)" }.joined(separator: "&")
    var response = HTTPResponse.text(200, "\(request.method) \(request.path) \(query) \(request.bodyText)")
    response.headers.add("X-Remote", request.remoteAddress)
    if let type = request.headers["Content-Type"] { response.headers.add("X-Echo-Content-Type", type) }
    return response
}

func withServer(limits: HTTPLimits = .init(), handler: @escaping HTTPServer.Handler = echoHandler,
                _ body: (HTTPServer) async throws -> Void) async throws {
    let server = try HTTPServer(host: "127.0.0.1", port: 0, limits: limits, handler: handler)
    server.start()
    defer { server.stop() }
    try await body(server)
}

@Suite struct ServerTests {
    let client = HTTPClient(timeout: .seconds(10))

    @Test func roundTripsGetPostDelete() async throws {
        try await withServer { server in
            let base = "http://127.0.0.1:\(server.port)"
            let get = try await client.send(method: "GET", url: "\(base)/hello%20there?a=1&b=x+y")
            #expect(get.status == 200 && get.reason == "OK")
            #expect(get.text == "GET /hello there a=1&b=x y ")
            #expect(get.headers["Content-Type"] == "text/plain; charset=utf-8")
            #expect(get.headers["Access-Control-Allow-Origin"] == "*")
            #expect(get.headers["X-Remote"]?.hasPrefix("127.0.0.1:") == true)

            let post = try await client.send(method: "POST", url: "\(base)/rtc/v1/publish/",
                                             headers: ["Content-Type": "application/json"], body: Array(#"{"sdp":"v=0"}"#.utf8))
            #expect(post.status == 200)
            #expect(post.text == #"POST /rtc/v1/publish/  {"sdp":"v=0"}"#)
            #expect(post.headers["X-Echo-Content-Type"] == "application/json")

            let delete = try await client.send(method: "DELETE", url: "\(base)/session/1")
            #expect(delete.text == "DELETE /session/1  ")
            #expect(delete.finalURL == "\(base)/session/1")

            let created = try await client.send(method: "GET", url: "\(base)/status/201")
            #expect(created.status == 201 && created.reason == "Created")
        }
    }

    @Test func servesTwoRequestsOnOneKeepAliveConnection() async throws {
        try await withServer { server in
            let connection = try RawConnection(port: server.port)
            try connection.send("GET /one HTTP/1.1\r\nHost: x\r\n\r\n")
            let first = try await connection.readResponse()
            try connection.send("POST /two HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc")
            let second = try await connection.readResponse()
            #expect(first.head.status == 200 && first.body == "GET /one  ")
            #expect(second.head.status == 200 && second.body == "POST /two  abc")
            // Same client port: the same TCP connection carried both.
            #expect(first.head.headers["X-Remote"] == second.head.headers["X-Remote"])
            #expect(first.head.headers["Connection"] == nil)

            try connection.send("GET /three HTTP/1.1\r\nConnection: close\r\n\r\n")
            let rest = statusAndBody(try await connection.readToEnd())
            #expect(rest.statusLine == "HTTP/1.1 200 OK")
            #expect(rest.body == "GET /three  ")
        }
    }

    @Test func answersCORSPreflightWithoutCallingTheHandler() async throws {
        let calls = Locked(0)
        try await withServer(handler: { request in
            calls.withLock { $0 += 1 }
            return await echoHandler(request)
        }) { server in
            let preflight = try await client.send(method: "OPTIONS", url: "http://127.0.0.1:\(server.port)/rtc/v1/whip/",
                                                  headers: ["Origin": "http://page", "Access-Control-Request-Method": "POST",
                                                            "Access-Control-Request-Headers": "content-type, x-custom"])
            #expect(preflight.status == 204)
            #expect(preflight.body.isEmpty)
            #expect(preflight.headers["Access-Control-Allow-Origin"] == "*")
            #expect(preflight.headers["Access-Control-Allow-Methods"] == "GET, POST, DELETE, PATCH, OPTIONS")
            #expect(preflight.headers["Access-Control-Allow-Headers"] == "content-type, authorization, if-match, x-custom")
            #expect(preflight.headers["Access-Control-Expose-Headers"] == "Location, Link, Content-Type, ETag, Accept-Patch")
            #expect(calls.withLock { $0 } == 0)

            server.cors = false
            let plain = try await client.send(method: "OPTIONS", url: "http://127.0.0.1:\(server.port)/x")
            #expect(plain.status == 200 && plain.headers["Access-Control-Allow-Origin"] == nil)
            #expect(calls.withLock { $0 } == 1)
        }
    }

    @Test(arguments: [
        ("GARBAGE\r\n\r\n", "HTTP/1.1 400 Bad Request", "malformed request line: expected METHOD SP target SP HTTP-version\n"),
        ("GET / HTTP/1.1\r\nHost: x\r\nbroken\r\n\r\n", "HTTP/1.1 400 Bad Request", "header line without colon at line 3\n"),
        ("POST / HTTP/1.1\r\nContent-Length: ten\r\n\r\n", "HTTP/1.1 400 Bad Request", "Content-Length is not a number: \"ten\"\n"),
        ("POST / HTTP/1.1\r\nContent-Length: 2000\r\n\r\n", "HTTP/1.1 413 Content Too Large", "2000-byte request body exceeds the limit of 1000 bytes\n"),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n800\r\n", "HTTP/1.1 413 Content Too Large", "chunked body exceeds 1000 bytes\n"),
        ("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nxyz\r\n", "HTTP/1.1 400 Bad Request", "malformed chunk size line \"xyz\" for chunk 1\n"),
        ("GET / HTTP/1.1\r\nCookie: \(String(repeating: "c", count: 600))\r\n\r\n", "HTTP/1.1 431 Request Header Fields Too Large", "request head exceeds 512 bytes\n"),
        ("GET / HTTP/3.0\r\n\r\n", "HTTP/1.1 505 HTTP Version Not Supported", "HTTP version 3.0 not supported\n"),
    ])
    func rejectsBadRequestsWithStatusAndReason(raw: String, statusLine: String, body: String) async throws {
        let calls = Locked(0)
        try await withServer(limits: HTTPLimits(maxHeaderBytes: 512, maxBodyBytes: 1000), handler: { request in
            calls.withLock { $0 += 1 }
            return await echoHandler(request)
        }) { server in
            let connection = try RawConnection(port: server.port)
            try connection.send(raw)
            let reply = statusAndBody(try await connection.readToEnd())
            #expect(reply.statusLine == statusLine)
            #expect(reply.body == body)
            #expect(calls.withLock { $0 } == 0)
            // Other clients are unaffected.
            let after = try await client.send(method: "GET", url: "http://127.0.0.1:\(server.port)/ok")
            #expect(after.text == "GET /ok  ")
        }
    }

    @Test func decodesChunkedRequestBodies() async throws {
        try await withServer { server in
            let connection = try RawConnection(port: server.port)
            try connection.send("PUT /up HTTP/1.1\r\nTransfer-Encoding: chunked\r\nConnection: close\r\n\r\n3\r\nabc\r\n2\r\nde\r\n0\r\n\r\n")
            let reply = statusAndBody(try await connection.readToEnd())
            #expect(reply.statusLine == "HTTP/1.1 200 OK")
            #expect(reply.body == "PUT /up  abcde")
        }
    }

    @Test func headRequestGetsLengthWithoutBody() async throws {
        try await withServer { server in
            let connection = try RawConnection(port: server.port)
            try connection.send("HEAD /h HTTP/1.1\r\nConnection: close\r\n\r\n")
            let text = String(decoding: try await connection.readToEnd(), as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 200 OK\r\n"))
            #expect(text.contains("Content-Length: 9\r\n"))
            #expect(text.hasSuffix("\r\n\r\n"))
        }
    }

    @Test func clientClosingMidRequestDoesNotStopTheServer() async throws {
        try await withServer { server in
            for partial in ["GET / HT", "POST /x HTTP/1.1\r\nContent-Length: 10\r\n\r\nabc", "GET / HTTP/1.1\r\nHost"] {
                let connection = try RawConnection(port: server.port)
                try connection.send(partial)
                connection.finishSending()
                #expect((try await connection.readToEnd()).isEmpty)
            }
            let response = try await client.send(method: "GET", url: "http://127.0.0.1:\(server.port)/still")
            #expect(response.text == "GET /still  ")
        }
    }

    @Test func slowClientTimesOutWith408() async throws {
        try await withServer(limits: HTTPLimits(headerTimeout: .milliseconds(200))) { server in
            let connection = try RawConnection(port: server.port)
            try connection.send("GET /slow HTTP/1.1\r\nHos")
            let reply = statusAndBody(try await connection.readToEnd())
            #expect(reply.statusLine == "HTTP/1.1 408 Request Timeout")
            #expect(reply.body == "request head not received within 200 ms\n")
            // An idle keep-alive connection is closed without a response.
            let idle = try RawConnection(port: server.port)
            #expect((try await idle.readToEnd()).isEmpty)
        }
    }

    @Test func fiftyConcurrentClientsAllGetAnswers() async throws {
        try await withServer { server in
            let port = server.port
            let bodies = try await withThrowingTaskGroup(of: String.self) { group in
                for index in 0..<50 {
                    group.addTask {
                        try await HTTPClient().send(method: "POST", url: "http://127.0.0.1:\(port)/n/\(index)", body: Array("\(index)".utf8)).text
                    }
                }
                var all: [String] = []
                for try await body in group { all.append(body) }
                return all
            }
            #expect(Set(bodies) == Set((0..<50).map { "POST /n/\($0)  \($0)" }))
        }
    }

    /// A connection that only waits on its client (idle here) gives way to a newcomer; one the
    /// server is busy with does not, and then a newcomer gets 503.
    @Test func idleConnectionsGiveWayAndBusyOnesDoNot() async throws {
        let gate = Gate()
        try await withServer(limits: HTTPLimits(maxConnections: 1), handler: gate.handler) { server in
            let idle = try RawConnection(port: server.port)
            try idle.send("GET /a HTTP/1.1\r\n\r\n")
            _ = try await idle.readResponse()   // now idle, kept alive
            let newcomer = try RawConnection(port: server.port)
            try newcomer.send("GET /hold HTTP/1.1\r\n\r\n")
            #expect(try await idle.readToEnd().isEmpty, "closed to make room")
            await gate.arrivals(1)
            let third = try RawConnection(port: server.port)
            let reply = statusAndBody(try await third.readToEnd())
            #expect(reply.statusLine == "HTTP/1.1 503 Service Unavailable" && reply.body == "too many connections\n")
            await gate.open()
            #expect(try await newcomer.readResponse().head.status == 200)
        }
    }

    /// One address cannot take every connection: past its share it gets 503 while its own are
    /// busy, and once one of them idles, a new one from it takes that one's place.
    @Test func limitsConnectionsPerAddress() async throws {
        let gate = Gate()
        try await withServer(limits: HTTPLimits(maxConnections: 10, maxConnectionsPerAddress: 2), handler: gate.handler) { server in
            var held: [RawConnection] = []
            for _ in 0..<2 {
                let c = try RawConnection(port: server.port)
                try c.send("GET /hold HTTP/1.1\r\n\r\n")
                held.append(c)
            }
            await gate.arrivals(2)
            let third = try RawConnection(port: server.port)
            let reply = statusAndBody(try await third.readToEnd())
            #expect(reply.statusLine == "HTTP/1.1 503 Service Unavailable" && reply.body == "too many connections from 127.0.0.1\n")
            await gate.open()
            for c in held { _ = try await c.readResponse() }
            // held[1] busy again, held[0] idle: a new connection from the address takes its place.
            await gate.close()
            try held[1].send("GET /hold HTTP/1.1\r\n\r\n")
            await gate.arrivals(3)
            let again = try RawConnection(port: server.port)
            try again.send("GET /b HTTP/1.1\r\nConnection: close\r\n\r\n")
            #expect(statusAndBody(try await again.readToEnd()).statusLine == "HTTP/1.1 200 OK")
            #expect(try await held[0].readToEnd().isEmpty, "the address's idle connection gave way")
            await gate.open()
            #expect(try await held[1].readResponse().head.status == 200)
        }
    }

    /// With an allowlist, a request naming another host is refused before any handler runs
    /// (421, closed); a foreign Origin may not POST (403); names on the list and IPs are served.
    @Test func refusesForeignHostsAndOriginsBeforeTheHandler() async throws {
        try await withServer { server in
            server.allowedHosts = ["localhost"]
            server.corsOrigins = []
            let rebound = try RawConnection(port: server.port)
            try rebound.send("GET /api HTTP/1.1\r\nHost: rebind.evil.example:\(server.port)\r\n\r\n")
            let reply = statusAndBody(try await rebound.readToEnd())
            #expect(reply.statusLine == "HTTP/1.1 421 Misdirected Request")
            #expect(reply.body.hasPrefix("Host \"rebind.evil.example:\(server.port)\" is not a name this server answers to"))
            let crossSite = try await client.send(method: "POST", url: "http://127.0.0.1:\(server.port)/x",
                                                  headers: ["Origin": "https://evil.example", "Content-Type": "text/plain"])
            #expect(crossSite.status == 403 && crossSite.text.hasPrefix("Origin \"https://evil.example\" may not make this request"))
            let named = try await client.send(method: "POST", url: "http://localhost:\(server.port)/x",
                                              headers: ["Origin": "http://localhost:\(server.port)"])
            #expect(named.status == 200 && named.text == "POST /x  ")
        }
    }

    @Test func ipAddressOfARemote() {
        #expect(HTTPServer.ipAddress(of: "10.0.0.1:5000") == "10.0.0.1")
        #expect(HTTPServer.ipAddress(of: "[::1]:443") == "::1")
    }

    @Test func awaitsAsyncHandlers() async throws {
        try await withServer(handler: { request in
            // Suspends on the concurrency pool while the connection thread waits.
            let answer = await Task.detached { "answer to \(request.bodyText)" }.value
            return .sdp(201, answer, location: "/whip/session/1")
        }) { server in
            let response = try await client.send(method: "POST", url: "http://127.0.0.1:\(server.port)/whip",
                                                 headers: ["Content-Type": "application/sdp"], body: Array("offer".utf8))
            #expect(response.status == 201)
            #expect(response.text == "answer to offer")
            #expect(response.headers["Location"] == "/whip/session/1")
            #expect(response.headers["Content-Type"] == "application/sdp")
        }
    }

    @Test func stopClosesEverythingAndJoinsThreads() async throws {
        let server = try HTTPServer(host: "127.0.0.1", port: 0, handler: echoHandler)
        server.start()
        let port = server.port
        let idle = try RawConnection(port: port)  // an open keep-alive connection
        try idle.send("GET / HTTP/1.1\r\n\r\n")
        _ = try await idle.readResponse()
        server.stop()
        #expect(server.threadCount == 0)
        #expect((try await idle.readToEnd()).isEmpty)  // closed by stop()
        await #expect(throws: HTTPError(.connectionRefused, "connection refused to 127.0.0.1:\(port)")) {
            try await HTTPClient().send(method: "GET", url: "http://127.0.0.1:\(port)/")
        }
        server.stop()  // idempotent
    }

    @Test func stopCancelsHandlersStillRunning() async throws {
        let (events, continuation) = AsyncStream.makeStream(of: String.self)
        let server = try HTTPServer(host: "127.0.0.1", port: 0) { _ in
            continuation.yield("started")
            await untilCancelled()
            continuation.yield(Task.isCancelled ? "cancelled" : "finished")
            return .text(200, "late")
        }
        server.start()
        let connection = try RawConnection(port: server.port)
        try connection.send("GET /hang HTTP/1.1\r\n\r\n")
        var iterator = events.makeAsyncIterator()
        #expect(await iterator.next() == "started")
        server.stop()
        #expect(server.threadCount == 0)
        #expect(try await connection.readToEnd().isEmpty)  // closed without the late response
        #expect(await iterator.next() == "cancelled")
    }
}
