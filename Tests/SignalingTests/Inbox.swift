// Test helper: an AsyncStream's elements awaited one at a time, each within a deadline.
import TestSupport

struct Timeout: Error, CustomStringConvertible {
    var description: String
}

final class Inbox<Element: Sendable>: Sendable {
    private struct State {
        var buffer: [Element] = []
        var finished = false
    }
    private let state = Monitor(State())

    static func draining(_ stream: AsyncStream<Element>) -> Inbox {
        let inbox = Inbox()
        Task {
            for await element in stream { inbox.state.withLock { $0.buffer.append(element) } }
            inbox.state.withLock { $0.finished = true }
        }
        return inbox
    }

    /// The next element; throws when none comes within `timeout` or the stream ended.
    func next(within timeout: Duration = .seconds(10)) async throws -> Element {
        guard await state.wait(until: { !$0.buffer.isEmpty || $0.finished }, timeout: timeout) else {
            throw Timeout(description: "nothing arrived within \(timeout)")
        }
        guard let element = state.withLock({ $0.buffer.isEmpty ? nil : $0.buffer.removeFirst() }) else {
            throw Timeout(description: "the stream ended")
        }
        return element
    }
}
