// The TLS client pieces shared by the HTTP client (https, wss; over its socket) and by TURN
// over TLS (turns:; over memory BIOs, see TLSClient): one SSL_CTX per trust setting, and a
// session set up to verify the server's name.
import COpenSSL
import Glibc
import Locks

/// Why TLS did not work; `message` is meant to be shown as is.
public struct TLSError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// The context or session could not be made (OpenSSL, a CA file that does not load).
        case configuration
        /// The handshake failed, an unverified certificate included.
        case handshake
        /// The handshake did not finish in time.
        case timeout
        /// After the handshake: a bad record, or the server closed the connection.
        case connection
    }
    public var kind: Kind
    public var message: String
    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }
    public var description: String { message }
}

/// What a client trusts: the system store (Debian: /etc/ssl/certs) plus, optionally, the CAs
/// in one PEM file; or nothing is verified at all (an explicit `--insecure` only).
public struct TLSTrust: Sendable, Hashable {
    public var verify: Bool
    /// Extra CA certificates (PEM), trusted besides the system store.
    public var caFile: String?
    public init(verify: Bool = true, caFile: String? = nil) {
        self.verify = verify
        self.caFile = caFile
    }
    public static let system = TLSTrust()
    public static let insecure = TLSTrust(verify: false)
}

/// A client SSL_CTX, built once per trust setting: loading the system CA store for every
/// connection would re-read it each time. An SSL_CTX may be shared by threads creating
/// connections from it, and is never changed after init, hence @unchecked Sendable.
public final class TLSClientContext: @unchecked Sendable {
    public let context: OpaquePointer

    private static let cache = Locked<[TLSTrust: TLSClientContext]>([:])

    public static func shared(_ trust: TLSTrust) throws(TLSError) -> TLSClientContext {
        let result = cache.withLock { cache -> Result<TLSClientContext, TLSError> in
            if let context = cache[trust] { return .success(context) }
            let made = Result { () throws(TLSError) in try TLSClientContext(trust) }
            // Only successes are kept: a CA file may appear later.
            if case .success(let context) = made { cache[trust] = context }
            return made
        }
        return try result.get()
    }

    private init(_ trust: TLSTrust) throws(TLSError) {
        ERR_clear_error()
        guard let context = SSL_CTX_new(TLS_client_method()) else {
            throw TLSError(.configuration, "cannot create a TLS context: \(TLSSession.queuedErrorText())")
        }
        self.context = context
        guard swiftrtc_SSL_CTX_set_min_proto_version(context, TLS1_2_VERSION) == 1 else {
            throw TLSError(.configuration, "cannot require TLS 1.2: \(TLSSession.queuedErrorText())")
        }
        _ = swiftrtc_SSL_CTX_set_tls_client_mode(context)
        _ = swiftrtc_SSL_CTX_set_tls_client_options(context)
        guard trust.verify else {
            SSL_CTX_set_verify(context, SSL_VERIFY_NONE, nil)
            return
        }
        // The system store: on Debian /usr/lib/ssl/cert.pem and /usr/lib/ssl/certs, i.e. /etc/ssl/certs.
        guard SSL_CTX_set_default_verify_paths(context) == 1 else {
            throw TLSError(.configuration, "cannot load the system CA certificates: \(TLSSession.queuedErrorText())")
        }
        if let caFile = trust.caFile {
            guard SSL_CTX_load_verify_locations(context, caFile, nil) == 1 else {
                throw TLSError(.configuration, "cannot load the CA certificates in \(caFile): \(TLSSession.queuedErrorText())")
            }
        }
        SSL_CTX_set_verify(context, SSL_VERIFY_PEER, nil)
    }

    deinit { SSL_CTX_free(context) }
}

/// Helpers around one `SSL *` of a client context, for both ways of driving it.
public enum TLSSession {
    /// A session that will check the certificate names `host` (a DNS name, or an IP address for
    /// an IP literal) when the context verifies, and sends SNI for names. The caller frees it.
    public static func make(_ context: TLSClientContext, host: String, verify: Bool, display: String) throws(TLSError) -> OpaquePointer {
        ERR_clear_error()
        guard let ssl = SSL_new(context.context) else {
            throw TLSError(.configuration, "cannot create a TLS session: \(queuedErrorText())")
        }
        let isIPLiteral = isIPLiteral(host)
        if verify {
            let named = isIPLiteral ? X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(ssl), host) : SSL_set1_host(ssl, host)
            guard named == 1 else {
                SSL_free(ssl)
                throw TLSError(.handshake, "cannot check the certificate of \(display) against host \(host)")
            }
        }
        // SNI carries names only (RFC 6066 §3: literal IP addresses are not permitted).
        if !isIPLiteral { _ = swiftrtc_SSL_set_tlsext_host_name(ssl, host) }
        return ssl
    }

    /// What an SSL_get_error result means: OpenSSL's reason, plus why the certificate was
    /// rejected when verification failed ("certificate verify failed (self-signed certificate)").
    public static func failureText(_ ssl: OpaquePointer, _ error: Int32, errno code: Int32) -> String {
        switch error {
        case SSL_ERROR_ZERO_RETURN:
            return "connection closed by the server"
        case SSL_ERROR_SYSCALL:
            if ERR_peek_error() != 0 { return queuedErrorText() }
            return code == 0 ? "connection closed by the server" : String(cString: strerror(code))
        default:
            var text = queuedErrorText()
            let verifyResult = SSL_get_verify_result(ssl)
            if verifyResult != X509_V_OK, let reason = X509_verify_cert_error_string(verifyResult) {
                text += " (\(String(cString: reason)))"
            }
            return text
        }
    }

    /// The reason of the earliest error on this thread's OpenSSL queue; empties the queue.
    public static func queuedErrorText() -> String {
        let first = ERR_get_error()
        ERR_clear_error()
        guard first != 0 else { return "unknown TLS error" }
        // OpenSSL 3 keeps errno for system errors (a file that cannot be opened) in the code.
        let code = swiftrtc_ERR_system_errno(first)
        if code != 0 { return String(cString: strerror(code)) }
        if let reason = ERR_reason_error_string(first) { return String(cString: reason) }
        return "OpenSSL error \(first)"
    }

    public static func isIPLiteral(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}
