/// Where the audio jitter buffer's delay cuts land: it asks for one frame fewer
/// (`AudioJitterBuffer.Slot.removeOneFrame`) and the decoder drops the next *quiet* decoded frame,
/// the way NetEQ accelerates only where it cannot be heard. A frame is quiet below −40 dBFS or
/// 26 dB under the recent level (background noise in a pause). With no pause for `giveUpFrames`
/// the cut is abandoned: a little more delay is better than a hole in a word.
public struct QuietFrameRemoval: Sendable {
    public var giveUpFrames = 250
    public private(set) var pending = 0
    public private(set) var framesRemoved = 0
    private var waited = 0
    /// Mean square (full scale 1) of recent frames, slowly smoothed.
    private var recentPower: Double?

    public init() {}

    /// One decoded frame: its slot's request and its mean square power (full scale 1).
    /// True = drop this frame instead of playing it.
    public mutating func shouldRemove(requested: Bool, power: Double) -> Bool {
        if requested { pending += 1 }
        let reference = recentPower ?? power
        recentPower = reference * 0.95 + power * 0.05
        guard pending > 0 else { return false }
        let quiet = power < 1e-4 || power < reference * 0.0025
        if quiet {
            pending -= 1
            framesRemoved += 1
            waited = 0
            return true
        }
        waited += 1
        if waited >= giveUpFrames {
            pending = 0
            waited = 0
        }
        return false
    }
}
