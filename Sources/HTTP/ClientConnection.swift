// The client's connection: a connected non-blocking socket, with TLS on it for https URLs.
import Glibc

/// Owns the socket; closing sends TLS close_notify (if any) before closing the descriptor.
/// Used by the single thread that runs the request.
final class ClientConnection {
    enum Read { case data(Int), eof, timedOut, woken, failed(String) }
    enum Write { case done, timedOut, woken, failed(String) }

    private let fd: Int32
    private var tls: TLSConnection?

    private init(fd: Int32, tls: TLSConnection?) {
        self.fd = fd
        self.tls = tls
    }

    /// The socket, for waiting on it (reads and writes go through this object).
    var descriptor: Int32 { fd }
    var isTLS: Bool { tls != nil }

    deinit {
        tls = nil
        _ = Glibc.close(fd)
    }

    /// Connects to the URL's host and port; for https, runs the TLS handshake, verifying the
    /// server's certificate unless `insecure`.
    static func open(_ url: HTTPURL, insecure: Bool, timeout: Duration, deadline: Deadline, wake: Int32) throws(HTTPError) -> ClientConnection {
        let fd = try Sockets.connect(host: url.host, port: url.port, display: url.display, timeout: timeout,
                                     deadline: deadline, wake: wake)
        guard url.isTLS else { return ClientConnection(fd: fd, tls: nil) }
        do throws(HTTPError) {
            let tls = try TLSConnection(fd: fd, host: url.host, display: url.display, verify: !insecure,
                                        timeout: timeout, deadline: deadline, wake: wake)
            return ClientConnection(fd: fd, tls: tls)
        } catch {
            _ = Glibc.close(fd)
            throw error
        }
    }

    func read(into buffer: inout [UInt8], wake: Int32, deadline: Deadline) -> Read {
        if let tls { return tls.read(into: &buffer, wake: wake, deadline: deadline) }
        switch Sockets.read(fd, into: &buffer, wake: wake, deadline: deadline) {
        case .data(let count): return .data(count)
        case .eof: return .eof
        case .timedOut: return .timedOut
        case .woken: return .woken
        case .failed(let code): return .failed(Sockets.errorText(code))
        }
    }

    func writeAll(_ bytes: [UInt8], wake: Int32, deadline: Deadline) -> Write {
        if let tls { return tls.writeAll(bytes, wake: wake, deadline: deadline) }
        switch Sockets.writeAll(fd, bytes, wake: wake, deadline: deadline) {
        case .done: return .done
        case .timedOut: return .timedOut
        case .woken: return .woken
        case .failed(let code): return .failed(Sockets.errorText(code))
        }
    }
}
