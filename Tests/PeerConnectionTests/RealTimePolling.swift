/// Polls (bounded, on the wall clock) until `condition` holds: for the tests that still run on
/// real sockets and have no event to wait for (RenegotiationTests and MLineRecyclingTests, until
/// they move to the `Simulation`). Tests on a simulated loop use `Simulation.run(within:until:)`.
/// Moved here from TrickleTests, which runs on virtual time now; delete once nothing calls it.
func eventually(timeout: Duration = .seconds(5), _ condition: () async -> Bool) async -> Bool {
    let end = ContinuousClock.now.advanced(by: timeout)
    while ContinuousClock.now < end {
        if await condition() { return true }
        try? await Task.sleep(for: .milliseconds(10))
    }
    return await condition()
}
