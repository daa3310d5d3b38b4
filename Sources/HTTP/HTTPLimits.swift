// Limits the server applies to every request; exceeding one gets an error status, never a trap.

public struct HTTPLimits: Sendable, Equatable {
    /// Request line plus header lines (and chunked trailers), in bytes. Over it: 431.
    public var maxHeaderBytes: Int
    /// Decoded request body, in bytes. Over it: 413.
    public var maxBodyBytes: Int
    /// Time allowed to receive one whole request (also the idle time allowed between keep-alive
    /// requests, and the time allowed to write one response). A slow client gets 408 and is closed.
    public var readTimeout: Duration
    /// Connections served at once; one more gets 503 and is closed.
    public var maxConnections: Int
    /// Connections served at once from one IP address, so one client (slow or reconnecting
    /// in a loop) cannot take all of `maxConnections`; one more from it gets 503.
    public var maxConnectionsPerAddress: Int

    public init(maxHeaderBytes: Int = 16 * 1024, maxBodyBytes: Int = 1024 * 1024,
                readTimeout: Duration = .seconds(10), maxConnections: Int = 256, maxConnectionsPerAddress: Int = 64) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.readTimeout = readTimeout
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
    }
}
