import CShim
import Glibc
import STUN

/// A non-blocking UDP socket bound to one local address.
public final class UDPSocket: @unchecked Sendable {
    // @unchecked: the fd is used from one event loop thread; close() is idempotent under a flag
    // that only that thread sets.
    public let fd: Int32
    public let localAddress: SocketAddress
    private var closed = false
    public var isClosed: Bool { closed }

    public init(bind address: SocketAddress, receiveBuffer: Int32 = 4 << 20, sendBuffer: Int32 = 4 << 20) throws(TransportError) {
        let family = address.isIPv4 ? AF_INET : AF_INET6
        let fd = socket(family, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw TransportError("socket() failed: \(errnoString())") }
        var rcv = receiveBuffer, snd = sendBuffer
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcv, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &snd, socklen_t(MemoryLayout<Int32>.size))
        let rc = address.withSockAddr { Glibc.bind(fd, $0, $1) }
        guard rc == 0 else {
            let reason = errnoString()
            Glibc.close(fd)
            throw TransportError("cannot bind UDP \(address): \(reason)")
        }
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let got = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        guard got == 0, let bound = SocketAddress(storage: &storage) else {
            Glibc.close(fd)
            throw TransportError("getsockname failed for \(address)")
        }
        self.fd = fd
        self.localAddress = bound
        // Arrival times for bandwidth estimation come from the kernel, not from when the loop
        // got round to reading (a busy loop reads a batch at once; see `ArrivalClock`).
        _ = swiftrtc_enable_receive_timestamps(fd)
    }

    /// Sends one datagram; errors are counted by the caller, never thrown (UDP is best effort).
    @discardableResult
    public func send(_ bytes: UnsafeRawBufferPointer, to remote: SocketAddress) -> Bool {
        guard !closed else { return false }
        let n = remote.withSockAddr { addr, len in
            sendto(fd, bytes.baseAddress, bytes.count, Int32(MSG_DONTWAIT), addr, len)
        }
        return n == bytes.count
    }

    @discardableResult
    public func send(_ bytes: [UInt8], to remote: SocketAddress) -> Bool {
        bytes.withUnsafeBytes { send($0, to: remote) }
    }

    /// Receives one datagram into `buffer`; nil when nothing is waiting.
    public func receive(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, from: SocketAddress)? {
        guard !closed else { return nil }
        var storage = sockaddr_storage()
        var len = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let n = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                recvfrom(fd, buffer.baseAddress, buffer.count, Int32(MSG_DONTWAIT), $0, &len)
            }
        }
        guard n >= 0, let from = SocketAddress(storage: &storage) else { return nil }
        return (n, from)
    }

    /// Receives one datagram into `buffer` with the kernel's receive time (CLOCK_REALTIME ns, 0
    /// when there is none); nil when nothing is waiting.
    public func receiveStamped(into buffer: UnsafeMutableRawBufferPointer) -> (count: Int, from: SocketAddress, realtimeNs: Int64)? {
        guard !closed, let base = buffer.baseAddress else { return nil }
        var storage = sockaddr_storage()
        var len = UInt32(MemoryLayout<sockaddr_storage>.size)
        var stamp: Int64 = 0
        let n = withUnsafeMutablePointer(to: &storage) {
            swiftrtc_recv_timestamped(fd, base, buffer.count, $0, &len, &stamp)
        }
        guard n >= 0, let from = SocketAddress(storage: &storage) else { return nil }
        return (n, from, stamp)
    }

    public func close() {
        guard !closed else { return }
        closed = true
        Glibc.close(fd)
    }

    deinit { close() }
}
