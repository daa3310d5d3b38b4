// Sans-I/O request framing (RFC 9112 §6): bytes from a connection go in, whole requests come out,
// with every limit checked. The server's connection loop only moves bytes; this decides.

public struct HTTPRequestDecoder: Sendable {
    public enum Output: Sendable {
        /// Feed more bytes.
        case needMoreData
        /// The client sent `Expect: 100-continue`: write `HTTP/1.1 100 Continue` and call again.
        case sendContinue
        case request(HTTPRequest)
    }

    private enum State: Sendable {
        case head(scanFrom: Int)
        case fixedBody(HTTPRequestHead, length: Int)
        case chunkedBody(HTTPRequestHead, ChunkedDecoder, [UInt8])
    }

    public let limits: HTTPLimits
    public let remoteAddress: String
    private var buffer: [UInt8] = []
    private var start = 0
    private var state = State.head(scanFrom: 0)
    private var continueAnswered = false

    public init(limits: HTTPLimits = .init(), remoteAddress: String = "") {
        self.limits = limits
        self.remoteAddress = remoteAddress
    }

    public mutating func append<C: Collection>(_ bytes: C) where C.Element == UInt8 {
        // Drop consumed bytes once all are consumed, or once they are many (long pipelines).
        if start > 0 && (start == buffer.count || start >= 64 * 1024) {
            buffer.removeFirst(start)
            if case .head(let scanFrom) = state { state = .head(scanFrom: max(0, scanFrom - start)) }
            start = 0
        }
        buffer.append(contentsOf: bytes)
    }

    /// The bytes received after the last request, removed from the decoder: what the client
    /// sent on a connection that switches protocols.
    public mutating func takeBuffered() -> [UInt8] {
        defer {
            buffer = []
            start = 0
            state = .head(scanFrom: 0)
        }
        return Array(buffer[start...])
    }

    /// True when part of a request has arrived (so a timeout now is the client's fault: 408).
    public var isMidRequest: Bool {
        if case .head = state { return start < buffer.count }
        return true
    }

    /// The head of the request whose body is still arriving (nil between requests and while a
    /// head arrives), so a server can judge a request before its body is in.
    public var pendingHead: HTTPRequestHead? {
        switch state {
        case .head: return nil
        case .fixedBody(let head, _), .chunkedBody(let head, _, _): return head
        }
    }

    /// The next complete request, or what is needed to get one. After an error the decoder must
    /// not be used again (the server closes the connection).
    public mutating func next() throws(HTTPError) -> Output {
        switch state {
        case .head(let scanFrom):
            // RFC 9112 §2.2: ignore empty lines received before the request line.
            while start < buffer.count, buffer[start] == 0x0D || buffer[start] == 0x0A { start += 1 }
            guard let end = Self.headEnd(buffer, from: max(start, scanFrom)) else {
                if buffer.count - start > limits.maxHeaderBytes {
                    throw HTTPError(.headersTooLarge, "request head exceeds \(limits.maxHeaderBytes) bytes")
                }
                state = .head(scanFrom: max(start, buffer.count - 2))
                return .needMoreData
            }
            if end - start > limits.maxHeaderBytes {
                throw HTTPError(.headersTooLarge, "request head exceeds \(limits.maxHeaderBytes) bytes")
            }
            let head = try parseHTTPRequestHead(Array(buffer[start..<end]))
            start = end
            continueAnswered = false
            try enterBody(head)
            return try next()

        case .fixedBody(let head, let length):
            if length > 0, !continueAnswered, buffer.count == start, Self.expectsContinue(head) {
                continueAnswered = true
                return .sendContinue
            }
            guard buffer.count - start >= length else { return .needMoreData }
            let body = Array(buffer[start..<(start + length)])
            start += length
            state = .head(scanFrom: start)
            return .request(HTTPRequest(head: head, body: body, remoteAddress: remoteAddress))

        case .chunkedBody(let head, var decoder, var body):
            if !continueAnswered, buffer.count == start, Self.expectsContinue(head) {
                continueAnswered = true
                return .sendContinue
            }
            state = .head(scanFrom: 0)  // drop our copy of body while decoding appends to it
            let used = try decoder.decode(buffer[start...], into: &body)
            start += used
            guard decoder.isComplete else {
                state = .chunkedBody(head, decoder, body)
                return .needMoreData
            }
            state = .head(scanFrom: start)
            return .request(HTTPRequest(head: head, body: body, remoteAddress: remoteAddress))
        }
    }

    private mutating func enterBody(_ head: HTTPRequestHead) throws(HTTPError) {
        let codings = head.headers.values("Transfer-Encoding")
            .flatMap { $0.split(separator: ",") }
            .map { $0.trimmingSpaces.lowercased() }
        let contentLength: Int?
        switch HeadParsing.contentLength(head.headers) {
        case .success(let value): contentLength = value
        case .failure(let error): throw error
        }
        if !codings.isEmpty {
            // Both framings at once is how requests get smuggled past proxies: refuse (RFC 9112 §6.1).
            if contentLength != nil {
                throw HTTPError(.badRequest, "both Transfer-Encoding and Content-Length present")
            }
            if let other = codings.first(where: { $0 != "chunked" }) {
                throw HTTPError(.notImplemented, "Transfer-Encoding \(HeadParsing.quote(Array(other.utf8))) not supported")
            }
            if codings.count > 1 {
                throw HTTPError(.badRequest, "chunked applied more than once")
            }
            let decoder = ChunkedDecoder(maxBodyBytes: limits.maxBodyBytes, maxTrailerBytes: limits.maxHeaderBytes, kinds: .request)
            state = .chunkedBody(head, decoder, [])
            return
        }
        let length = contentLength ?? 0
        if length > limits.maxBodyBytes {
            let size = length == Int.max ? "a" : "\(length)-byte"
            throw HTTPError(.bodyTooLarge, "\(size) request body exceeds the limit of \(limits.maxBodyBytes) bytes")
        }
        state = .fixedBody(head, length: length)
    }

    private static func expectsContinue(_ head: HTTPRequestHead) -> Bool {
        head.version == "HTTP/1.1" && head.headers.hasToken("Expect", "100-continue")
    }

    /// The index just past the empty line ending a head (CRLFCRLF, or LF-terminated lines).
    static func headEnd(_ bytes: [UInt8], from: Int) -> Int? {
        var index = max(from, 0)
        while index < bytes.count {
            if bytes[index] == 0x0A {
                var next = index + 1
                if next < bytes.count, bytes[next] == 0x0D { next += 1 }
                if next < bytes.count, bytes[next] == 0x0A { return next + 1 }
            }
            index += 1
        }
        return nil
    }
}

extension HTTPRequestDecoder.Output {
    /// The request, when this is one.
    public var request: HTTPRequest? {
        if case .request(let request) = self { return request }
        return nil
    }
}

extension HTTPRequest {
    /// Whether the connection stays open after this request (RFC 9112 §9.3): HTTP/1.1 unless
    /// `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`.
    public var keepAlive: Bool {
        if headers.hasToken("Connection", "close") { return false }
        if version == "HTTP/1.0" { return headers.hasToken("Connection", "keep-alive") }
        return true
    }
}
