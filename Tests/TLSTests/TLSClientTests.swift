import COpenSSL
import Testing
@testable import TLS

/// The server end, in process: OpenSSL over memory BIOs with TestPKI's certificate.
final class TestTLSServer {
    let context: OpaquePointer
    let ssl: OpaquePointer
    let input: OpaquePointer
    let output: OpaquePointer

    init(certificate: String, key: String) throws {
        context = try #require(SSL_CTX_new(TLS_server_method()))
        try #require(SSL_CTX_use_certificate_file(context, certificate, SSL_FILETYPE_PEM) == 1)
        try #require(SSL_CTX_use_PrivateKey_file(context, key, SSL_FILETYPE_PEM) == 1)
        ssl = try #require(SSL_new(context))
        input = try #require(BIO_new(BIO_s_mem()))
        output = try #require(BIO_new(BIO_s_mem()))
        _ = swiftrtc_BIO_set_mem_eof_return(input, -1)
        SSL_set_bio(ssl, input, output)
        SSL_set_accept_state(ssl)
    }

    deinit {
        SSL_free(ssl)
        SSL_CTX_free(context)
    }

    /// Takes the client's bytes; returns the plaintext they carried (or nil at close_notify).
    func receive(_ bytes: [UInt8]) -> [UInt8]? {
        _ = bytes.withUnsafeBytes { BIO_write(input, $0.baseAddress, Int32($0.count)) }
        _ = SSL_do_handshake(ssl)
        var plaintext: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let n = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32($0.count)) }
            if n > 0 { plaintext += buffer[0..<Int(n)]; continue }
            return SSL_get_error(ssl, n) == SSL_ERROR_ZERO_RETURN ? nil : plaintext
        }
    }

    func send(_ plaintext: [UInt8]) {
        _ = plaintext.withUnsafeBytes { SSL_write(ssl, $0.baseAddress, Int32($0.count)) }
    }

    func takeOutput() -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Int(BIO_ctrl_pending(output)))
        let n = bytes.withUnsafeMutableBytes { BIO_read(output, $0.baseAddress, Int32($0.count)) }
        return n > 0 ? Array(bytes[0..<Int(n)]) : []
    }

    /// The SNI the client sent.
    var serverName: String? { SSL_get_servername(ssl, TLSEXT_NAMETYPE_host_name).map { String(cString: $0) } }
}

@Suite struct TLSClientTests {
    let t0 = ContinuousClock.now

