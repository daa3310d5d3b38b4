/// Drops frames before they are encoded when sending them would only build latency: a leaky
/// bucket of the bits the encoder produced beyond the target (libwebrtc's FrameDropper does the
/// same), and the pacer's queue. The encoders' own skipping is off (OpenH264's stalls), so this
/// is what keeps an overshooting encoder — a large keyframe at a low target — from filling the
/// pacer and the bottleneck queue.
struct FrameDropper: Sendable {
    /// Excess the bucket may hold before frames are dropped, as seconds of the target rate.
    var window = 0.4
    /// Video older than this in the pacer's queue means the link cannot carry what is encoded.
    var maxQueueDelay: Duration = .milliseconds(300)
    private var bucketBits = 0.0
    private var last: ContinuousClock.Instant?
    private(set) var dropped = 0

    /// Whether to skip this frame. `bucket`: whether the preference lets the frame rate give way
    /// (not maintain-framerate); a queue that old drops frames in any case (latency first).
    mutating func shouldDrop(now: ContinuousClock.Instant, targetBitrate: Int, queueDelay: Duration,
                             bucket: Bool, keyframeWanted: Bool) -> Bool {
        leak(now: now, targetBitrate: targetBitrate)
        guard !keyframeWanted, targetBitrate > 0 else { return false }
        let drop = queueDelay > maxQueueDelay || (bucket && bucketBits > Double(targetBitrate) * window)
        if drop { dropped += 1 }
        return drop
    }

    /// The encoder produced `bytes` for the frame just let through.
    mutating func encoded(bytes: Int) {
        bucketBits += Double(bytes * 8)
    }

    private mutating func leak(now: ContinuousClock.Instant, targetBitrate: Int) {
        defer { last = now }
        guard let last else { return }
        bucketBits = max(0, bucketBits - Double(targetBitrate) * max(0, (now - last).seconds))
    }
}
