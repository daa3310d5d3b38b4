// Limits the server applies to every request and connection; exceeding one gets an error status,
// never a trap.

public struct HTTPLimits: Sendable, Equatable {
    /// Request line plus header lines (and chunked trailers), in bytes. Over it: 431.
    public var maxHeaderBytes: Int
    /// Decoded request body, in bytes. Over it: 413.
    public var maxBodyBytes: Int
    /// A request head must be complete this long after its first byte (after the connection was
    /// accepted, for its first request). Over it: 408, and the connection is closed.
    public var headerTimeout: Duration
    /// The body must be complete this long after the head. Over it: 408.
    public var bodyTimeout: Duration
    /// A keep-alive connection with no request started for this long is closed.
    public var idleTimeout: Duration
    /// Time allowed to write one response.
    public var writeTimeout: Duration
    /// Plain HTTP connections served at once. When full, the connection that has waited longest
    /// on its client (idle, or slow to send its request) without presenting credentials is
    /// closed to make room; with none such, one more gets 503.
    public var maxConnections: Int
    /// Plain connections from one IP address, so one client cannot take all of `maxConnections`;
    /// past it, that address's own longest-waiting connection makes room, or it gets 503.
    public var maxConnectionsPerAddress: Int
    /// Connections beyond `maxConnections` kept for requests whose credentials the server's
    /// `credentialCheck` accepts (others on them get 503); unused without a check.
    public var reservedConnections: Int
    /// Upgraded connections (WebSocket) held at once: a budget of their own, so long-lived
    /// peers cannot starve plain requests. One more upgrade gets 503.
    public var maxUpgradedConnections: Int
    /// Upgraded connections from one IP address.
    public var maxUpgradedPerAddress: Int

    public init(maxHeaderBytes: Int = 16 * 1024, maxBodyBytes: Int = 1024 * 1024,
                headerTimeout: Duration = .seconds(10), bodyTimeout: Duration = .seconds(10),
                idleTimeout: Duration = .seconds(10), writeTimeout: Duration = .seconds(10),
                maxConnections: Int = 256, maxConnectionsPerAddress: Int = 64, reservedConnections: Int = 32,
                maxUpgradedConnections: Int = 256, maxUpgradedPerAddress: Int = 32) {
        self.maxHeaderBytes = maxHeaderBytes
        self.maxBodyBytes = maxBodyBytes
        self.headerTimeout = headerTimeout
        self.bodyTimeout = bodyTimeout
        self.idleTimeout = idleTimeout
        self.writeTimeout = writeTimeout
        self.maxConnections = maxConnections
        self.maxConnectionsPerAddress = maxConnectionsPerAddress
        self.reservedConnections = reservedConnections
        self.maxUpgradedConnections = maxUpgradedConnections
        self.maxUpgradedPerAddress = maxUpgradedPerAddress
    }
}
