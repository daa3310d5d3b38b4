extension Simulation {
    /// Moves virtual time `step` by `step` until `condition` holds, at most `budget`: for state
    /// only an async call reads (statistics), where `run(within:until:)` takes a synchronous
    /// condition. Each step is a fixed span of virtual time, so the run is as deterministic as
    /// `advance(by:)`. Returns whether the condition holds.
    public func run(within budget: Duration = .seconds(10), every step: Duration = .milliseconds(10),
                    untilAsync condition: () async -> Bool) async -> Bool {
        var spent = Duration.zero
        while !(await condition()) {
            guard spent < budget else { return false }
            advance(by: step)
            spent += step
        }
        return true
    }
}