    /// Shuttles bytes both ways until neither side has any; returns what the server read.
    @discardableResult
    func exchange(_ client: TLSClient, _ server: TestTLSServer) throws -> [UInt8] {
        var read: [UInt8] = []
        for _ in 0..<10 {
            let toServer = client.takeOutput()
            if !toServer.isEmpty { read += server.receive(toServer) ?? [] }
            let toClient = server.takeOutput()
            if toServer.isEmpty, toClient.isEmpty { break }
            if !toClient.isEmpty { #expect(try client.receive(toClient).isEmpty) }
        }
        return read
    }

    @Test func verifiesAgainstTheCAFileSendsSNIAndCarriesDataBothWays() throws {
        let pki = try TestPKI.files()
        let server = try TestTLSServer(certificate: pki.certificate, key: pki.key)
        let client = try TLSClient(host: "turn.test", display: "turn.test", trust: TLSTrust(caFile: pki.ca), now: t0)
        #expect(client.state == .handshaking)
        #expect(client.pollTimeout() == t0 + .seconds(10))
        // Sent before the handshake is done: it waits, then goes first.
        try client.send([1, 2, 3])
        let early = try exchange(client, server)
        #expect(client.state == .connected)
        #expect(client.pollTimeout() == nil)
        #expect(server.serverName == "turn.test")
        #expect(early == [1, 2, 3])
        try client.send([4, 5])
        #expect(server.receive(client.takeOutput()) == [4, 5])
        server.send(Array(repeating: 7, count: 40_000))   // several records, read in one go
        #expect(try client.receive(server.takeOutput()) == Array(repeating: 7, count: 40_000))
        // close_notify both ways.
        client.close()
        #expect(server.receive(client.takeOutput()) == nil)
        #expect(client.state == .closed)
        #expect(throws: TLSError(.connection, "TLS with turn.test is closed")) { try client.send([1]) }
    }

    @Test func ipLiterals() {
        #expect(TLSSession.isIPLiteral("127.0.0.1") && TLSSession.isIPLiteral("::1") && !TLSSession.isIPLiteral("localhost"))
    }

    @Test func anIPLiteralIsCheckedAgainstTheIPAddressAndSendsNoSNI() throws {
        let pki = try TestPKI.files()
        let server = try TestTLSServer(certificate: pki.certificate, key: pki.key)
        let client = try TLSClient(host: "127.0.0.1", display: "127.0.0.1", trust: TLSTrust(caFile: pki.ca), now: t0)
        try exchange(client, server)
        #expect(client.state == .connected)
        #expect(server.serverName == nil)
    }

    /// What the driver shows when verification fails: OpenSSL's reason and X509's why.
    @Test(arguments: [
        ("turn.test", false, "certificate verify failed (unable to get local issuer certificate)"),
        ("other.test", true, "certificate verify failed (hostname mismatch)"),
        ("127.0.0.2", true, "certificate verify failed (IP address mismatch)"),
    ])
    func anUnverifiedCertificateFailsTheHandshakeClearly(host: String, trustCA: Bool, reason: String) throws {
        let pki = try TestPKI.files()
        let server = try TestTLSServer(certificate: pki.certificate, key: pki.key)
        let client = try TLSClient(host: host, display: host, trust: TLSTrust(caFile: trustCA ? pki.ca : nil), now: t0)
        _ = server.receive(client.takeOutput())
        let failure = TLSError(.handshake, "TLS handshake with \(host) failed: \(reason)")
        #expect(throws: failure) { try client.receive(server.takeOutput()) }
        #expect(client.state == .failed(failure))
        #expect(!client.takeOutput().isEmpty, "the alert for the server")
        #expect(throws: failure) { try client.send([1]) }
        #expect(client.pollTimeout() == nil)
    }

    @Test func theHandshakeTimesOutOnTheClock() throws {
        let client = try TLSClient(host: "turn.test", display: "turn.test:5349", handshakeTimeout: .seconds(5), now: t0)
        #expect(!client.takeOutput().isEmpty, "the ClientHello")
        #expect(client.pollTimeout() == t0 + .seconds(5))
        try client.handleTimeout(now: t0 + .milliseconds(4_999))
        #expect(client.state == .handshaking)
        let timeout = TLSError(.timeout, "TLS handshake with turn.test:5349 did not finish within 5.0 seconds")
        #expect(throws: timeout) { try client.handleTimeout(now: t0 + .seconds(5)) }
        #expect(client.pollTimeout() == nil)
    }

    @Test func aServerThatDoesNotSpeakTLSOrHangsUpFailsTheHandshake() throws {
        let garbage = try TLSClient(host: "turn.test", display: "turn.test", now: t0)
        _ = garbage.takeOutput()
        #expect(throws: TLSError.self) { try garbage.receive(Array("HTTP/1.1 400 Bad Request\r\n\r\n".utf8)) }
        guard case .failed(let error) = garbage.state else { Issue.record("not failed: \(garbage.state)"); return }
        #expect(error.kind == .handshake && error.message.hasPrefix("TLS handshake with turn.test failed: "), "\(error)")

        let hungUp = try TLSClient(host: "turn.test", display: "turn.test", now: t0)
        #expect(throws: TLSError(.handshake, "TLS handshake with turn.test failed: connection closed by the server")) {
            try hungUp.streamEnded()
        }
    }

    /// OpenSSL 3 reports a file it cannot open as a system error: its errno is what we show.
    @Test func aCAFileThatDoesNotLoadIsAConfigurationError() throws {
        #expect(throws: TLSError(.configuration, "cannot load the CA certificates in /nonexistent/ca.pem: No such file or directory")) {
            _ = try TLSClient(host: "turn.test", display: "turn.test", trust: TLSTrust(caFile: "/nonexistent/ca.pem"), now: t0)
        }
        let pki = try TestPKI.files()
        #expect {
            _ = try TLSClient(host: "turn.test", display: "turn.test", trust: TLSTrust(caFile: pki.key), now: t0)
        } throws: { error in
            // A key is no certificate: OpenSSL's reason for that.
            guard let error = error as? TLSError else { return false }
            return error.kind == .configuration && error.message.hasPrefix("cannot load the CA certificates in \(pki.key): ")
                && !error.message.contains("OpenSSL error")
        }
    }
}
