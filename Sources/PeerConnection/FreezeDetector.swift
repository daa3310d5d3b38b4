/// W3C webrtc-stats freezes: a frame whose delay after the previous one exceeds
/// max(3 × the average frame duration, the average + 150 ms) ends a freeze lasting that delay.
/// The average is over the last 30 delays (libwebrtc's window), freezes excluded.
struct FreezeDetector: Sendable {
    private(set) var freezeCount = 0
    private(set) var totalFreezesDuration: Duration = .zero
    private(set) var totalInterFrameDelay: Duration = .zero
    private var last: ContinuousClock.Instant?
    private var recent: [Duration] = []
    private var recentSum: Duration = .zero

    mutating func frameRendered(at now: ContinuousClock.Instant) {
        defer { last = now }
        guard let last else { return }
        let delay = now - last
        totalInterFrameDelay += delay
        if recent.count >= 5 {
            let average = recentSum / recent.count
            if delay > max(average * 3, average + .milliseconds(150)) {
                freezeCount += 1
                totalFreezesDuration += delay
                return
            }
        }
        recent.append(delay)
        recentSum += delay
        if recent.count > 30 { recentSum -= recent.removeFirst() }
    }
}
