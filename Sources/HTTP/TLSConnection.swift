// TLS for the client's https:// requests: OpenSSL 3 over the same non-blocking socket as plain
// HTTP. Every wait goes through Sockets.wait, so the request deadline and the wake pipe (task
// cancellation) apply to the handshake and to each read and write.
import COpenSSL
import Glibc

/// A client SSL_CTX, built once per verification mode: loading the system CA store for every
/// request would re-read it each time. An SSL_CTX may be shared by threads creating
/// connections from it, and is never changed after init, hence @unchecked Sendable.
final class TLSClientContext: @unchecked Sendable {
    let context: OpaquePointer

    private static let verifying = Result<TLSClientContext, HTTPError> { () throws(HTTPError) in try TLSClientContext(verify: true) }
    private static let unverified = Result<TLSClientContext, HTTPError> { () throws(HTTPError) in try TLSClientContext(verify: false) }

    static func shared(verify: Bool) throws(HTTPError) -> TLSClientContext {
        try (verify ? verifying : unverified).get()
    }

    private init(verify: Bool) throws(HTTPError) {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw HTTPError(.system, "cannot create a TLS context: \(TLSConnection.queuedErrorText())")
        }
        self.context = context
        guard swiftrtc_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw HTTPError(.system, "cannot require TLS 1.2: \(TLSConnection.queuedErrorText())")
        }
        _ = swiftrtc_SSL_CTX_set_tls_client_mode(context)
        _ = swiftrtc_SSL_CTX_set_tls_client_options(context)
        if verify {
            // The system store: on Debian /usr/lib/ssl/cert.pem and /usr/lib/ssl/certs, i.e. /etc/ssl/certs.
            guard SSL_CTX_set_default_verify_paths(context) == 1 else {
                throw HTTPError(.system, "cannot load the system CA certificates: \(TLSConnection.queuedErrorText())")
            }
            SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
        } else {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
        }
    }

    deinit { SSL_CTX_free(context) }
}

/// One TLS session on a connected non-blocking socket. The caller keeps owning `fd`.
/// Used by the single thread that runs the request.
final class TLSConnection {
    private let ssl: OpaquePointer
    private let fd: Int32

    /// Runs the handshake. With `verify`, the chain must lead to a system CA and the
    /// certificate must name `host` (a DNS name, or an IP address for an IP literal).
    init(fd: Int32, host: String, display: String, verify: Bool, timeout: Duration,
         deadline: Deadline, wake: Int32) throws(HTTPError) {
        let context = try TLSClientContext.shared(verify: verify)
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else {
            throw HTTPError(.system, "cannot create a TLS session: \(Self.queuedErrorText())")
        }
        self.ssl = ssl
        self.fd = fd
        guard SSL_set_fd(ssl, fd) == 1 else {
            throw HTTPError(.system, "cannot attach TLS to the socket: \(Self.queuedErrorText())")
        }
        let isIPLiteral = Self.isIPLiteral(host)
        if verify {
            let named = isIPLiteral ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host)
                                    : SSL_set1_host(ssl, host)
            guard named == 1 else {
                throw HTTPError(.tlsFailed, "cannot check the certificate of \(display) against host \(host)")
            }
        }
        // SNI carries names only (RFC 6066 §3: literal IP addresses are not permitted).
        if !isIPLiteral { _ = swiftrtc_SSL_set_tlsext_host_name(ssl, host) }

