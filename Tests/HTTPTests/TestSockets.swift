// Raw-socket helpers for tests: a blocking client that writes exact bytes, and a canned server
// that answers with exact bytes. Everything on 127.0.0.1.
import Glibc
import Locks
@testable import HTTP

struct TestFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Runs blocking socket code on a thread of its own: blocking the concurrency pool would starve
/// the server's async handlers (the pool has one thread per core).
func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await JoinableThread.offPool(body)
}

/// A blocking TCP connection; reads run off the concurrency pool. A receive timeout guards the
/// test run against a hang; no test asserts on it. @unchecked Sendable: used by one task at a time.
final class RawConnection: @unchecked Sendable {
    let fd: Int32

    init(port: UInt16) throws {
        fd = try Sockets.connect(host: "127.0.0.1", port: port, display: "127.0.0.1:\(port)",
                                 timeout: .seconds(10), deadline: Deadline(after: .seconds(10)), wake: nil)
        let flags = fcntl(fd, F_GETFL)
        _ = fcntl(fd, F_SETFL, flags & ~O_NONBLOCK)
        var guardTime = timeval(tv_sec: 20, tv_usec: 0)
        _ = setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &guardTime, socklen_t(MemoryLayout<timeval>.size))
    }

    deinit { close(fd) }

    func send(_ text: String) throws { try send(Array(text.utf8)) }

    func send(_ bytes: [UInt8]) throws {
        guard case .done = Sockets.writeAll(fd, bytes, wake: nil, deadline: nil) else { throw TestFailure("send failed") }
    }

    /// Half-close: the server sees end of stream.
    func finishSending() { shutdown(fd, Int32(SHUT_WR)) }

    /// Everything until the server closes.
    func readToEnd() async throws -> [UInt8] {
        try await offPool { self.blockingReadToEnd() }
    }

    /// One response framed by Content-Length (what our server always sends).
    func readResponse() async throws -> (head: HTTPResponseHead, body: String) {
        try await offPool { try self.blockingReadResponse() }
    }

    private func blockingReadToEnd() -> [UInt8] {
        var out: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if count <= 0 { return out }
            out += buffer[0..<count]
        }
    }

    private var pending: [UInt8] = []

    private func blockingReadResponse() throws -> (head: HTTPResponseHead, body: String) {
        var buffer = [UInt8](repeating: 0, count: 4096)
        while true {
            if let end = HTTPRequestDecoder.headEnd(pending, from: 0) {
                let head = try parseHTTPResponseHead(Array(pending[0..<end]))
                let length = Int(head.headers["Content-Length"] ?? "0") ?? 0
                if pending.count - end >= length {
                    let body = String(decoding: pending[end..<(end + length)], as: UTF8.self)
                    pending.removeFirst(end + length)
                    return (head, body)
                }
            }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { throw TestFailure("connection closed before a whole response") }
            pending += buffer[0..<count]
        }
    }
}

/// Splits raw response bytes into status line and body (for responses read to the end).
func statusAndBody(_ bytes: [UInt8]) -> (statusLine: String, body: String) {
    let text = String(decoding: bytes, as: UTF8.self)
    guard let split = text.range(of: "\r\n\r\n") else { return (text, "") }
    let statusLine = text[..<split.lowerBound].split(separator: "\r\n").first.map(String.init) ?? ""
    return (statusLine, String(text[split.upperBound...]))
}

/// A listener that answers each of `responses` (one per connection, in order) with exact bytes
/// after reading the request head and its Content-Length body. `requests` holds what it read.
final class CannedServer: @unchecked Sendable {  // requests guarded by Locked; fd fixed
    let fd: Int32
    let port: UInt16
    let requests = Locked<[String]>([])
    private var thread: JoinableThread?

    init(responses: [String]) throws {
        let listener = try Sockets.listen(host: "127.0.0.1", port: 0, backlog: 16)
        fd = listener.fd
        port = listener.port
        thread = try JoinableThread.spawn { [fd, requests] in
            for response in responses {
                guard case .ready = Sockets.wait(fd, events: Int32(POLLIN), wake: nil, deadline: Deadline(after: .seconds(20))) else { return }
                let client = accept(fd, nil, nil)
                guard client >= 0 else { return }
                Sockets.configure(client)
                var decoder = HTTPRequestDecoder()
                var scratch = [UInt8](repeating: 0, count: 4096)
                reading: while true {
                    guard case .request(let request) = try? decoder.next() else {
                        guard case .data(let count) = Sockets.read(client, into: &scratch, wake: nil, deadline: Deadline(after: .seconds(20))) else { break }
                        decoder.append(scratch[0..<count])
                        continue reading
                    }
                    requests.withLock { $0.append("\(request.method) \(request.target) \(request.bodyText)") }
                    break
                }
                _ = Sockets.writeAll(client, Array(response.utf8), wake: nil, deadline: Deadline(after: .seconds(20)))
                close(client)
            }
        }
    }

    /// Waits for all canned responses to be sent.
    func finish() {
        thread?.join()
        thread = nil
        close(fd)
    }
}

/// A port with nothing listening: bind one, read its number, close it.
func closedPort() throws -> UInt16 {
    let listener = try Sockets.listen(host: "127.0.0.1", port: 0, backlog: 1)
    close(listener.fd)
    return listener.port
}
