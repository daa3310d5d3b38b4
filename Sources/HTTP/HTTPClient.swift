// A small HTTP/1.1 client for http:// and https:// URLs: one connection per request, exact control of
// redirects (307/308 only, method and body kept), headers and one overall timeout.
// Socket work runs on a thread of its own, so awaiting `send` never blocks the concurrency pool.
// https verifies the server's certificate against the system CA store unless `insecure`.
import Glibc


public struct HTTPClientResponse: Sendable {
    public var status: Int
    public var reason: String
    public var headers: HTTPHeaders
    public var body: [UInt8]
    /// The URL that produced this response, after redirects (`Location` resolves against it).
    public var finalURL: String

    public init(status: Int, reason: String, headers: HTTPHeaders = [], body: [UInt8] = [], finalURL: String) {
        self.status = status
        self.reason = reason
        self.headers = headers
        self.body = body
        self.finalURL = finalURL
    }

    /// The body as UTF-8 text (invalid sequences replaced).
    public var text: String { String(decoding: body, as: UTF8.self) }
}

public struct HTTPClient: Sendable {
    /// Time allowed for the whole `send`, redirects included.
    public var timeout: Duration
    /// Redirects (307/308) followed before giving up.
    public var maxRedirects: Int
    /// Largest response head plus body accepted.
    public var maxResponseBytes: Int
    /// Accept any certificate on https (self-signed, expired, for another host). Off by default:
    /// only for a server the user explicitly chose not to authenticate.
    public var insecure: Bool

    static let maxResponseHeadBytes = 64 * 1024

    public init(timeout: Duration = .seconds(10), maxRedirects: Int = 5, maxResponseBytes: Int = 64 * 1024 * 1024,
                insecure: Bool = false) {
        self.timeout = timeout
        self.maxRedirects = maxRedirects
        self.maxResponseBytes = maxResponseBytes
        self.insecure = insecure
    }

    /// Resolves a (possibly relative) Location against the URL of the request (RFC 3986 §5.2).
    /// Nil when `base` is not an absolute URL.
    public static func resolve(_ location: String, against base: String) -> String? {
        URIResolution.resolve(location, against: base)
    }

    /// Sends a request and returns the final response. A 307 or 308 with a Location is followed
    /// with the same method and body (at most `maxRedirects` times); every other status, redirects
    /// included, is returned as is. An Authorization header is dropped when a redirect leaves the
    /// original host and port. Cancelling the task aborts the request.
    public func send(method: String, url: String, headers: HTTPHeaders = [], body: [UInt8] = []) async throws(HTTPError) -> HTTPClientResponse {
        guard !method.isEmpty, method.utf8.allSatisfy(HeadParsing.isTokenByte) else {
            throw HTTPError(.badRequest, "invalid HTTP method \(HeadParsing.quote(Array(method.utf8)))")
        }
        let firstURL = try HTTPURL.parse(url)
        let client = self
        return try await Self.onOwnThread(firstURL) { wake in
            client.perform(method: method, url: firstURL, headers: headers, body: body, wake: wake)
        }
    }

    /// Sends `GET url` with `headers` (an `Upgrade` and `Connection: Upgrade` among them) and,
    /// when the server answers `101`, hands over the connection with the bytes that followed the
    /// response head. Any other status comes back with its body and no connection. No redirects.
    public func upgrade(url: String, headers: HTTPHeaders) async throws(HTTPError) -> (response: HTTPClientResponse, connection: UpgradedConnection?) {
        let url = try HTTPURL.parse(url)
        let client = self
        return try await Self.onOwnThread(url) { wake in
            Self.blockingSIGPIPE()
            return Result { () throws(HTTPError) in
                try client.exchange(method: "GET", url: url, headers: headers, body: [], deadline: Deadline(after: client.timeout),
                                    wake: wake, upgrade: true)
            }
        }
    }

