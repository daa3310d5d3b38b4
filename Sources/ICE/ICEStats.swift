import STUN

public enum ICEPairState: String, Sendable {
    case frozen, waiting, inProgress = "in-progress", succeeded, failed
}

/// One candidate pair, shaped like W3C `RTCIceCandidatePairStats`.
public struct ICEPairStats: Sendable {
    public var local: SocketAddress
    public var remote: SocketAddress
    public var state: ICEPairState
    public var nominated: Bool
    public var selected: Bool
    public var priority: UInt64
    /// Round-trip time of the latest answered check or consent request.
    public var currentRTT: Duration?
    public var requestsSent: Int
    public var responsesReceived: Int
    public var requestsReceived: Int
    public var responsesSent: Int
}

public struct ICEStats: Sendable {
    public var requestsSent = 0
    public var retransmissions = 0
    public var responsesReceived = 0
    public var requestsReceived = 0
    public var responsesSent = 0
    public var errorResponsesSent = 0
    public var roleConflicts = 0
    /// Requests or responses whose MESSAGE-INTEGRITY did not verify.
    public var droppedBadIntegrity = 0
    /// Messages with a FINGERPRINT that did not verify.
    public var droppedBadFingerprint = 0
    /// Bytes that were not STUN, or a STUN message that failed to parse.
    public var droppedGarbage = 0
    /// Requests with a missing or wrong USERNAME (answered with 400/401).
    public var droppedUnauthorized = 0
    /// Responses matching no outstanding transaction (late duplicates included).
    public var droppedUnmatched = 0
    /// Messages that arrived on an address that was never added with `addLocalBase`.
    public var droppedUnknownLocal = 0
    /// Remote candidates ignored (mDNS names, non-UDP, other components).
    public var ignoredRemoteCandidates = 0
    /// Lite: the selected pair moved to a new remote address of the peer (NAT rebinding).
    public var rebinds = 0
    /// Signalled remote candidates refused because `maxRemoteCandidates` were known.
    public var refusedRemoteCandidates = 0
    public var selectedPairRTT: Duration?
    public var pairs: [ICEPairStats] = []
}
