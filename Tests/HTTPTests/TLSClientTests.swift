import Glibc
import Testing
@testable import HTTP

@Suite struct TLSClientTests {
    @Test func verifiesCertificatesByDefault() async throws {
        try await withTLSServer { server in
            let error = await #expect(throws: HTTPError.self) {
                try await HTTPClient().send(method: "GET", url: "https://127.0.0.1:\(server.port)/")
            }
            #expect(error?.kind == .tlsFailed)
            #expect(error?.message == "TLS handshake with 127.0.0.1:\(server.port) failed: certificate verify failed (self-signed certificate)")
        }
    }

    @Test func insecureAcceptsASelfSignedCertificate() async throws {
        try await withTLSServer { server in
            let client = HTTPClient(insecure: true)
            let get = try await client.send(method: "GET", url: "https://127.0.0.1:\(server.port)/hello?x=1")
            #expect(get.status == 200)
            #expect(get.text == "GET /hello?x=1 ")
            #expect(get.finalURL == "https://127.0.0.1:\(server.port)/hello?x=1")
            let post = try await client.send(method: "POST", url: "https://localhost:\(server.port)/whip",
                                             headers: ["Content-Type": "application/sdp"], body: Array("v=0 offer".utf8))
            #expect(post.status == 200)
            #expect(post.text == "POST /whip v=0 offer")
        }
    }

    /// Up to https is followed; down to http is refused (the SDP and the token would go in clear).
    @Test func followsRedirectsUpToHTTPSButNeverDown() async throws {
        try await withTLSServer { tls in
            try await withServer(handler: { request in
                request.path == "/to-https" ? .redirect(307, to: "https://127.0.0.1:\(tls.port)/secure") : await echoHandler(request)
            }) { plain in
                let client = HTTPClient(insecure: true)
                let up = try await client.send(method: "POST", url: "http://127.0.0.1:\(plain.port)/to-https", body: Array("b".utf8))
                #expect(up.status == 200 && up.text == "POST /secure b")
                #expect(up.finalURL == "https://127.0.0.1:\(tls.port)/secure")
                let from = "https://127.0.0.1:\(tls.port)/redirect?to=http://127.0.0.1:\(plain.port)/plain"
                await #expect(throws: HTTPError(.malformedResponse, "refusing the redirect from \(from) to "
                                                + "http://127.0.0.1:\(plain.port)/plain: it leaves https")) {
                    try await client.send(method: "GET", url: from, headers: ["Authorization": "Bearer secret"])
                }
            }
        }
    }

    @Test func reportsAServerThatDoesNotSpeakTLS() async throws {
        // A plain HTTP server that answers before reading: its reply is not a TLS record.
        let listener = try Sockets.listen(host: "127.0.0.1", port: 0, backlog: 4)
        defer { close(listener.fd) }
        let thread = try JoinableThread.spawn { [fd = listener.fd] in
            guard case .ready = Sockets.wait(fd, events: Int32(POLLIN), wake: nil, deadline: Deadline(after: .seconds(20))) else { return }
            let client = accept(fd, nil, nil)
            guard client >= 0 else { return }
            // Read the ClientHello first: closing with unread data would reset the connection.
            var hello = [UInt8](repeating: 0, count: 4096)
            _ = Sockets.read(client, into: &hello, wake: nil, deadline: Deadline(after: .seconds(20)))
            _ = Sockets.writeAll(client, Array("HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n".utf8), wake: nil, deadline: nil)
            close(client)
        }
        defer { thread.join() }
        let error = await #expect(throws: HTTPError.self) {
            try await HTTPClient(insecure: true).send(method: "GET", url: "https://127.0.0.1:\(listener.port)/")
        }
        #expect(error?.kind == .tlsFailed)
        #expect(error?.message.hasPrefix("TLS handshake with 127.0.0.1:\(listener.port) failed: ") == true)
    }

    @Test func handshakeHonoursTheTimeout() async throws {
        // Listening but never accepting: TCP connects, the ClientHello is never answered.
        let listener = try Sockets.listen(host: "127.0.0.1", port: 0, backlog: 4)
        defer { close(listener.fd) }
        await #expect(throws: HTTPError(.timedOut, "timed out after 200 ms waiting for 127.0.0.1:\(listener.port)")) {
            try await HTTPClient(timeout: .milliseconds(200)).send(method: "GET", url: "https://127.0.0.1:\(listener.port)/")
        }
    }

    @Test func parsesHTTPSURLs() throws {
        let secure = try HTTPURL.parse("https://Example.com/a")
        #expect(secure.isTLS && secure.port == 443 && secure.authority == "example.com" && secure.string == "https://example.com/a")
        let explicit = try HTTPURL.parse("https://h:8443")
        #expect(explicit.port == 8443 && explicit.authority == "h:8443" && explicit.string == "https://h:8443/")
        let plainOn443 = try HTTPURL.parse("http://h:443/")
        #expect(!plainOn443.isTLS && plainOn443.authority == "h:443")
    }
}