    /// Runs blocking socket work on a thread of its own; cancelling the task signals `wake`.
    private static func onOwnThread<T: Sendable>(_ url: HTTPURL, _ work: @escaping @Sendable (WakePipe) -> Result<T, HTTPError>) async throws(HTTPError) -> T {
        if Task.isCancelled { throw HTTPError(.cancelled, "request to \(url.display) cancelled") }
        let cancel = try WakePipe()
        let result: Result<T, HTTPError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                do throws(HTTPError) {
                    let thread = try JoinableThread.spawn { continuation.resume(returning: work(cancel)) }
                    thread.detach()
                } catch {
                    continuation.resume(returning: .failure(error))
                }
            }
        } onCancel: {
            cancel.signal()
        }
        return try result.get()
    }

    /// OpenSSL writes with write(2), not send(MSG_NOSIGNAL): a peer that went away must give
    /// this thread EPIPE, not kill the process with SIGPIPE. The thread ends with the request.
    private static func blockingSIGPIPE() {
        var pipeSignal = sigset_t()
        sigemptyset(&pipeSignal)
        sigaddset(&pipeSignal, SIGPIPE)
        pthread_sigmask(SIG_BLOCK, &pipeSignal, nil)
    }

    // MARK: Blocking part, on the request's own thread

    private func perform(method: String, url: HTTPURL, headers: HTTPHeaders, body: [UInt8], wake: WakePipe) -> Result<HTTPClientResponse, HTTPError> {
        Self.blockingSIGPIPE()
        let deadline = Deadline(after: timeout)
        var url = url
        var headers = headers
        var redirects = 0
        do throws(HTTPError) {
            while true {
                var response = try exchange(method: method, url: url, headers: headers, body: body, deadline: deadline, wake: wake).response
                response.finalURL = url.string
                guard response.status == 307 || response.status == 308,
                      let location = response.headers["Location"] else { return .success(response) }
                guard redirects < maxRedirects else {
                    throw HTTPError(.tooManyRedirects, "stopped after \(maxRedirects) redirects at \(url.string)")
                }
                guard let next = Self.resolve(location, against: url.string) else {
                    throw HTTPError(.malformedResponse, "cannot resolve redirect Location \(HeadParsing.quote(Array(location.utf8))) from \(url.display)")
                }
                let nextURL = try HTTPURL.parse(next)
                // Never from TLS to clear text: the body (an SDP with ICE credentials) and later
                // requests to the session would travel unprotected.
                if url.isTLS && !nextURL.isTLS {
                    throw HTTPError(.malformedResponse, "refusing the redirect from \(url.string) to \(nextURL.string): it leaves https")
                }
                // Credentials belong to the origin they were given for.
                if nextURL.scheme != url.scheme || nextURL.host != url.host || nextURL.port != url.port {
                    headers.remove("Authorization")
                }
                url = nextURL
                redirects += 1
            }
        } catch {
            return .failure(error)
        }
    }

    /// One request/response on a fresh connection; with `upgrade`, a 101 hands the connection over.
    private func exchange(method: String, url: HTTPURL, headers: HTTPHeaders, body: [UInt8], deadline: Deadline,
                          wake: WakePipe, upgrade: Bool = false) throws(HTTPError) -> (response: HTTPClientResponse, connection: UpgradedConnection?) {
        let socket = try ClientConnection.open(url, insecure: insecure, timeout: timeout, deadline: deadline, wake: wake.readFD)
        try check(socket.writeAll(requestBytes(method: method, url: url, headers: headers, body: body, upgrade: upgrade),
                                  wake: wake.readFD, deadline: deadline), url: url)

        var connection = Reader(connection: socket, wake: wake.readFD, deadline: deadline, url: url, timeout: timeout)
        var head: HTTPResponseHead
        repeat {
            head = try connection.readHead()
        } while (100...199).contains(head.status) && head.status != 101  // interim responses

        var response = HTTPClientResponse(status: head.status, reason: head.reason, headers: head.headers, body: [], finalURL: url.string)
        if upgrade && head.status == 101 {
            return (response, UpgradedConnection(client: socket, wake: wake, buffered: connection.buffer, remoteAddress: url.display))
        }
        if method == "HEAD" || !HTTPResponse.statusAllowsBody(head.status) { return (response, nil) }

        let codings = head.headers.values("Transfer-Encoding").flatMap { $0.split(separator: ",") }.map { $0.trimmingSpaces.lowercased() }
        if codings.last == "chunked" {
            var decoder = ChunkedDecoder(maxBodyBytes: maxResponseBytes, maxTrailerBytes: Self.maxResponseHeadBytes, kinds: .response)
            response.body = try connection.readChunked(&decoder)
        } else if !codings.isEmpty {
            response.body = try connection.readToEnd(limit: maxResponseBytes)  // RFC 9112 §6.3 rule 4
        } else {
            switch HeadParsing.contentLength(head.headers) {
            case .success(let length?):
                guard length <= maxResponseBytes else {
                    throw HTTPError(.malformedResponse, "response body of \(length) bytes from \(url.display) exceeds the limit of \(maxResponseBytes) bytes")
                }
                response.body = try connection.readExactly(length)
            case .success(nil):
                response.body = try connection.readToEnd(limit: maxResponseBytes)
            case .failure(let error):
                throw HTTPError(.malformedResponse, "\(error.message) in response from \(url.display)")
            }
        }
        return (response, nil)
    }

    private func requestBytes(method: String, url: HTTPURL, headers: HTTPHeaders, body: [UInt8], upgrade: Bool) -> [UInt8] {
        var headers = headers
        headers.remove("Content-Length")
        headers.remove("Transfer-Encoding")
        headers.remove("Connection")
        var out = Array("\(method) \(url.target) HTTP/1.1\r\n".utf8)
        if !headers.contains("Host") { out += Array("Host: \(url.authority)\r\n".utf8) }
        if !headers.contains("User-Agent") { out += Array("User-Agent: swiftrtc\r\n".utf8) }
        headers.serialize(into: &out)
        if !body.isEmpty || ["POST", "PUT", "PATCH"].contains(method) {
            out += Array("Content-Length: \(body.count)\r\n".utf8)
        }
        out += Array("Connection: \(upgrade ? "Upgrade" : "close")\r\n\r\n".utf8)
        out += body
        return out
    }

    private func check(_ result: ClientConnection.Write, url: HTTPURL) throws(HTTPError) {
        switch result {
        case .done: return
        case .timedOut: throw HTTPError(.timedOut, "timed out after \(Sockets.describe(timeout)) waiting for \(url.display)")
        case .woken: throw HTTPError(.cancelled, "request to \(url.display) cancelled")
        case .failed(let text): throw HTTPError(.connectionFailed, "cannot send request to \(url.display): \(text)")
        }
    }

    /// Buffered reads from the response connection, each bounded by the request deadline.
    private struct Reader {
        let connection: ClientConnection
        let wake: Int32
        let deadline: Deadline
        let url: HTTPURL
        let timeout: Duration
        var buffer: [UInt8] = []
        var scratch = [UInt8](repeating: 0, count: 16 * 1024)

        init(connection: ClientConnection, wake: Int32, deadline: Deadline, url: HTTPURL, timeout: Duration) {
            self.connection = connection
            self.wake = wake
            self.deadline = deadline
            self.url = url
            self.timeout = timeout
        }

        /// Reads more bytes into `buffer`; false at end of stream.
        mutating func fill() throws(HTTPError) -> Bool {
            switch connection.read(into: &scratch, wake: wake, deadline: deadline) {
            case .data(let count):
                buffer.append(contentsOf: scratch[0..<count])
                return true
            case .eof:
                return false
            case .timedOut:
                throw HTTPError(.timedOut, "timed out after \(Sockets.describe(timeout)) waiting for \(url.display)")
            case .woken:
                throw HTTPError(.cancelled, "request to \(url.display) cancelled")
            case .failed(let text):
                throw HTTPError(.connectionFailed, "connection to \(url.display) failed: \(text)")
            }
        }

        mutating func readHead() throws(HTTPError) -> HTTPResponseHead {
            var scanFrom = 0
            while true {
                if let end = HTTPRequestDecoder.headEnd(buffer, from: scanFrom) {
                    let headBytes = Array(buffer[0..<end])
                    buffer.removeFirst(end)
                    do throws(HTTPError) {
                        return try parseHTTPResponseHead(headBytes)
                    } catch {
                        throw HTTPError(.malformedResponse, "\(error.message) from \(url.display)")
                    }
                }
                if buffer.count > HTTPClient.maxResponseHeadBytes {
                    throw HTTPError(.malformedResponse, "response head from \(url.display) exceeds \(HTTPClient.maxResponseHeadBytes) bytes")
                }
                scanFrom = max(0, buffer.count - 2)
                guard try fill() else {
                    if buffer.isEmpty {
                        throw HTTPError(.connectionFailed, "connection closed by \(url.display) without a response")
                    }
                    // A head that ends at the close: parse it so garbage gets a precise message.
                    let headBytes = buffer
                    buffer = []
                    do throws(HTTPError) {
                        _ = try parseHTTPResponseHead(headBytes)
                    } catch {
                        throw HTTPError(.malformedResponse, "\(error.message) from \(url.display)")
                    }
                    throw HTTPError(.connectionFailed, "connection closed by \(url.display) in the middle of the response head")
                }
            }
        }

        mutating func readExactly(_ count: Int) throws(HTTPError) -> [UInt8] {
            while buffer.count < count {
                guard try fill() else {
                    throw HTTPError(.connectionFailed, "connection closed by \(url.display) after \(buffer.count) of \(count) body bytes")
                }
            }
            return Array(buffer[0..<count])
        }

        mutating func readToEnd(limit: Int) throws(HTTPError) -> [UInt8] {
            while try fill() {
                if buffer.count > limit {
                    throw HTTPError(.malformedResponse, "response body from \(url.display) exceeds \(limit) bytes")
                }
            }
            return buffer
        }

        mutating func readChunked(_ decoder: inout ChunkedDecoder) throws(HTTPError) -> [UInt8] {
            var body: [UInt8] = []
            while true {
                do throws(HTTPError) {
                    let used = try decoder.decode(buffer[...], into: &body)
                    buffer.removeFirst(used)
                } catch {
                    throw HTTPError(error.kind, "\(error.message) in response from \(url.display)")
                }
                if decoder.isComplete { return body }
                guard try fill() else {
                    throw HTTPError(.connectionFailed, "connection closed by \(url.display) in the middle of a chunked body")
                }
            }
        }
    }
}
