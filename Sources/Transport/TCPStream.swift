import Glibc
import STUN

/// A TCP client connection for stream protocols driven from an event loop (TURN over TCP).
/// Reads are non-blocking; `send` waits briefly for room, because the loop polls only for
/// readability and the messages it carries are small.
public final class TCPStream: @unchecked Sendable {
    // @unchecked: used from one event loop thread, like UDPSocket.
    public let fd: Int32
    public let remote: SocketAddress
    private var closed = false

    /// Connects, waiting at most `timeout` (the caller's thread blocks meanwhile: about one
    /// round trip to a reachable server).
    public init(connectTo remote: SocketAddress, timeout: Duration = .seconds(3)) throws(TransportError) {
        let family = remote.isIPv4 ? AF_INET : AF_INET6
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TransportError("socket() failed: \(errnoString())") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        let rc = remote.withSockAddr { Glibc.connect(fd, $0, $1) }
        if rc != 0 {
            guard errno == EINPROGRESS else {
                let reason = errnoString()
                Glibc.close(fd)
                throw TransportError("cannot connect TCP to \(remote): \(reason)")
            }
            var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
            let ms = Int32(clamping: timeout.components.seconds * 1000 + timeout.components.attoseconds / 1_000_000_000_000_000)
            var soError: Int32 = 0
            var len = socklen_t(MemoryLayout<Int32>.size)
            guard poll(&entry, 1, ms) == 1, getsockopt(fd, SOL_SOCKET, SO_ERROR, &soError, &len) == 0, soError == 0 else {
                let reason = soError != 0 ? errnoString(soError) : "no answer within \(timeout)"
                Glibc.close(fd)
                throw TransportError("cannot connect TCP to \(remote): \(reason)")
            }
        }
        self.fd = fd
        self.remote = remote
    }

    /// Writes all of `bytes`, waiting up to 100 ms at a time for room; false if the stream is gone.
    @discardableResult
    public func send(_ bytes: [UInt8]) -> Bool {
        guard !closed else { return false }
        var offset = 0
        while offset < bytes.count {
            let n = bytes.withUnsafeBytes { raw in
                Glibc.send(fd, raw.baseAddress.map { $0 + offset }, bytes.count - offset, Int32(MSG_NOSIGNAL))
            }
            if n > 0 {
                offset += n
            } else if n < 0, errno == EAGAIN || errno == EINTR {
                var entry = pollfd(fd: fd, events: Int16(POLLOUT), revents: 0)
                guard poll(&entry, 1, 100) == 1 else { return false }
            } else {
                return false
            }
        }
        return true
    }

    public enum ReadResult { case data(Int), wouldBlock, closed }

    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> ReadResult {
        guard !closed else { return .closed }
        let n = recv(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT))
        if n > 0 { return .data(n) }
        if n < 0, errno == EAGAIN || errno == EINTR { return .wouldBlock }
        return .closed
    }

    public func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    deinit { close() }
}
