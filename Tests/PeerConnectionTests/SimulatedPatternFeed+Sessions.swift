import SessionSupport
import Streaming

extension PatternFeed {
    /// Steps as `run(within:until:)` does, never moving time while `activity` has signaling in
    /// flight (sessions reconnecting on the simulation).
    func run(_ activity: SignalingActivity, within budget: Duration, until condition: () -> Bool) async -> Bool {
        var spent = Duration.zero
        while true {
            await sim.settle(activity)
            if condition() { return true }
            guard spent < budget else { return false }
            deliver()
            await sim.advance(activity, by: interval)
            spent += interval
        }
    }

    /// Frames for exactly `duration`.
    func run(_ activity: SignalingActivity, for duration: Duration) async {
        _ = await run(activity, within: duration) { false }
    }
}