        while true {
            ERR_clear_error()
            let rc = SSL_connect(ssl)
            if rc == 1 { return }
            let code = errno
            let events: Int32
            switch SSL_get_error(ssl, rc) {
            case SSL_ERROR_WANT_READ: events = Int32(POLLIN)
            case SSL_ERROR_WANT_WRITE: events = Int32(POLLOUT)
            case SSL_ERROR_SYSCALL where code == EINTR: continue
            case let error:
                throw HTTPError(.tlsFailed, "TLS handshake with \(display) failed: \(failureText(error, errno: code))")
            }
            switch Sockets.wait(fd, events: events, wake: wake, deadline: deadline) {
            case .ready: continue
            case .timedOut: throw HTTPError(.timedOut, "timed out after \(Sockets.describe(timeout)) waiting for \(display)")
            case .woken: throw HTTPError(.cancelled, "request to \(display) cancelled")
            }
        }
    }

    deinit {
        // One close_notify attempt, without waiting for the peer's (the socket closes next).
        ERR_clear_error()
        _ = SSL_shutdown(ssl)
        SSL_free(ssl)
    }

    /// Reads what is available (at most `buffer.count` bytes) into `buffer`.
    func read(into buffer: inout [UInt8], wake: Int32, deadline: Deadline) -> ClientConnection.Read {
        while true {
            ERR_clear_error()
            let count = buffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32(clamping: $0.count)) }
            if count > 0 { return .data(Int(count)) }
            let code = errno
            let events: Int32
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_ZERO_RETURN: return .eof
            case SSL_ERROR_WANT_READ: events = Int32(POLLIN)
            case SSL_ERROR_WANT_WRITE: events = Int32(POLLOUT)
            case SSL_ERROR_SYSCALL where code == EINTR: continue
            case let error: return .failed(failureText(error, errno: code))
            }
            switch Sockets.wait(fd, events: events, wake: wake, deadline: deadline) {
            case .ready: continue
            case .timedOut: return .timedOut
            case .woken: return .woken
            }
        }
    }

    /// Writes all of `bytes` (partial writes are enabled on the context).
    func writeAll(_ bytes: [UInt8], wake: Int32, deadline: Deadline) -> ClientConnection.Write {
        var offset = 0
        while offset < bytes.count {
            ERR_clear_error()
            let count = bytes.withUnsafeBytes { raw in
                SSL_write(ssl, raw.baseAddress.map { $0 + offset }, Int32(clamping: raw.count - offset))
            }
            if count > 0 { offset += Int(count); continue }
            let code = errno
            let events: Int32
            switch SSL_get_error(ssl, count) {
            case SSL_ERROR_WANT_READ: events = Int32(POLLIN)
            case SSL_ERROR_WANT_WRITE: events = Int32(POLLOUT)
            case SSL_ERROR_SYSCALL where code == EINTR: continue
            case let error: return .failed(failureText(error, errno: code))
            }
            switch Sockets.wait(fd, events: events, wake: wake, deadline: deadline) {
            case .ready: continue
            case .timedOut: return .timedOut
            case .woken: return .woken
            }
        }
        return .done
    }

    /// What an SSL_get_error result means: OpenSSL's reason, plus why the certificate was
    /// rejected when verification failed ("certificate verify failed (self-signed certificate)").
    private func failureText(_ error: Int32, errno code: Int32) -> String {
        switch error {
        case SSL_ERROR_ZERO_RETURN:
            return "connection closed by the server"
        case SSL_ERROR_SYSCALL:
            let queued = ERR_peek_error()
            if queued != 0 { return Self.queuedErrorText() }
            return code == 0 ? "connection closed by the server" : Sockets.errorText(code)
        default:
            var text = Self.queuedErrorText()
            let verifyResult = SSL_get_verify_result(ssl)
            if verifyResult != X509_V_OK, let reason = X509_verify_cert_error_string(verifyResult) {
                text += " (\(String(cString: reason)))"
            }
            return text
        }
    }

    /// The reason of the earliest error on this thread's OpenSSL queue; empties the queue.
    static func queuedErrorText() -> String {
        let first = ERR_get_error()
        ERR_clear_error()
        guard first != 0 else { return "unknown TLS error" }
        if let reason = ERR_reason_error_string(first) { return String(cString: reason) }
        return "OpenSSL error \(first)"
    }

    static func isIPLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
