/// A packet waiting in the `Pacer`, opaque to it apart from its size and kind.
public struct PacedPacket: Sendable, Equatable {
    /// Priority order, highest first: voice is small and latency-critical, retransmissions
    /// repair frames the receiver is already waiting for, padding only fills probes.
    public enum Kind: Int, Sendable, Equatable, Hashable, Comparable, CaseIterable {
        case audio = 0, retransmission, video, padding

        public static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
    }

    public var bytes: [UInt8]
    public var kind: Kind
    /// The caller's own reference (stream, sequence number, …), returned untouched.
    public var tag: Int
    /// Set by the pacer when the packet leaves as part of a probe cluster: pass it to
    /// `BandwidthEstimator.onPacketSent(…, probeClusterID:)`.
    public internal(set) var probeClusterID: Int?

    public init(bytes: [UInt8], kind: Kind, tag: Int = 0) {
        self.bytes = bytes
        self.kind = kind
        self.tag = tag
        probeClusterID = nil
    }

    public var size: Int { bytes.count }
}
