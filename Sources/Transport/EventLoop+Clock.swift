extension EventLoop {
    /// The loop's clock (the wall clock until loops take one).
    public var now: ContinuousClock.Instant { ContinuousClock.now }

    /// Debug builds: traps unless called on the loop's thread.
    @inline(__always)
    public func preconditionInLoop(file: StaticString = #fileID, line: UInt = #line) {
        assert(inLoop, "not on \(name)'s thread", file: file, line: line)
    }
}
