/// `body`'s result, or nil when `timeout` passes first: a timer ends the wait and `body` is
/// cancelled (it must end on cancellation, as iterating an AsyncStream or a `Monitor` wait does).
public func withDeadline<T: Sendable>(_ timeout: Duration, _ body: @escaping @Sendable () async -> T?) async -> T? {
    await withTaskGroup(of: T?.self) { group in
        group.addTask { await body() }
        group.addTask {
            _ = await Monitor(false).wait(until: { $0 }, timeout: timeout)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        return first
    }
}

/// Suspends until the task is cancelled (a handler that never answers, for tests of
/// cancellation); a day at most.
public func untilCancelled() async {
    _ = await Monitor(false).wait(until: { $0 }, timeout: .seconds(86_400))
}
