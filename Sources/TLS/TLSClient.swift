import COpenSSL

/// A sans-I/O TLS client (OpenSSL over two memory BIOs) for stream protocols driven from an
/// event loop, such as TURN over TLS (RFC 8656 §3.1): the driver writes what the server sent
/// into `receive` and gets plaintext back, hands plaintext to `send`, and writes what
/// `takeOutput` returns to its socket. `pollTimeout`/`handleTimeout` bound the handshake.
/// Plaintext sent before the handshake finishes waits for it. Not thread-safe: call it from one
/// serial context (OpenSSL's error queue is per thread, and is read right after each call).
public final class TLSClient {
    public enum State: Sendable, Equatable {
        case handshaking, connected
        /// The server sent close_notify (or the driver saw the stream end after the handshake).
        case closed
        case failed(TLSError)
    }

    public private(set) var state: State = .handshaking
    /// How errors name the server ("turn.example.org:5349").
    public let display: String
    public let handshakeTimeout: Duration

    private let ssl: OpaquePointer
    private let input: OpaquePointer    // BIO *, what the server sent; owned by ssl
    private let output: OpaquePointer   // BIO *, what goes to the server; owned by ssl
    private var pending: [UInt8] = []
    private var deadline: ContinuousClock.Instant?
    private var readBuffer = [UInt8](repeating: 0, count: 16_384)

    /// Starts the handshake: the ClientHello is in `takeOutput()` right away. With
    /// `trust.verify`, the chain must lead to a trusted CA and the certificate must name `host`.
    public init(host: String, display: String, trust: TLSTrust = .system, handshakeTimeout: Duration = .seconds(10),
                now: ContinuousClock.Instant) throws(TLSError) {
        let context = try TLSClientContext.shared(trust)
        let ssl = try TLSSession.make(context, host: host, verify: trust.verify, display: display)
        guard let input = BIO_new(BIO_s_mem()), let output = BIO_new(BIO_s_mem()) else {
            SSL_free(ssl)
            throw TLSError(.configuration, "cannot create TLS buffers: \(TLSSession.queuedErrorText())")
        }
        // An empty input means "wait for more", never end of stream.
        _ = swiftrtc_BIO_set_mem_eof_return(input, -1)
        SSL_set_bio(ssl, input, output)
        SSL_set_connect_state(ssl)
        self.ssl = ssl
        self.input = input
        self.output = output
        self.display = display
        self.handshakeTimeout = handshakeTimeout
        deadline = now + handshakeTimeout
        try advance()
    }

    deinit { SSL_free(ssl) }

    public var isConnected: Bool { state == .connected }

    /// Bytes read from the socket; returns the plaintext they complete (possibly none).
    public func receive(_ bytes: [UInt8]) throws(TLSError) -> [UInt8] {
        try checkUsable()
        if !bytes.isEmpty {
            let written = bytes.withUnsafeBytes { BIO_write(input, $0.baseAddress, Int32(clamping: $0.count)) }
            guard written == Int32(clamping: bytes.count) else {
                throw fail(.connection, "TLS with \(display): cannot buffer received bytes")
            }
        }
        try advance()
        guard state == .connected else { return [] }
        var plaintext: [UInt8] = []
        while true {
            ERR_clear_error()
            let count = readBuffer.withUnsafeMutableBytes { SSL_read(ssl, $0.baseAddress, Int32(clamping: $0.count)) }
            if count > 0 {
                plaintext += readBuffer[0..<Int(count)]
                continue
            }
            let error = SSL_get_error(ssl, count)
            switch error {
            case SSL_ERROR_WANT_READ, SSL_ERROR_WANT_WRITE:
                return plaintext
            case SSL_ERROR_ZERO_RETURN:
                state = .closed
                return plaintext
            default:
                throw fail(.connection, "TLS with \(display) failed: \(TLSSession.failureText(ssl, error, errno: 0))")
            }
        }
    }

    /// Encrypts `plaintext` for the server, or keeps it until the handshake is done.
    public func send(_ plaintext: [UInt8]) throws(TLSError) {
        try checkUsable()
        guard state == .connected else {
            pending += plaintext
            return
        }
        try write(plaintext)
    }

    /// What to write to the socket now (handshake messages, records, close_notify); empty if nothing.
    public func takeOutput() -> [UInt8] {
        let count = Int(BIO_ctrl_pending(output))
        guard count > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: count)
        let read = bytes.withUnsafeMutableBytes { BIO_read(output, $0.baseAddress, Int32(clamping: count)) }
        return read > 0 ? Array(bytes[0..<Int(read)]) : []
    }

    /// The handshake's deadline while it runs.
    public func pollTimeout() -> ContinuousClock.Instant? {
        state == .handshaking ? deadline : nil
    }

    public func handleTimeout(now: ContinuousClock.Instant) throws(TLSError) {
        guard state == .handshaking, let deadline, now >= deadline else { return }
        throw fail(.timeout, "TLS handshake with \(display) did not finish within \(handshakeTimeout)")
    }

    /// The socket reached its end: an error while handshaking, the end otherwise.
    public func streamEnded() throws(TLSError) {
        switch state {
        case .handshaking:
            throw fail(.handshake, "TLS handshake with \(display) failed: connection closed by the server")
        case .connected:
            state = .closed
        case .closed, .failed:
            break
        }
    }

    /// Queues close_notify (in `takeOutput()`); nothing more is sent after it.
    public func close() {
        if state == .connected {
            ERR_clear_error()
            _ = SSL_shutdown(ssl)
        }
        if case .failed = state { return }
        state = .closed
    }

    // MARK: -

    private func checkUsable() throws(TLSError) {
        switch state {
        case .handshaking, .connected: return
        case .closed: throw TLSError(.connection, "TLS with \(display) is closed")
        case .failed(let error): throw error
        }
    }

    /// Runs the handshake as far as the bytes so far allow; then sends what waited for it.
    private func advance() throws(TLSError) {
        guard state == .handshaking else { return }
        ERR_clear_error()
        let rc = SSL_do_handshake(ssl)
        if rc == 1 {
            state = .connected
            deadline = nil
            let waiting = pending
            pending = []
            try write(waiting)
            return
        }
        let error = SSL_get_error(ssl, rc)
        if error == SSL_ERROR_WANT_READ || error == SSL_ERROR_WANT_WRITE { return }
        throw fail(.handshake, "TLS handshake with \(display) failed: \(TLSSession.failureText(ssl, error, errno: 0))")
    }

    private func write(_ plaintext: [UInt8]) throws(TLSError) {
        var offset = 0
        while offset < plaintext.count {
            ERR_clear_error()
            let count = plaintext.withUnsafeBytes { raw in
                SSL_write(ssl, raw.baseAddress.map { $0 + offset }, Int32(clamping: raw.count - offset))
            }
            guard count > 0 else {
                let error = SSL_get_error(ssl, count)
                throw fail(.connection, "TLS with \(display) failed: \(TLSSession.failureText(ssl, error, errno: 0))")
            }
            offset += Int(count)
        }
    }

    private func fail(_ kind: TLSError.Kind, _ message: String) -> TLSError {
        let error = TLSError(kind, message)
        state = .failed(error)
        deadline = nil
        return error
    }
}
