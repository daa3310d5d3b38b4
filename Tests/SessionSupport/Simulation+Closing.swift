import PeerConnection

extension Simulation {
    /// Starts closing `pc` when its `close()` waits on the network (a TURN allocation's release
    /// answered): awaiting it at once would wait forever, since nothing moves virtual time while
    /// the test is suspended. Returns once the close's loop work has run (the connection state
    /// is `closed`), with the task that finishes when `close()` returns: run the loop until what
    /// the close should do has happened, then await the task.
    public func beginClose(_ pc: PeerConnection) async -> Task<Void, Never> {
        let closing = Task { await pc.close() }
        // The task's loop work runs at once on its own thread (the loop is idle): wait for it,
        // yielding, never sleeping.
        for _ in 0..<1_000_000 where pc.connectionState != .closed { await Task.yield() }
        return closing
    }
}
