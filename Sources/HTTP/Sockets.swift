// Thin POSIX socket helpers: non-blocking sockets driven by poll(2) with a deadline and a wake
// descriptor, so every wait can time out or be interrupted by stop() or task cancellation.
import Glibc

/// A point in time by which an operation must finish.
struct Deadline: Sendable {
    let instant: ContinuousClock.Instant

    /// Durations beyond ~30 years are clamped so clock arithmetic cannot overflow.
    init(after duration: Duration) {
        instant = ContinuousClock.now.advanced(by: min(duration, .seconds(1_000_000_000)))
    }

    init(at instant: ContinuousClock.Instant) {
        self.instant = instant
    }

    /// Milliseconds left for poll(2), rounded up so we never spin on a zero timeout; 0 if past.
    var pollMilliseconds: Int32 {
        let left = instant - ContinuousClock.now
        if left <= .zero { return 0 }
        let (seconds, attoseconds) = left.components
        if seconds >= Int64(Int32.max / 1000) { return Int32.max }
        let millis = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
        return Int32(clamping: millis)
    }
}

/// A pipe that, once signalled, stays readable: every poll that includes it wakes up for good.
/// Used to stop a server and to cancel a client request. The descriptors are fixed at init and
/// write(2) is thread-safe, hence @unchecked Sendable.
final class WakePipe: @unchecked Sendable {
    let readFD: Int32
    private let writeFD: Int32

    init() throws(HTTPError) {
        var fds: [Int32] = [-1, -1]
        guard pipe(&fds) == 0 else {
            throw HTTPError(.system, "pipe failed: \(Sockets.errorText(errno))")
        }
        readFD = fds[0]
        writeFD = fds[1]
        Sockets.configure(readFD)
        Sockets.configure(writeFD)
    }

    func signal() {
        var byte: UInt8 = 1
        _ = write(writeFD, &byte, 1)
    }

    deinit {
        close(readFD)
        close(writeFD)
    }
}

enum Sockets {
    enum Wait { case ready, timedOut, woken }
    enum Read { case data(Int), eof, timedOut, woken, failed(Int32) }
    enum Write { case done, timedOut, woken, failed(Int32) }

    /// Non-blocking and close-on-exec (Glibc's module does not export accept4/pipe2).
    static func configure(_ fd: Int32) {
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        _ = fcntl(fd, F_SETFD, fcntl(fd, F_GETFD) | FD_CLOEXEC)
    }

    static func cString(_ text: [CChar]) -> String {
        String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    static func errorText(_ code: Int32) -> String {
        guard let text = strerror(code) else { return "error \(code)" }
        return String(cString: text)
    }

    /// Waits until `fd` has one of `events`, the deadline passes or `wake` becomes readable.
    static func wait(_ fd: Int32, events: Int32, wake: Int32?, deadline: Deadline?) -> Wait {
        var fds = [pollfd(fd: fd, events: Int16(truncatingIfNeeded: events), revents: 0)]
        if let wake { fds.append(pollfd(fd: wake, events: Int16(POLLIN), revents: 0)) }
        while true {
            let timeout = deadline?.pollMilliseconds ?? -1
            let count = poll(&fds, nfds_t(fds.count), timeout)
            if count < 0 {
                if errno == EINTR { continue }
                return .ready  // let the following call report the error
            }
            if fds.count > 1, fds[1].revents != 0 { return .woken }
            if fds[0].revents != 0 { return .ready }
            if count == 0 && timeout == 0 { return .timedOut }
            if count == 0, let deadline, deadline.pollMilliseconds == 0 { return .timedOut }
        }
    }

    /// Reads what is available (at most `buffer.count` bytes) into `buffer`.
    static func read(_ fd: Int32, into buffer: inout [UInt8], wake: Int32?, deadline: Deadline?) -> Read {
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count > 0 { return .data(count) }
            if count == 0 { return .eof }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else { return .failed(code) }
            switch wait(fd, events: Int32(POLLIN), wake: wake, deadline: deadline) {
            case .ready: continue
            case .timedOut: return .timedOut
            case .woken: return .woken
            }
        }
    }

