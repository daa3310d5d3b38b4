/// A request to send a short burst at `bitrate` so its receive rate shows whether the path
/// can carry that much (libwebrtc's probe clusters). The pacer sends queued packets, then
/// padding, at this rate until both minimums are met, tagging each with `id`; the packets'
/// `onPacketSent(…, probeClusterID:)` and their feedback close the loop.
public struct ProbeCluster: Sendable, Equatable, Hashable {
    public var id: Int
    /// Bits per second.
    public var bitrate: Int
    public var minPackets: Int
    public var minBytes: Int

    /// 15 ms worth of bytes and at least 5 packets, as libwebrtc sends.
    public init(id: Int, bitrate: Int, minPackets: Int = 5, minBytes: Int? = nil) {
        self.id = id
        self.bitrate = max(1, bitrate)
        self.minPackets = max(1, minPackets)
        self.minBytes = max(1, minBytes ?? Int(Double(self.bitrate) * 0.015 / 8))
    }

    /// How long the cluster should take at its rate.
    public var duration: Duration { .secondsClamped(Double(minBytes) * 8 / Double(bitrate)) }
}
