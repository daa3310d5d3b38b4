// Test helper: an AsyncStream's elements awaited one at a time with a timeout (no sleeps).
import Testing

struct Timeout: Error, CustomStringConvertible {
    var description: String
}

actor Inbox<Element: Sendable> {
    private var buffer: [Element] = []
    private var waiter: CheckedContinuation<Element?, Never>?
    private var finished = false

    static func draining(_ stream: AsyncStream<Element>) -> Inbox {
        let inbox = Inbox()
        Task {
            for await element in stream { await inbox.put(element) }
            await inbox.finish()
        }
        return inbox
    }

    private func put(_ element: Element) {
        if let waiter {
            self.waiter = nil
            waiter.resume(returning: element)
        } else {
            buffer.append(element)
        }
    }

    private func finish() {
        finished = true
        waiter?.resume(returning: nil)
        waiter = nil
    }

    private func take() async -> Element? {
        if !buffer.isEmpty { return buffer.removeFirst() }
        if finished { return nil }
        return await withCheckedContinuation { waiter = $0 }
    }

    /// The next element; throws when none comes within `timeout` or the stream ended.
    nonisolated func next(within timeout: Duration = .seconds(10)) async throws -> Element {
        let result = try await withThrowingTaskGroup(of: Element?.self) { group in
            group.addTask { await self.take() }
            group.addTask {
                try await Task.sleep(for: timeout)
                throw Timeout(description: "nothing arrived within \(timeout)")
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        guard let result else { throw Timeout(description: "the stream ended") }
        return result
    }
}
