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

    /// The largest padding packet the cluster takes: 20 ms at its rate, so its five packets last
    /// at most ~100 ms at it. A probe at twice a narrow link's rate leaves about half of what it
    /// sends queued there: five full-size copies at 120 kbit/s were ~5 KB, 300–450 ms of a
    /// 97 kbit/s link every 2 s, and a viewer of 7.5 frames a second behind it froze. From
    /// ~480 kbit/s on, full-size copies fit (their spread is what a receiver's jitter does not hide).
    public var largestPaddingPacket: Int { max(1, Int(Double(bitrate) * 0.020 / 8)) }

    /// How long the cluster should take at its rate.
    public var duration: Duration { .secondsClamped(Double(minBytes) * 8 / Double(bitrate)) }
}

/// What a probe cluster asks its sender for when it has no media to carry it (`Pacer.paddingWanted`).
public struct PaddingRequest: Sendable, Equatable {
    /// At least this many bytes in all.
    public var bytes: Int
    /// No packet larger than this (`ProbeCluster.largestPaddingPacket`).
    public var largestPacket: Int

    public init(bytes: Int, largestPacket: Int) {
        self.bytes = bytes
        self.largestPacket = largestPacket
    }
}
