/// Counters of one `SRTPSession`, RTP and RTCP together.
public struct SRTPStats: Sendable, Equatable {
    /// Packets protected successfully.
    public var protected: UInt64 = 0
    /// Packets unprotected successfully.
    public var unprotected: UInt64 = 0
    /// Incoming packets whose tag did not verify.
    public var authFailures: UInt64 = 0
    /// Incoming packets rejected by the replay window.
    public var replays: UInt64 = 0

    public init() {}
}
