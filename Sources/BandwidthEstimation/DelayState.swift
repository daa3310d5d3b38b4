/// What the delay-based detector concludes about the bottleneck queue
/// (draft-ietf-rmcat-gcc-02 §5.4 "over-use detector" hypotheses).
public enum DelayState: String, Sendable, Equatable, Hashable {
    /// The queue is stable: the rate may grow.
    case normal
    /// The queue is growing: the rate must drop.
    case overusing
    /// The queue is draining: hold the rate until it is empty.
    case underusing
}
