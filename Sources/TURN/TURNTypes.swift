import STUN

/// How the client reaches the TURN server. Over TCP and TLS-over-TCP (RFC 8656 §3.1) the
/// framing is the same: no retransmissions, and ChannelData padded to 4 bytes (§12.5).
public enum TURNTransport: String, Sendable, Hashable {
    case udp, tcp, tls
    /// A byte stream (TCP, TLS): reliable, framed by `TURNStreamFramer`.
    public var isStream: Bool { self != .udp }
}

public struct TURNConfiguration: Sendable {
    public var server: SocketAddress
    public var username: String
    public var password: String
    public var transport: TURNTransport
    /// Asked for in Allocate and Refresh; the server may grant less.
    public var lifetime: UInt32 = 600
    /// RFC 8489 §6.2.1 retransmission: RTO, Rc sends, the last one waited Rm × RTO.
    public var rto: Duration = .milliseconds(500)
    public var maxTries = 7
    public var lastWaitMultiplier = 16
    /// Over TCP a request has one try and waits this long (RFC 8489 Ti).
    public var reliableTimeout: Duration = .milliseconds(39_500)
    /// Permissions last 300 s and channels 600 s (RFC 8656 §9, §12); refresh well before.
    public var permissionRefresh: Duration = .seconds(240)
    public var channelRefresh: Duration = .seconds(480)
    /// Packets held per peer while its permission is being installed.
    public var maxQueuedPerPeer = 16

    public init(server: SocketAddress, username: String, password: String, transport: TURNTransport = .udp) {
        self.server = server
        self.username = username
        self.password = password
        self.transport = transport
    }
}

public enum TURNState: String, Sendable {
    case new, allocating, allocated, releasing, closed, failed
}

public enum TURNEvent: Sendable, Equatable {
    /// The relayed transport address is ours; `mapped` is how the server saw us (the candidate's raddr).
    case allocated(relayed: SocketAddress, mapped: SocketAddress?, lifetime: UInt32)
    /// A datagram from `peer`, through a Data indication or ChannelData.
    case data(peer: SocketAddress, bytes: [UInt8])
    /// The allocation could not be made or was lost.
    case failed(TURNError)
    /// A permission or channel for one peer failed; the allocation goes on.
    case peerFailed(peer: SocketAddress, TURNError)
    /// Refresh with lifetime 0 was answered: the server freed the allocation.
    case released
}

/// Why TURN did not work, with the server's code and reason when it gave one.
public struct TURNError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: Sendable, Equatable {
        /// 401 after we sent credentials: wrong username or password.
        case unauthorized
        /// Any other error response (the code is in `code`).
        case rejected
        /// No answer after every retransmission.
        case timeout
        /// A success response without what it must carry.
        case malformedResponse
        /// The TCP connection to the server closed or broke.
        case connectionLost
        /// The TLS connection to the server failed: handshake, certificate, or a bad record.
        case tlsFailed
    }
    public var kind: Kind
    public var code: Int?
    public var description: String

    public init(_ kind: Kind, code: Int? = nil, _ description: String) {
        self.kind = kind
        self.code = code
        self.description = description
    }
}

/// Counters for what the client dropped, so garbage shows in stats instead of vanishing.
public struct TURNStats: Sendable, Equatable {
    public var garbage = 0
    public var unknownTransaction = 0
    public var badIntegrity = 0
    public var unknownChannel = 0
    public var dataWithoutPeer = 0
    public var retransmissions = 0
    public var channelDataSent = 0
    public var indicationsSent = 0
    public var channelDataReceived = 0
    public var indicationsReceived = 0
    public var droppedUnallocated = 0
    public var droppedQueueFull = 0
}