    /// Writes all of `bytes`. MSG_NOSIGNAL: a peer that went away must give EPIPE, not SIGPIPE.
    static func writeAll(_ fd: Int32, _ bytes: [UInt8], wake: Int32?, deadline: Deadline?) -> Write {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes { raw in
                send(fd, raw.baseAddress.map { $0 + offset }, raw.count - offset, Int32(MSG_NOSIGNAL))
            }
            if count >= 0 { offset += count; continue }
            let code = errno
            if code == EINTR { continue }
            guard code == EAGAIN || code == EWOULDBLOCK else { return .failed(code) }
            switch wait(fd, events: Int32(POLLOUT), wake: wake, deadline: deadline) {
            case .ready: continue
            case .timedOut: return .timedOut
            case .woken: return .woken
            }
        }
        return .done
    }

    /// Addresses for `host` (a name or an IPv4/IPv6 literal) and `port`, in resolver order.
    static func resolve(_ host: String, port: UInt16, passive: Bool) throws(HTTPError) -> [(sockaddr_storage, socklen_t)] {
        var hints = addrinfo()
        hints.ai_family = AF_UNSPEC
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0)
        var list: UnsafeMutablePointer<addrinfo>?
        let name = host.hasPrefix("[") && host.hasSuffix("]") ? String(host.dropFirst().dropLast()) : host
        let rc = name.isEmpty ? getaddrinfo(nil, String(port), &hints, &list)
                              : getaddrinfo(name, String(port), &hints, &list)
        guard rc == 0, let first = list else {
            let text = rc == EAI_SYSTEM ? errorText(errno) : String(cString: gai_strerror(rc))
            throw HTTPError(.connectionFailed, "cannot resolve \(host): \(text)")
        }
        defer { freeaddrinfo(first) }
        var result: [(sockaddr_storage, socklen_t)] = []
        var node: UnsafeMutablePointer<addrinfo>? = first
        while let entry = node {
            if let address = entry.pointee.ai_addr, entry.pointee.ai_addrlen <= MemoryLayout<sockaddr_storage>.size {
                var storage = sockaddr_storage()
                withUnsafeMutableBytes(of: &storage) { out in
                    out.copyMemory(from: UnsafeRawBufferPointer(start: address, count: Int(entry.pointee.ai_addrlen)))
                }
                result.append((storage, entry.pointee.ai_addrlen))
            }
            node = entry.pointee.ai_next
        }
        return result
    }

    /// `ip:port`, or `[ip6]:port`.
    static func format(_ storage: sockaddr_storage) -> String {
        var storage = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        switch Int32(storage.ss_family) {
        case AF_INET:
            return withUnsafePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { address in
                    var ip = address.pointee.sin_addr
                    inet_ntop(AF_INET, &ip, &text, socklen_t(text.count))
                    return "\(cString(text)):\(UInt16(bigEndian: address.pointee.sin_port))"
                }
            }
        case AF_INET6:
            return withUnsafePointer(to: &storage) { pointer in
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { address in
                    var ip = address.pointee.sin6_addr
                    inet_ntop(AF_INET6, &ip, &text, socklen_t(text.count))
                    return "[\(cString(text))]:\(UInt16(bigEndian: address.pointee.sin6_port))"
                }
            }
        default:
            return "unknown"
        }
    }

    static func port(of storage: sockaddr_storage) -> UInt16 {
        var storage = storage
        let family = Int32(storage.ss_family)
        return withUnsafePointer(to: &storage) { pointer in
            switch family {
            case AF_INET:
                return pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin_port) }
            case AF_INET6:
                return pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { UInt16(bigEndian: $0.pointee.sin6_port) }
            default:
                return 0
            }
        }
    }

    static func setOption(_ fd: Int32, _ level: Int32, _ name: Int32, _ value: Int32) {
        var value = value
        _ = setsockopt(fd, level, name, &value, socklen_t(MemoryLayout<Int32>.size))
    }

    /// A non-blocking listening socket bound to host:port (port 0: any free port).
    static func listen(host: String, port: UInt16, backlog: Int32) throws(HTTPError) -> (fd: Int32, port: UInt16) {
        let addresses: [(sockaddr_storage, socklen_t)]
        do {
            addresses = try resolve(host, port: port, passive: true)
        } catch {
            throw HTTPError(.system, error.message)
        }
        var lastError = "no address"
        for (storage, length) in addresses {
            let fd = socket(Int32(storage.ss_family), Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else { lastError = errorText(errno); continue }
            setOption(fd, SOL_SOCKET, SO_REUSEADDR, 1)
            if Int32(storage.ss_family) == AF_INET6 { setOption(fd, Int32(IPPROTO_IPV6), IPV6_V6ONLY, 0) }
            var address = storage
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, length) }
            }
            guard bound == 0, Glibc.listen(fd, backlog) == 0 else {
                lastError = errorText(errno)
                close(fd)
                continue
            }
            var local = sockaddr_storage()
            var localLength = socklen_t(MemoryLayout<sockaddr_storage>.size)
            _ = withUnsafeMutablePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &localLength) }
            }
            return (fd, Sockets.port(of: local))
        }
        throw HTTPError(.system, "cannot listen on \(host):\(port): \(lastError)")
    }

    /// Connects to host:port with a deadline, trying each resolved address in turn. `display` is
    /// the `host:port` text used in error messages.
    static func connect(host: String, port: UInt16, display: String, timeout: Duration,
                        deadline: Deadline, wake: Int32?) throws(HTTPError) -> Int32 {
        let addresses = try resolve(host, port: port, passive: false)
        var lastError = HTTPError(.connectionFailed, "cannot connect to \(display): no address")
        for (storage, length) in addresses {
            let fd = socket(Int32(storage.ss_family), Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue) | Int32(SOCK_NONBLOCK.rawValue), 0)
            guard fd >= 0 else {
                lastError = HTTPError(.system, "socket failed: \(errorText(errno))")
                continue
            }
            var address = storage
            var rc = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, length) }
            }
            var code: Int32 = rc == 0 ? 0 : errno
            if rc != 0 && code == EINPROGRESS {
                switch wait(fd, events: Int32(POLLOUT), wake: wake, deadline: deadline) {
                case .timedOut:
                    close(fd)
                    throw HTTPError(.timedOut, "timed out after \(describe(timeout)) waiting for \(display)")
                case .woken:
                    close(fd)
                    throw HTTPError(.cancelled, "request to \(display) cancelled")
                case .ready:
                    var length = socklen_t(MemoryLayout<Int32>.size)
                    rc = getsockopt(fd, SOL_SOCKET, SO_ERROR, &code, &length)
                    if rc != 0 { code = errno }
                }
            }
            if code == 0 {
                setOption(fd, Int32(IPPROTO_TCP), TCP_NODELAY, 1)
                return fd
            }
            close(fd)
            lastError = code == ECONNREFUSED
                ? HTTPError(.connectionRefused, "connection refused to \(display)")
                : HTTPError(.connectionFailed, "cannot connect to \(display): \(errorText(code))")
        }
        throw lastError
    }

    /// `200 ms`, `10 s`, `1.5 s`: how a timeout is shown in messages.
    static func describe(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        if seconds >= 1_000_000_000 || seconds < 0 { return "\(seconds) s" }
        let millis = seconds * 1000 + attoseconds / 1_000_000_000_000_000
        if millis < 1000 { return "\(millis) ms" }
        if millis % 1000 == 0 { return "\(millis / 1000) s" }
        var text = String(Double(millis) / 1000)
        while text.hasSuffix("0") { text.removeLast() }
        return text + " s"
    }
}
