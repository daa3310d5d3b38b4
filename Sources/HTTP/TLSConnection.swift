// TLS for the client's https:// requests: OpenSSL 3 over the same non-blocking socket as plain
// HTTP. Every wait goes through Sockets.wait, so the request deadline and the wake pipe (task
// cancellation) apply to the handshake and to each read and write.
import COpenSSL
import Glibc
import TLS

/// One TLS session on a connected non-blocking socket. The caller keeps owning `fd`.
/// Used by the single thread that runs the request.
final class TLSConnection {
    private let ssl: OpaquePointer
    private let fd: Int32

    /// Runs the handshake. With `verify`, the chain must lead to a system CA and the
    /// certificate must name `host` (a DNS name, or an IP address for an IP literal).
    init(fd: Int32, host: String, display: String, verify: Bool, timeout: Duration,
         deadline: Deadline, wake: Int32) throws(HTTPError) {
        let ssl: OpaquePointer
        do throws(TLSError) {
            ssl = try TLSSession.make(TLSClientContext.shared(verify ? .system : .insecure), host: host, verify: verify,
                                      display: display)
        } catch {
            throw HTTPError(error.kind == .configuration ? .system : .tlsFailed, error.message)
        }
        self.ssl = ssl
        self.fd = fd
        guard SSL_set_fd(ssl, fd) == 1 else {
            throw HTTPError(.system, "cannot attach TLS to the socket: \(TLSSession.queuedErrorText())")
        }
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

    private func failureText(_ error: Int32, errno code: Int32) -> String {
        if error == SSL_ERROR_SYSCALL, ERR_peek_error() == 0, code != 0 { return Sockets.errorText(code) }
        return TLSSession.failureText(ssl, error, errno: code)
    }
}
