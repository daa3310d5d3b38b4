extension BandwidthEstimator {
    /// Bitrates in bits per second.
    public struct Configuration: Sendable, Equatable, Hashable {
        public var startBitrate: Int
        public var minBitrate: Int
        public var maxBitrate: Int
        /// Probe at 3× and 6× the start bitrate first, then exponentially while results grow.
        public var probing: Bool
        /// Probe at 2× the estimate this often while it is below the maximum; nil = never.
        public var periodicProbeInterval: Duration?

        public init(startBitrate: Int = 300_000, minBitrate: Int = 30_000, maxBitrate: Int = 2_500_000,
                    probing: Bool = true, periodicProbeInterval: Duration? = .seconds(5)) {
            self.startBitrate = startBitrate
            self.minBitrate = minBitrate
            self.maxBitrate = maxBitrate
            self.probing = probing
            self.periodicProbeInterval = periodicProbeInterval
        }
    }

    /// A snapshot for getStats-style reporting and tests.
    public struct Stats: Sendable, Equatable {
        public var targetBitrate: Int
        public var availableOutgoingBitrate: Int
        /// The delay-based (AIMD) estimate; nil until transport-cc feedback has arrived.
        public var delayBasedBitrate: Int?
        /// Throughput the remote end acknowledged (transport-cc receive times).
        public var acknowledgedBitrate: Int?
        public var rembBitrate: Int?
        public var delayState: DelayState
        /// Fraction 0…1 from the last loss report (transport-cc or RTCP RR).
        public var lossRate: Double
        /// Explicit RTT if one was given, else the smoothed feedback round trip.
        public var rtt: Duration?
        /// The overuse detector's adaptive threshold and the trend it compares (ms).
        public var delayThreshold: Double
        public var delayTrend: Double
        public var feedbackCount: Int
        public var packetsReported: Int
        public var packetsLost: Int
        public var probeClustersRequested: Int
        /// The last probe cluster result that raised the estimate (bps).
        public var lastProbeResult: Int?
    }
}
